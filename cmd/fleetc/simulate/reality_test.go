package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/compiler/ir"
)

// The reality check's fleet and scenario (their comments say what each part exercises),
// shown in docs/simulate.md.
const (
	realityFleet    = "../../../docs/simulate/reality/fleet.yaml"
	realityScenario = "../../../docs/simulate/reality/scenario.yaml"
	// realityDrainTolerance is how far the simulated drain may be from the live one, as a
	// share of the live one (issue 37).
	realityDrainTolerance = 0.25
	// realityRun is the simulated span: the scenario's last fault ends at 60 s, and every
	// class has settled within 40 s of its own.
	realityRun = 2 * time.Minute
	// realitySettle bounds the wait for the live fleet to finish after the last action.
	realitySettle = 3 * time.Minute
	// pollEvery is how often the live run reads the page: the resolution of its drains.
	pollEvery = 200 * time.Millisecond
	// realityLiveEnv names a file holding a live run's outcome (as this test logs it), read
	// instead of running fleetc dev: for re-checking a change to the simulator in seconds.
	// Unset, the test runs the fleet live.
	realityLiveEnv = "FLEETC_REALITY_LIVE"
)

// outcome is what the check compares per class: the counts, and the seconds from the end of
// the last fault acting on the class until its last step was finished (the simulator's
// settled_seconds).
type outcome struct {
	Completed    int     `json:"completed"`
	DeadLettered int     `json:"dead_lettered"`
	Settled      float64 `json:"settled_seconds"`
}

// TestSimulationMatchesDev runs one scenario twice: in `fleetc dev` on kumo (fleet-worker
// processes, their model gateway and dev's Bedrock stand-in answering 429s, dev's fault
// wrapper failing a handler) and in the simulator. The completed and dead-lettered counts
// must agree exactly and each class's drain (settled_seconds) within 25 %.
//
// Dev's stand-in handler takes no time of its own: the test makes every class's handler take
// the scenario's traffic.step_duration (dev's slow fault) whenever no outage holds it, so
// both runs do the same work per step.
func TestSimulationMatchesDev(t *testing.T) {
	f := load(t, realityFleet)
	src, err := os.ReadFile(realityScenario)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScenario(realityScenario, src, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range sc.Faults {
		if ft.Kind == Throttle && ft.RetryAfter != dev.WaveRetryAfter {
			t.Fatalf("the scenario's throttle names retry-after %s; dev's model stand-in names %s (dev.WaveRetryAfter)", ft.RetryAfter, dev.WaveRetryAfter)
		}
	}
	predicted := simulated(t, f, sc)
	var live map[string]outcome
	if path := os.Getenv(realityLiveEnv); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &live); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	} else {
		live = runLive(t, f, sc)
	}
	b, _ := json.Marshal(live)
	t.Logf("live (fleetc dev on kumo): %s", b)
	b, _ = json.Marshal(predicted)
	t.Logf("simulated:                 %s", b)
	for _, a := range f.Agents {
		p, l := predicted[a.Name], live[a.Name]
		if p.Completed != l.Completed || p.DeadLettered != l.DeadLettered {
			t.Errorf("%s: simulated %d completed, %d dead-lettered; live %d, %d", a.Name, p.Completed, p.DeadLettered, l.Completed, l.DeadLettered)
		}
		if math.Abs(p.Settled-l.Settled) > realityDrainTolerance*l.Settled {
			t.Errorf("%s: simulated drain %.1fs, live %.1fs: more than %.0f %% apart", a.Name, p.Settled, l.Settled, realityDrainTolerance*100)
		}
	}
}

// simulated is the simulator's outcome per class.
func simulated(t *testing.T, f *ir.Fleet, sc *Scenario) map[string]outcome {
	t.Helper()
	r := run(t, f, Options{Duration: realityRun, Seed: 1, Scenario: sc})
	out := map[string]outcome{}
	for _, c := range r.Classes {
		s := c.Summary
		if s.Settled == nil {
			t.Fatalf("%s: the simulated class did not settle within %s: %+v", c.Name, realityRun, s)
		}
		out[c.Name] = outcome{Completed: s.Completed, DeadLettered: s.DeadLettered, Settled: *s.Settled}
	}
	return out
}

// action is one thing the live run does at a time from its start.
type action struct {
	at    time.Duration
	what  string
	path  string
	body  map[string]any
	fault *Fault // a fault that is not a burst: its real end is what drain counts from
}

