package capacity_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// seedFleet is the seed's worked example (event-driven-agent-fleets.txt, "Production
// realities"): 500 new conversations a minute, 15 steps each, 90-second steps, every step an
// agent step of a Standard workflow answered with SendTaskSuccess, in us-east-1.
const seedFleet = `version: 1
fleet: seed
region: us-east-1
bus: { name: seed }
worker:
  image: ghcr.io/fleetc/fleet-worker:0.1.0
  eks: { cluster: agents, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" }
events:
  agent.step.completed:
    version: 1
    source: seed.workers
    detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } }
agents:
  researcher:
    runtime: eks
    emits: [agent.step.completed]
    step: { p95: 90s, max: 10m }
    handler: { http: "http://127.0.0.1:8080/step" }
    scaling: { min: 1, max: 4000, per_replica: 4 }
workflows:
  conversation:
    steps:
      - { agent: researcher, timeout: 1h, heartbeat: 15m }
traffic:
  conversations_per_minute: 500
  steps_per_conversation: 15
  step_duration: 90s
`

func lowerSrc(t *testing.T, src string) *ir.Fleet {
	t.Helper()
	_, f, ds := compiler.LoadBytesEnv("fleet.yaml", []byte(src), irtest.FirstEnvOfSource([]byte(src)))
	if f == nil || ds.HasErrors() {
		t.Fatalf("spec does not load:\n%v", ds)
	}
	return f
}

