package capacity_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/ir"
)

// research is the research example at a traffic of its own: its classes are fed both by
// workflow steps (task tokens) and by EventBridge rules on agent.step.requested.
func research(t *testing.T, conversationsPerMinute string) *ir.Fleet {
	t.Helper()
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "conversations_per_minute: 500", "conversations_per_minute: "+conversationsPerMinute, 1)
	return lowerSrc(t, s)
}

// TestRuleFedStepsMakeNoCallbacks: only task-token steps call SendTask*. At 1,750
// conversations × 15 steps (437.5 steps/s) the research fleet's weights are researcher 3
// (Research, one SubQueries item, its rule) and coder 2 (Code, its rule); 3 of the 5 carry a
// task token, so 262.5 answers/s, not 437.5.
func TestRuleFedStepsMakeNoCallbacks(t *testing.T) {
	f := research(t, "1750")
	m := capacity.Of(f)
	answers, beats := m.CallbacksPerSec()
	if math.Abs(answers-437.5*3/5) > 1e-9 {
		t.Errorf("answers %v/s, want 262.5 (rule-fed steps make no SendTaskSuccess)", answers)
	}
	var want float64
	for _, a := range f.Agents {
		want += m.ClassStepsPerSec(a) * m.TokenShare(a) * m.HeartbeatsPerStep(a)
	}
	if math.Abs(beats-want) > 1e-9 || beats == 0 {
		t.Errorf("heartbeats %v/s, want %v (task-token steps only)", beats, want)
	}
	refill, _ := capacity.CallbackRefill(f.Region)
	if answers+beats > refill {
		t.Errorf("%v SendTask* calls/s over the %v refill at 1,750 conversations/min", answers+beats, refill)
	}
}

// TestReplicasAtExactlyMax: a class whose in-flight steps fill exactly scaling.max replicas
// is covered. 6 conversations × 11 steps a minute at 90 s is 99 in flight (float64 computes
// 99.00000000000001), 11 replicas of 9: max 11 covers it, max 10 does not.
func TestReplicasAtExactlyMax(t *testing.T) {
	src := strings.Replace(seedFleet, "scaling: { min: 1, max: 4000, per_replica: 4 }", "scaling: { min: 1, max: 11, per_replica: 9 }", 1)
	src = strings.Replace(src, "conversations_per_minute: 500\n  steps_per_conversation: 15", "conversations_per_minute: 6\n  steps_per_conversation: 11", 1)
	f := lowerSrc(t, src)
	k := capacity.Build(f, capacity.FromFleet(f)).Classes[0].KEDA
	if k == nil || k.ReplicasNeeded != 11 || !k.Covered {
		t.Errorf("KEDA %+v, want 11 replicas needed, covered by max 11", k)
	}
	f.Agents[0].Scaling.Max = 10
	if k := capacity.Build(f, capacity.FromFleet(f)).Classes[0].KEDA; k == nil || k.Covered {
		t.Errorf("KEDA %+v, want max 10 not covering 11 replicas", k)
	}
}

// tokenPolicy is the research example with researcher's tokens per step declared: 75
// steps/s × 400 tokens × 60 = 1,800,000 tokens/min against claude-haiku-then-sonnet's
// tokens_per_minute.
func tokenPolicy(t *testing.T, limitLine string) *ir.Fleet {
	t.Helper()
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "    handler: { exec: [\"/app/researcher\"] }\n", "    handler: { exec: [\"/app/researcher\"] }\n    traffic: { tokens_per_step: 400 }\n", 1)
	s = strings.Replace(s, "    tokens_per_minute: 4000000\n", limitLine, 1)
	return lowerSrc(t, s)
}

func tokenQuota(t *testing.T, d *capacity.Delta) capacity.QuotaDelta {
	t.Helper()
	for _, q := range d.Quotas {
		if q.Name == "model tokens per minute" && q.Scope == "claude-haiku-then-sonnet" {
			return q
		}
	}
	t.Fatalf("the token quota is not in the delta: %q", d.Lines())
	return capacity.QuotaDelta{}
}