// liveActions is the scenario as calls to dev's page API: a 429 wave per throttle, a failing
// handler per outage, one event per burst step, and the slow handler (traffic.step_duration)
// for every class outside its outages.
func liveActions(t *testing.T, f *ir.Fleet, sc *Scenario) (acts []action, steps map[string]int) {
	t.Helper()
	if sc.Traffic == nil || sc.Traffic.StepDuration == nil {
		t.Fatal("the scenario needs traffic.step_duration: the live handlers' step time")
	}
	step := sc.Traffic.StepDuration.Seconds()
	// Long enough for the whole run, within dev's bound on a fault.
	slowFor := min(dev.MaxFault, realityRun+realitySettle).Seconds()
	slow := func(at time.Duration, class string) action {
		return action{at: at, what: "slow " + class, path: "/api/classes/" + class + "/fault",
			body: map[string]any{"kind": dev.FaultSlow, "seconds": slowFor, "delay_seconds": step}}
	}
	outageAt := func(class string, at time.Duration) bool {
		for _, ft := range sc.Faults {
			if ft.Kind == Outage && ft.Class == class && at >= ft.At && at < ft.End() {
				return true
			}
		}
		return false
	}
	for _, a := range f.Agents {
		if !outageAt(a.Name, 0) {
			acts = append(acts, slow(0, a.Name))
		}
	}
	steps = map[string]int{}
	for i := range sc.Faults {
		ft := &sc.Faults[i]
		switch ft.Kind {
		case Throttle:
			acts = append(acts, action{at: ft.At, what: "429 wave", path: "/api/faults/model-429",
				body: map[string]any{"seconds": ft.For.Seconds()}, fault: ft})
		case Outage:
			acts = append(acts, action{at: ft.At, what: "outage of " + ft.Class, path: "/api/classes/" + ft.Class + "/fault",
				body: map[string]any{"kind": dev.FaultFail, "seconds": ft.For.Seconds()}, fault: ft})
			if !outageAt(ft.Class, ft.End()) {
				acts = append(acts, slow(ft.End(), ft.Class))
			}
		case Burst:
			every := ft.For / time.Duration(ft.Count)
			for k := range ft.Count {
				n := steps[ft.Class]
				steps[ft.Class]++
				acts = append(acts, action{at: ft.At + time.Duration(k)*every, what: "step", path: "/api/events",
					body: map[string]any{"detail_type": "step.requested", "detail": map[string]any{
						"trace_id": fmt.Sprintf("%s-%d", ft.Class, n), "n": n, "class": ft.Class}}})
			}
		default:
			t.Fatalf("the live run has no %s fault", ft.Kind)
		}
	}
	slices.SortStableFunc(acts, func(a, b action) int { return int(a.at - b.at) })
	return acts, steps
}

// runLive runs the scenario in fleetc dev and measures each class's outcome.
func runLive(t *testing.T, f *ir.Fleet, sc *Scenario) map[string]outcome {
	t.Helper()
	endpoint := devtest.Env(t)
	dir := t.TempDir()
	spec, _ := devtest.UniqueSpec(t, dir, "docs/simulate/reality/fleet.yaml", "fleet: reality", "fleet: FLEET", "name: reality", "name: FLEET")
	s := devtest.Start(t, spec, filepath.Join(dir, "out"), endpoint)
	acts, steps := liveActions(t, f, sc)

	start := time.Now()
	// Each class's drain counts from the real end of the last fault acting on it.
	faultEnd := map[string]time.Time{}
	for _, a := range f.Agents {
		faultEnd[a.Name] = start
	}
	act := func(a action) {
		began := time.Now()
		if code, m := s.Post(t, a.path, a.body); code != 200 {
			t.Fatalf("%s at %s: POST %s: %d %v", a.what, a.at, a.path, code, m)
		}
		for _, c := range f.Agents {
			if a.fault == nil || !a.fault.ActsOn(c) {
				continue
			}
			if end := began.Add(a.fault.For); end.After(faultEnd[c.Name]) {
				faultEnd[c.Name] = end
			}
		}
		if late := time.Since(start.Add(a.at)); late > time.Second {
			t.Logf("%s at %s ran %s late", a.what, a.at, late.Round(time.Millisecond))
		}
	}

	// The actions go out on time; between them the page is read, and each class is settled
	// once every step it is sent is completed or dead-lettered.
	settledAt := map[string]time.Time{}
	deadline := start.Add(acts[len(acts)-1].at + realitySettle)
	for next := 0; next < len(acts) || len(settledAt) < len(f.Agents); {
		if next < len(acts) && time.Until(start.Add(acts[next].at)) < pollEvery {
			time.Sleep(time.Until(start.Add(acts[next].at)))
			act(acts[next])
			next++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live fleet did not settle within %s of the last action: %+v\n%s", realitySettle, s.Fleet(t), s.Log())
		}
		now := time.Now()
		for _, c := range s.Fleet(t).Classes {
			if _, done := settledAt[c.Name]; !done && c.Completed+c.DeadLettered >= steps[c.Name] {
				settledAt[c.Name] = now
			}
		}
		time.Sleep(pollEvery)
	}
	out := map[string]outcome{}
	for _, c := range s.Fleet(t).Classes {
		out[c.Name] = outcome{Completed: c.Completed, DeadLettered: c.DeadLettered, Settled: math.Max(0, settledAt[c.Name].Sub(faultEnd[c.Name]).Seconds())}
	}
	return out
}