// TestSeedWorkedExample: the seed model reproduces the seed's own arithmetic, figure by figure,
// through the JSON a user reads.
func TestSeedWorkedExample(t *testing.T) {
	f := lowerSrc(t, seedFleet)
	var buf bytes.Buffer
	if err := capacity.Build(f, capacity.FromFleet(f)).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		FormatVersion int                `json:"format_version"`
		Seed          map[string]float64 `json:"seed_model"`
		Worker        map[string]any     `json:"worker_model"`
		First         struct {
			Name     string  `json:"name"`
			Headroom float64 `json:"headroom"`
		} `json:"first_quota_to_break"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"steps_per_minute":           7500,
		"sqs_requests_per_minute":    15000,
		"sqs_requests_per_day":       21.6e6,
		"putevents_entries_per_day":  10.8e6,
		"putevents_requests_per_day": 1.08e6,
		"dynamodb_writes_per_day":    10.8e6,
		"steps_in_flight":            11250,
		"in_flight_share_of_cap":     0.09375, // the seed's "9.4 %"
		"callbacks_per_second":       125,
		"callback_headroom":          4,
	}
	for k, w := range want {
		g, ok := got.Seed[k]
		if !ok || math.Abs(g-w) > 1e-9*math.Max(1, w) {
			t.Errorf("seed_model.%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
	for k := range want {
		if _, ok := got.Worker[k].(float64); !ok {
			t.Errorf("worker_model.%s = %#v, want a number", k, got.Worker[k])
		}
	}
	if got.FormatVersion != jsonreport.FormatVersion {
		t.Errorf("format_version %d", got.FormatVersion)
	}
	// Quadruple the fleet and the callback API is the first to go (the seed's warning):
	// SendTask* at 125 + heartbeats against 500/s.
	if got.First.Name != "Step Functions SendTask* refill" {
		t.Errorf("first quota to break = %q, want the callback refill", got.First.Name)
	}
}

// TestWorkerModel pins the worker's own counts on the seed fleet: 0.2005 SQS requests per step
// plus its batched visibility heartbeats, two DynamoDB writes per step plus a lease renewal
// per heartbeat, SendTaskSuccess per step plus SendTaskHeartbeat at the worker's cadence.
func TestWorkerModel(t *testing.T) {
	f := lowerSrc(t, seedFleet)
	a := f.Agents[0]
	hb := 90 / a.Heartbeat.Seconds()
	r := capacity.Build(f, capacity.FromFleet(f))
	k := r.WorkerModel
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Max(1, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("sqs/min", k.SQSRequestsPerMinute, 7500*(capacity.WorkerSQSPerStep+hb/capacity.WorkerSQSBatch))
	check("ddb/day", k.DynamoDBWritesPerDay, 125*(capacity.WorkerDynamoDBPerStep+hb)*86400)
	check("callbacks/s", k.CallbacksPerSecond, 125+125*hb)
	check("putevents requests/day", k.PutEventsRequestsPerDay, 10.8e6/float64(f.Bus.MaxEntries))
	check("in flight", k.StepsInFlight, 11250)
	if len(r.Classes) != 1 || r.Classes[0].KEDA == nil || r.Classes[0].KEDA.ReplicasNeeded != 2813 || !r.Classes[0].KEDA.Covered {
		t.Errorf("KEDA = %+v, want 2,813 replicas (11,250 / 4) covered by max 4,000", r.Classes[0].KEDA)
	}
}

func examples(t *testing.T) map[string]*ir.Fleet {
	t.Helper()
	paths, _ := filepath.Glob("../../examples/*/fleet.yaml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	out := map[string]*ir.Fleet{}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = lowerSrc(t, string(src))
	}
	out["seed"] = lowerSrc(t, seedFleet)
	return out
}

// usable gives an example traffic when it states none, so every example is exercised.
func usable(f *ir.Fleet) capacity.Traffic {
	tr := capacity.FromFleet(f)
	if tr.ConversationsPerMinute == 0 {
		tr.ConversationsPerMinute = 60
	}
	if tr.StepsPerConversation == 0 {
		tr.StepsPerConversation = 5
	}
	return tr
}

// TestDoublingTraffic: twice the conversations is twice every rate and every in-flight
// figure, and never more headroom.
func TestDoublingTraffic(t *testing.T) {
	for name, f := range examples(t) {
		tr := usable(f)
		a, b := capacity.Build(f, tr), capacity.Build(f, tr.Scaled(2))
		pairs := map[string][2]float64{
			"steps/min":      {a.WorkerModel.StepsPerMinute, b.WorkerModel.StepsPerMinute},
			"sqs/day":        {a.WorkerModel.SQSRequestsPerDay, b.WorkerModel.SQSRequestsPerDay},
			"putevents/day":  {a.WorkerModel.PutEventsRequestsPerDay, b.WorkerModel.PutEventsRequestsPerDay},
			"ddb/day":        {a.WorkerModel.DynamoDBWritesPerDay, b.WorkerModel.DynamoDBWritesPerDay},
			"in flight":      {a.WorkerModel.StepsInFlight, b.WorkerModel.StepsInFlight},
			"seed in flight": {a.SeedModel.StepsInFlight, b.SeedModel.StepsInFlight},
			"callbacks":      {a.WorkerModel.CallbacksPerSecond, b.WorkerModel.CallbacksPerSecond},
			"seed sqs/min":   {a.SeedModel.SQSRequestsPerMinute, b.SeedModel.SQSRequestsPerMinute},
		}
		for k, p := range pairs {
			if math.Abs(p[1]-2*p[0]) > 1e-9*math.Max(1, p[1]) {
				t.Errorf("%s: %s %v → %v at twice the traffic", name, k, p[0], p[1])
			}
		}
		if a.WorkerModel.StepsPerMinute == 0 {
			t.Errorf("%s: no steps computed", name)
		}
		before := map[string]float64{}
		for _, q := range a.Quotas {
			before[q.Name+"/"+q.Scope] = q.Headroom
		}
		for _, q := range b.Quotas {
			if h, ok := before[q.Name+"/"+q.Scope]; ok && q.Headroom > h {
				t.Errorf("%s: %s (%s) headroom rose from %v to %v at twice the traffic", name, q.Name, q.Scope, h, q.Headroom)
			}
		}
	}
}

// trafficFinding says a diagnostic is a rule's traffic arithmetic breaking a quota (not the
// same rule's static checks, and not Q010's early warning at 25 % of the cap).
func trafficFinding(d *diag.Diagnostic) bool {
	if d.Code == "Q010" && d.Severity != diag.Error {
		return false
	}
	return strings.Contains(d.Summary, "projected") || strings.Contains(d.Summary, "open a Map Run")
}

// TestRulesAgreeWithReport: at every traffic multiple, each quota rule fires exactly as many
// times as the report lists its quota broken. Rules and report share one implementation; this
// holds them to it.
func TestRulesAgreeWithReport(t *testing.T) {
	ruled := map[string]bool{}
	for name, f := range examples(t) {
		base := usable(f)
		if f.Traffic == nil {
			f.Traffic = &ir.Traffic{Path: "/traffic"}
		}
		for _, scale := range []float64{0.5, 1, 4, 16, 64, 256, 1024, 8192} {
			tr := base.Scaled(scale)
			f.Traffic.ConversationsPerMinute, f.Traffic.StepsPerConversation = tr.ConversationsPerMinute, tr.StepsPerConversation
			f.Traffic.ConcurrentConversations = tr.ConcurrentConversations
			r := capacity.Build(f, tr)
			want := map[string]int{}
			for _, q := range r.Quotas {
				if q.Rule != "" && q.Breaks() {
					want[q.Rule]++
					ruled[q.Rule] = true
				}
			}
			got := map[string]int{}
			for _, d := range check.Run(f) {
				if trafficFinding(d) {
					got[d.Code]++
				}
			}
			for _, code := range []string{"E011", "E012", "Q008", "Q010", "S006", "S007", "S008", "S011", "W004"} {
				if got[code] != want[code] {
					t.Errorf("%s ×%v: %s fired %d times, the report breaks %d of its quotas", name, scale, code, got[code], want[code])
				}
			}
		}
	}
	// The sweep must reach the rules it claims to hold; a sweep that breaks nothing proves nothing.
	for _, code := range []string{"Q008", "Q010", "S006", "S007", "S008"} {
		if !ruled[code] {
			t.Errorf("no example breaks %s's quota at any multiple; extend the sweep", code)
		}
	}
}

// TestBadTraffic: zero, negative, absurd or missing traffic yields a report that says which
// figures cannot be computed, and never NaN or Inf in any format.
func TestBadTraffic(t *testing.T) {
	f := lowerSrc(t, seedFleet)
	cases := map[string]capacity.Traffic{
		"missing":   {},
		"zero":      {ConversationsPerMinute: 0, StepsPerConversation: 15},
		"negative":  {ConversationsPerMinute: -5, StepsPerConversation: 15},
		"absurd":    {ConversationsPerMinute: 1e12, StepsPerConversation: 15},
		"nan":       {ConversationsPerMinute: math.NaN(), StepsPerConversation: 15},
		"inf steps": {ConversationsPerMinute: 500, StepsPerConversation: math.Inf(1)},
		"neg dur":   {ConversationsPerMinute: 500, StepsPerConversation: 15, StepDuration: -time.Second},
	}
	for name, tr := range cases {
		r := capacity.Build(f, tr)
		if len(r.Notes) == 0 || len(r.Quotas) != 0 || r.Cost != nil {
			t.Errorf("%s: notes %q, %d quotas, cost %v: want a note and no figures", name, r.Notes, len(r.Quotas), r.Cost)
		}
		for _, write := range []func(*bytes.Buffer) error{
			func(b *bytes.Buffer) error { return r.WriteJSON(b) },
			func(b *bytes.Buffer) error { return r.WriteText(b) },
			func(b *bytes.Buffer) error { return r.WriteMarkdown(b) },
		} {
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if s := b.String(); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") || strings.Contains(s, "∞") {
				t.Errorf("%s: output holds a non-number:\n%s", name, s)
			}
		}
	}
	// Large but sane traffic computes finite numbers everywhere.
	r := capacity.Build(f, capacity.Traffic{ConversationsPerMinute: capacity.MaxConversationsPerMinute, StepsPerConversation: 100})
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatalf("JSON at the largest traffic: %v", err)
	}
	if r.FirstQuotaToBreak == nil || !r.FirstQuotaToBreak.Breaks() {
		t.Errorf("a billion conversations a minute breaks nothing: %+v", r.FirstQuotaToBreak)
	}
}

// TestTopologyShares: a fanned-out class takes a share per item, a traffic.share override
// wins, and the shares add up to the fleet's steps.
func TestTopologyShares(t *testing.T) {
	src := strings.Replace(seedFleet, "workflows:", `  summarizer:
    runtime: eks
    step: { p95: 30s, max: 5m }
    handler: { http: "http://127.0.0.1:8080/step" }
  triage:
    runtime: eks
    step: { p95: 30s, max: 5m }
    handler: { http: "http://127.0.0.1:8080/step" }
    traffic: { share: 0.1 }
workflows:`, 1)
	src = strings.Replace(src, "      - { agent: researcher, timeout: 1h, heartbeat: 15m }", `      - { agent: researcher, timeout: 1h, heartbeat: 15m }
      - fan_out: { items: $.parts, agent: summarizer, max_concurrency: 100 }
      - { agent: triage, timeout: 1h }`, 1)
	src = strings.Replace(src, "  step_duration: 90s\n", "  step_duration: 90s\n  fan_out_items: 8\n", 1)
	f := lowerSrc(t, src)
	r := capacity.Build(f, capacity.FromFleet(f))
	share := map[string]float64{}
	sum := 0.0
	for _, c := range r.Classes {
		share[c.Name] = c.ShareOfSteps
		sum += c.StepsPerMinute
	}
	if math.Abs(sum-7500) > 1e-6 {
		t.Errorf("class steps add up to %v, want 7,500", sum)
	}
	if math.Abs(share["triage"]-0.1) > 1e-12 {
		t.Errorf("triage share %v, want its override 0.1", share["triage"])
	}
	// The other 90 %: researcher reached once per run, summarizer eight times.
	if math.Abs(share["summarizer"]-0.9*8/9) > 1e-12 || math.Abs(share["researcher"]-0.9/9) > 1e-12 {
		t.Errorf("shares %v, want summarizer 0.8 and researcher 0.1", share)
	}
}

// A workflow's items_per_run sizes its fan_out steps, over traffic.fan_out_items; another
// workflow's fan-out keeps the traffic's figure.
func TestItemsPerRun(t *testing.T) {
	src := strings.Replace(seedFleet, "workflows:", `  summarizer:
    runtime: eks
    step: { p95: 30s, max: 5m }
    handler: { http: "http://127.0.0.1:8080/step" }
  indexer:
    runtime: eks
    step: { p95: 30s, max: 5m }
    handler: { http: "http://127.0.0.1:8080/step" }
workflows:
  digest:
    items_per_run: 20
    steps:
      - fan_out: { items: $.parts, agent: summarizer, max_concurrency: 100 }
  index:
    steps:
      - fan_out: { items: $.docs, agent: indexer, max_concurrency: 100 }`, 1)
	src = strings.Replace(src, "  step_duration: 90s\n", "  step_duration: 90s\n  fan_out_items: 4\n", 1)
	f := lowerSrc(t, src)
	if w := f.Workflows[1]; w.Name != "digest" || w.ItemsPerRun != 20 {
		t.Fatalf("digest items_per_run not lowered: %+v", w)
	}
	r := capacity.Build(f, capacity.FromFleet(f))
	share := map[string]float64{}
	for _, c := range r.Classes {
		share[c.Name] = c.ShareOfSteps
	}
	// Per conversation: researcher once, summarizer 20 times (items_per_run), indexer 4
	// (traffic.fan_out_items): 25 in all.
	want := map[string]float64{"researcher": 1.0 / 25, "summarizer": 20.0 / 25, "indexer": 4.0 / 25}
	for name, w := range want {
		if math.Abs(share[name]-w) > 1e-12 {
			t.Errorf("%s share %v, want %v (all: %v)", name, share[name], w, share)
		}
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "fans out without") {
			t.Errorf("note about a stated item count: %s", n)
		}
	}
}

// TestPricesTable: the embedded price table parses, is dated, and covers us-east-1.
func TestPricesTable(t *testing.T) {
	p := capacity.Prices()
	if p.AsOf == "" || p.Note == "" {
		t.Errorf("price table without date or note: %+v", p)
	}
	us, ok := p.Regions["us-east-1"]
	if !ok || us.SQSStandardPerMillion <= 0 || us.EventsPerMillion <= 0 || us.DynamoDBWritesPerMillion <= 0 || us.TransitionsPerMillion <= 0 {
		t.Errorf("us-east-1 prices incomplete: %+v", us)
	}
	f := lowerSrc(t, seedFleet)
	c := capacity.Build(f, capacity.FromFleet(f)).Cost
	// 10.8 million events a day for 30 days at $1.00 per million.
	var events float64
	for _, l := range c.Lines {
		if l.Service == "EventBridge custom events" {
			events = l.MonthlyUSD
		}
	}
	if math.Abs(events-324) > 1e-6 {
		t.Errorf("EventBridge line $%v, want $324 (10.8 M/day × 30 × $1/M)", events)
	}
}

func TestMinPollers(t *testing.T) {
	for _, c := range []struct {
		avg   float64
		batch int
		want  int
	}{{1, 10, 100}, {0.05, 10, 100}, {90, 1, 1}, {2, 5, 25}, {0, 5, 0}} {
		if got := ir.MinPollers(c.avg, c.batch); got != c.want {
			t.Errorf("ir.MinPollers(%v s, batch %d) = %d, want %d", c.avg, c.batch, got, c.want)
		}
	}
}

// A lambda class's provisioned pollers appear beside the heuristic in the report; a min
// above the max is refused where it is written.
func TestProvisionedPollersReport(t *testing.T) {
	lambda := strings.Replace(seedFleet, "    runtime: eks\n", "    runtime: lambda\n", 1)
	lambda = strings.Replace(lambda, "    step: { p95: 90s, max: 10m }\n", "    step: { p95: 2s, max: 1m }\n", 1)
	lambda = strings.Replace(lambda, "    scaling: { min: 1, max: 4000, per_replica: 4 }\n", "    lambda: { provisioned_pollers: { max: 40 } }\n", 1)
	lambda = strings.Replace(lambda, "  step_duration: 90s\n", "", 1)
	lambda = strings.Replace(lambda, "timeout: 1h, heartbeat: 15m", "timeout: 5m", 1)
	f := lowerSrc(t, lambda)
	r := capacity.Build(f, capacity.FromFleet(f))
	l := r.Classes[0].Lambda
	// ceil(10 / 2 s) × batch 1 = 5: the heuristic, and the min the class did not state.
	if l == nil || l.MinPollers != 5 || l.Provisioned == nil || *l.Provisioned != (capacity.PollerRange{Min: 5, Max: 40}) {
		t.Fatalf("lambda use: %+v", l)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "provisioned pollers ≥ 5 (configured 5–40)") {
		t.Errorf("text report:\n%s", b.String())
	}
	bad := strings.Replace(lambda, "provisioned_pollers: { max: 40 }", "provisioned_pollers: { min: 50, max: 40 }", 1)
	_, _, ds := compiler.LoadBytes("fleet.yaml", []byte(bad))
	if !strings.Contains(ds.Error(), "P008") || !strings.Contains(ds.Error(), "provisioned_pollers min 50 is above max 40") {
		t.Errorf("min above max: %v", ds)
	}
}