// TestDeltaLimitMoves: a quota whose limit changes while its usage stays is in the delta,
// its line names both limits; a limit removed is "no limit set", never "not drawn on", with
// the usage that is still drawn.
func TestDeltaLimitMoves(t *testing.T) {
	build := func(f *ir.Fleet) *capacity.Report { return capacity.Build(f, capacity.FromFleet(f)) }
	base := build(tokenPolicy(t, "    tokens_per_minute: 4000000\n"))
	lowered := capacity.Compare(base, build(tokenPolicy(t, "    tokens_per_minute: 2000000\n")))
	q := tokenQuota(t, lowered)
	if q.Before == nil || q.After == nil || q.Before.Limit != 4e6 || q.After.Limit != 2e6 || q.Before.Usage != q.After.Usage {
		t.Fatalf("limit change: %+v %+v", q.Before, q.After)
	}
	want := "model tokens per minute (claude-haiku-then-sonnet): 45.0 % → 90.0 % of quota (1,800,000 → 1,800,000 tokens/min; limit 4,000,000 → 2,000,000)"
	if got := lowered.Lines(); !contains(got, want) {
		t.Errorf("lines %q\nwant %q", got, want)
	}
	removed := capacity.Compare(base, build(tokenPolicy(t, "")))
	q = tokenQuota(t, removed)
	if q.After == nil || !q.After.NoLimit || q.After.Usage != 1.8e6 {
		t.Errorf("limit removed: after %+v, want the usage with no limit", q.After)
	}
	want = "model tokens per minute (claude-haiku-then-sonnet): 45.0 % of quota → no limit set (1,800,000 → 1,800,000 tokens/min)"
	if got := removed.Lines(); !contains(got, want) {
		t.Errorf("lines %q\nwant %q", got, want)
	}
	added := capacity.Compare(build(tokenPolicy(t, "")), base)
	if q := tokenQuota(t, added); q.Before == nil || !q.Before.NoLimit || q.After == nil || q.After.NoLimit {
		t.Errorf("limit added: %+v → %+v", q.Before, q.After)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestTokenRuleAgreesWithReport: S011 fires exactly when the report breaks the policy's
// token quota, across traffic multiples (the examples declare no tokens_per_step, so the
// shared sweep cannot reach it).
func TestTokenRuleAgreesWithReport(t *testing.T) {
	f := tokenPolicy(t, "    tokens_per_minute: 4000000\n")
	base := capacity.FromFleet(f)
	broke := false
	for _, scale := range []float64{0.5, 1, 2, 2.2, 2.3, 4, 16} {
		tr := base.Scaled(scale)
		f.Traffic.ConversationsPerMinute = tr.ConversationsPerMinute
		f.Traffic.ConcurrentConversations = tr.ConcurrentConversations
		want := 0
		for _, q := range capacity.Build(f, tr).Quotas {
			if q.Rule == "S011" && q.Breaks() {
				want++
			}
		}
		got := 0
		for _, d := range check.Run(f) {
			if d.Code == "S011" {
				got++
			}
		}
		if got != want {
			t.Errorf("×%v: S011 fired %d times, the report breaks %d token quotas", scale, got, want)
		}
		broke = broke || want > 0
	}
	if !broke {
		t.Error("the sweep never breaks the token budget")
	}
}

func costLine(c *capacity.Cost, prefix string) *capacity.CostLine {
	for i, l := range c.Lines {
		if strings.HasPrefix(l.Service, prefix) {
			return &c.Lines[i]
		}
	}
	return nil
}

// TestModelTokenCost: a policy's tokens are a cost line, input and output each at the price
// of the policy's first target (from the one table, or models.<policy>.price), and part of
// the monthly total. Researcher: 75 steps/s × 2,592,000 s a month = 194,400,000 steps of 300
// input + 100 output tokens.
func TestModelTokenCost(t *testing.T) {
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	handler := "    handler: { exec: [\"/app/researcher\"] }\n"
	s := strings.Replace(string(src), handler, handler+"    traffic: { tokens_per_step: 400, output_tokens_per_step: 100 }\n", 1)
	const steps = 75 * 86400 * 30
	haiku := capacity.Prices().Models.Prices["claude-haiku-4-5"]
	if haiku.InputPerMTok <= 0 || haiku.OutputPerMTok <= haiku.InputPerMTok {
		t.Fatalf("table price of claude-haiku-4-5: %+v", haiku)
	}
	for _, c := range []struct {
		name, spec, source string
		in, out            float64
	}{
		{"table", s, "claude-haiku-4-5 list price", haiku.InputPerMTok, haiku.OutputPerMTok},
		{"override", strings.Replace(s, "    tokens_per_minute: 4000000\n", "    tokens_per_minute: 4000000\n    price: { input_per_mtok: 2, output_per_mtok: 10 }\n", 1),
			"models.claude-haiku-then-sonnet.price", 2, 10},
	} {
		f := lowerSrc(t, c.spec)
		r := capacity.Build(f, capacity.FromFleet(f))
		l := costLine(r.Cost, "model tokens: claude-haiku-then-sonnet")
		want := steps * (300*c.in + 100*c.out) / 1e6
		if l == nil || l.Service != "model tokens: claude-haiku-then-sonnet ("+c.source+")" || l.Units != steps*400 || math.Abs(l.MonthlyUSD-want) > 1e-6*want {
			t.Errorf("%s: line %+v, want %v tokens for $%v from %s", c.name, l, float64(steps*400), want, c.source)
			continue
		}
		var sum float64
		for _, x := range r.Cost.Lines {
			sum += x.MonthlyUSD
		}
		if math.Abs(r.Cost.MonthlyUSD-sum) > 1e-6*sum || r.Cost.ModelPricesAsOf != capacity.Prices().Models.AsOf {
			t.Errorf("%s: total $%v, lines $%v, model prices as of %q", c.name, r.Cost.MonthlyUSD, sum, r.Cost.ModelPricesAsOf)
		}
	}
}

// TestModelPriceLookup: a target takes the longest model name of the table its id contains
// (Sonnet 4.5 is not priced as Sonnet 4); a target the table lacks is named as not included.
func TestModelPriceLookup(t *testing.T) {
	table := capacity.Prices().Models.Prices
	p, src, ok := capacity.PriceOf(&ir.Model{Name: "s", Targets: []string{"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"}})
	if !ok || src != "claude-sonnet-4-5 list price" || p != table["claude-sonnet-4-5"] {
		t.Errorf("sonnet 4.5: %+v %q %v", p, src, ok)
	}
	if _, _, ok := capacity.PriceOf(&ir.Model{Name: "x", Targets: []string{"openai/house-model"}}); ok {
		t.Error("an unknown model has a price")
	}
	f := tokenPolicy(t, "    tokens_per_minute: 4000000\n")
	f.Models[0].Targets = []string{"openai/house-model"}
	c := capacity.Build(f, capacity.FromFleet(f)).Cost
	if costLine(c, "model tokens") != nil || !strings.Contains(strings.Join(c.NotIncluded, "; "), "no price for openai/house-model: set models.") {
		t.Errorf("unpriced policy: lines %+v, not included %q", c.Lines, c.NotIncluded)
	}
}

// TestOutputTokensWithinTotal: output_tokens_per_step is part of tokens_per_step; more is
// refused where it is written.
func TestOutputTokensWithinTotal(t *testing.T) {
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	handler := "    handler: { exec: [\"/app/researcher\"] }\n"
	bad := strings.Replace(string(src), handler, handler+"    traffic: { tokens_per_step: 400, output_tokens_per_step: 401 }\n", 1)
	_, _, ds := compiler.LoadBytes("fleet.yaml", []byte(bad))
	if !strings.Contains(ds.Error(), "P008") || !strings.Contains(ds.Error(), "output_tokens_per_step 401 is above tokens_per_step 400") {
		t.Errorf("output above the total: %v", ds)
	}
}
