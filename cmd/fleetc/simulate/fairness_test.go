package simulate

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	rcfg "github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/runtime/retry"
)

// fairFleet is one eks class of 5 slots (one replica), 1 s steps (p95), with fairness
// {key: tenant_id, max_in_flight_per_key: 4} unless fair is false.
func fairFleet(fair bool) string {
	spec := `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
events:
  task.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, tenant_id]
      properties:
        trace_id: { type: string }
        tenant_id: { type: string, maxLength: 128 }
agents:
  worker:
    runtime: eks
    consumes: { event: task.requested }
    step: { p95: 1s, max: 5s }
    handler: { exec: ["/app/worker"] }
    scaling: { min: 1, max: 1, per_replica: 5 }
    FAIRNESS
worker:
  image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fx-worker:1.0.0
  eks: { cluster: agents, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" }
`
	line := ""
	if fair {
		line = "fairness: { key: tenant_id, max_in_flight_per_key: 4 }"
	}
	return strings.Replace(spec, "FAIRNESS", line, 1)
}

// burstRun simulates tenant A's burst of 100 messages at t = 10 s, then tenant B's steady
// one message every 2 s (A's rate is 100 times B's), and returns A's and B's messages.
func burstRun(t *testing.T, fair bool) (a, b []*msg) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fairFleet(fair)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := load(t, path)
	s := &sim{end: 600, rng: rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15))}
	s.backoff = retry.Policy{Base: time.Duration(rcfg.RetryBaseMS) * time.Millisecond, Cap: time.Duration(rcfg.RetryCapMS) * time.Millisecond, Rand: s.rng.Float64}
	s.build(f, capacity.New(f, capacity.FromFleet(f))) // no declared traffic: only what is sent below
	s.start()
	c := s.classes[0]
	send := func(at float64, key int) *msg {
		m := &msg{c: c, arrived: at, key: key}
		c.arrived++
		c.live = append(c.live, m)
		c.delayed++
		s.push(event{t: at, kind: evVisible, m: m})
		return m
	}
	for range 100 {
		a = append(a, send(10, 0))
	}
	for i := range 10 {
		b = append(b, send(10.001+2*float64(i), 1))
	}
	s.loop()
	return a, b
}

// The simulator models the per-key cap: a 100× burst from tenant A delays none of tenant B's
// steps by more than one step duration (p95, 1 s), where without the cap B's first steps
// wait for most of A's backlog; A's deferrals spend no receive and dead-letter nothing.
func TestFairnessBurstDoesNotDelayOtherTenant(t *testing.T) {
	const step = 1.0 // step.p95
	// worstWait is the longest a message waited in the queue before the receive that ran it.
	worstWait := func(ms []*msg) float64 {
		w := 0.0
		for _, m := range ms {
			if !m.done {
				t.Fatalf("a message sent at %.3f s never completed", m.arrived)
			}
			w = max(w, m.claimedAt-m.arrived)
		}
		return w
	}
	_, unfairB := burstRun(t, false)
	a, b := burstRun(t, true)
	bWorst, unfairWorst := worstWait(b), worstWait(unfairB)
	t.Logf("tenant B's longest wait behind tenant A's burst: %.2f s with the cap, %.2f s without (one step: p95 %.0f s)", bWorst, unfairWorst, step)
	if unfairWorst < 5*step {
		t.Errorf("without the cap tenant B waited at most %.2f s: the burst should hold it back several steps", unfairWorst)
	}
	if bWorst > step {
		t.Errorf("with the cap tenant B waited %.2f s behind the burst: more than one step duration (%.0f s)", bWorst, step)
	}
	deferrals, last := 0, 0.0
	for _, m := range a {
		if !m.done || m.receives != 1 {
			t.Errorf("tenant A message: done %t after %d receives; a deferral must spend none", m.done, m.receives)
		}
		deferrals += m.deferrals
		last = max(last, m.doneAt)
	}
	if deferrals == 0 {
		t.Error("no deferrals: the cap never held tenant A back")
	}
	t.Logf("tenant A: 100 messages from 10 s, %d deferrals, 0 receives spent on them, last done at %.1f s", deferrals, last)
}
