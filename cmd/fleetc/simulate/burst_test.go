package simulate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
)

// A burst is exactly its count of steps, evenly over its span, and is traffic enough on its
// own: the reality fleet states no traffic. Every step finishes, so the class settles.
func TestBurstArrivesExactly(t *testing.T) {
	f := load(t, realityFleet)
	sc := scenario(t, f, "faults:\n  - {at: 2s, for: 10s, burst: {class: retrier, count: 25}}\ntraffic: {step_duration: 1s}\n")
	r := run(t, f, Options{Duration: time.Minute, Seed: 1, Scenario: sc})
	c := classOf(t, r, "retrier").Summary
	if c.Arrived != 25 || c.Completed != 25 || c.Settled == nil {
		t.Errorf("retrier: %+v, want 25 arrived and completed, settled", c)
	}
	// Evenly: one step every 0.4 s from 2 s, so 3 have arrived at 3 s (none at 1 s).
	for _, p := range classOf(t, r, "retrier").Series {
		if p.T == 1 && p.Completed+p.InFlight+p.Backlog != 0 || p.T == 3 && p.Completed+p.InFlight+p.Backlog+p.DeadLettered != 3 {
			t.Errorf("at %gs: %+v", p.T, p)
		}
	}
	if w := classOf(t, r, "waver").Summary; w.Arrived != 0 {
		t.Errorf("waver got %d steps from retrier's burst", w.Arrived)
	}
	if _, err := Run(f, Options{Duration: time.Minute, Scenario: scenario(t, f, "")}); err == nil || !strings.Contains(err.Error(), "no traffic") {
		t.Errorf("no traffic and no burst: %v", err)
	}
}

// A throttle that names its retry-after benches the policy for it, never past the wave's
// end; without one, for the policy's cooldown, else ThrottleRetryAfter.
func TestBenchHonoursRetryAfter(t *testing.T) {
	wave := &Fault{Kind: Throttle, At: 0, For: 20 * time.Second, RetryAfter: 3 * time.Second}
	cooling := &policy{m: &ir.Model{Cooldown: 10 * time.Second}}
	for _, c := range []struct {
		now  float64
		p    *policy
		ft   *Fault
		want float64
	}{
		{5, cooling, wave, 3},
		{18.5, cooling, wave, 1.5},
		{5, cooling, &Fault{Kind: Throttle, For: 20 * time.Second}, 10},
		{5, &policy{m: &ir.Model{}}, &Fault{Kind: Throttle, For: 20 * time.Second}, ThrottleRetryAfter.Seconds()},
	} {
		s := &sim{now: c.now}
		if got := s.bench(c.p, c.ft); got != c.want {
			t.Errorf("at %gs, cooldown %s, retry-after %s: bench %g, want %g", c.now, c.p.m.Cooldown, c.ft.RetryAfter, got, c.want)
		}
	}
}

// A fault acts on a class through its outage, its policy or a fallback of it, or a spike.
func TestFaultActsOn(t *testing.T) {
	fb := &ir.Model{Name: "backup"}
	a := &ir.Agent{Name: "a", Model: &ir.Model{Name: "main", Fallbacks: []*ir.Model{fb}}}
	for _, c := range []struct {
		ft   Fault
		want bool
	}{
		{Fault{Kind: Outage, Class: "a"}, true},
		{Fault{Kind: Outage, Class: "b"}, false},
		{Fault{Kind: Throttle, Policy: "main"}, true},
		{Fault{Kind: Throttle, Policy: "backup"}, true},
		{Fault{Kind: Throttle, Policy: "other"}, false},
		{Fault{Kind: Spike, Factor: 2}, true},
		{Fault{Kind: Burst, Class: "a", Count: 1}, false},
	} {
		if got := c.ft.ActsOn(a); got != c.want {
			t.Errorf("%+v acts on a: %v, want %v", c.ft, got, c.want)
		}
	}
}

// The simulated model cost reads fleetc capacity's price table: per token it is capacity's
// model-tokens line, and a price of the policy's own (models.<policy>.price) moves both.
func TestModelCostReadsCapacityPrices(t *testing.T) {
	f := load(t, docsFleet)
	for _, a := range f.Agents {
		a.TokensPerStep, a.OutputTokensPerStep = 2000, 500
	}
	perToken := func() (sim, capa float64) {
		r := run(t, f, Options{Duration: 5 * time.Minute, Seed: 1})
		var usd float64
		var tokens int64
		for _, c := range r.Classes {
			if c.Summary.ModelCostUSD == nil {
				t.Fatalf("%s: no model cost: %+v", c.Name, c.Summary)
			}
			usd += *c.Summary.ModelCostUSD
			tokens += c.Summary.Tokens
		}
		for _, l := range capacity.Build(f, capacity.FromFleet(f)).Cost.Lines {
			if strings.HasPrefix(l.Service, "model tokens: haiku") {
				return usd / float64(tokens), l.MonthlyUSD / l.Units
			}
		}
		t.Fatal("capacity has no model-tokens line for haiku")
		return 0, 0
	}
	listSim, listCap := perToken()
	f.Models[0].Price = &ir.Price{InputPerMTok: 7, OutputPerMTok: 70}
	ownSim, ownCap := perToken()
	for _, c := range []struct {
		what      string
		sim, capa float64
	}{{"list", listSim, listCap}, {"the policy's own", ownSim, ownCap}} {
		if math.Abs(c.sim-c.capa) > 1e-6*c.capa {
			t.Errorf("%s price: simulated $%g per token, capacity $%g", c.what, c.sim, c.capa)
		}
	}
	if ownSim <= listSim {
		t.Errorf("the policy's own price did not change the simulated cost: %g, list %g", ownSim, listSim)
	}
}
