package dev

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/wire"
)

// chaosFault is how long each scripted fault lasts: long enough that a worker which spends a
// receive per failure (max_receives 3) runs out, short enough for a test.
const chaosFault = 15 * time.Second

// TestDevChaos runs issue 31's scenario on kumo, in `fleetc dev` on a fleet of one eks class
// (poller, fleet-worker --mode poll) and one lambda class (fn, fleet-worker --mode lambda
// under aws-lambda-rie), and checks the ledger balances with nothing lost:
//   - a 15 s 429 wave from the model over 2 steps of each class (the policy retries once and
//     then benches its deployment, so the throttle reaches the workers);
//   - then a 15 s retryable failure (exit 75) of fn's handler over 2 fn steps;
//   - and a kill -9 of poller's worker while its handler is in the middle of a step (slowed
//     8 s so the kill lands inside it): the step is taken over once the dead worker's lease
//     lapses (dev's 30 s visibility);
//   - one poison event (a model policy its class does not allow), which must still be
//     dead-lettered on its first attempt with its reason.
//
// Every step completes exactly once (one handler success and one completion event per
// trace: no duplicated side effect) and only the poison is dead-lettered.
func TestDevChaos(t *testing.T) {
	t.Parallel() // a dev session on the shared kumo under a fleet name of its own: it overlaps the other
	endpoint := devtest.Env(t)
	rie, err := verifytest.Tool("aws-lambda-rie")
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	spec, _ := devtest.UniqueSpec(t, dir, "cmd/fleetc/dev/testdata/chaos/fleet.yaml", "fleet: chaos", "fleet: FLEET", "name: chaos", "name: FLEET")
	s := devtest.Start(t, spec, filepath.Join(dir, "out"), endpoint, "--rie-bin", rie)
	// Through the page's API (POST /api/events), as its button sends: faster than a process
	// per event, so every step lands inside its fault.
	send := func(trace, class string, extra map[string]any) {
		detail := map[string]any{"trace_id": trace, "n": 1, "class": class}
		for k, v := range extra {
			detail[k] = v
		}
		if code, m := s.Post(t, "/api/events", map[string]any{"detail_type": "step.requested", "detail": detail}); code != 200 {
			t.Fatalf("POST /api/events %v: %d %v", detail, code, m)
		}
	}
	var good []string
	step := func(trace, class string) { send(trace, class, nil); good = append(good, trace) }

	// The 429 wave, and the poison during it.
	start := time.Now()
	s.Action(t, "throttle", "--for", chaosFault.String())
	for _, c := range []string{"poller", "fn"} {
		step("wave-"+c+"-1", c)
		step("wave-"+c+"-2", c)
	}
	send("poison", "fn", map[string]any{"model_policy": "not-allowed"})
	s.WaitFor(t, "the wave ended", chaosFault+time.Minute, func() bool { return s.Fleet(t).Model.WaveUntil == nil })

	// The failure window on fn, and the kill -9 of poller mid-step.
	s.Action(t, "fail", "fn", "--for", chaosFault.String())
	step("fail-fn-1", "fn")
	step("fail-fn-2", "fn")
	s.Action(t, "slow", "poller", "--for", "15s", "--delay", "8s")
	step("kill-poller", "poller")
	s.WaitFor(t, "poller's handler in the slowed step", time.Minute, func() bool {
		return regexp.MustCompile(`"trace_id":"kill-poller".*dev fault: poller slowed`).MatchString(s.Log())
	})
	if out := s.Action(t, "kill", "poller"); !strings.Contains(out, "killed poller's worker") {
		t.Fatalf("fleetc dev kill: %s", out)
	}

	submitted := len(good) + 1
	deadline := time.Now().Add(4 * time.Minute)
	f := s.Fleet(t)
	for ; time.Now().Before(deadline); f = s.Fleet(t) {
		if f.Ledger.Submitted == submitted && f.Ledger.Completed+f.Ledger.DeadLettered == submitted {
			break
		}
		time.Sleep(time.Second)
	}
	v := readVerdicts(s.Log())
	t.Logf("ledger %s after the first fault: %s", time.Since(start).Round(time.Second), chaosLedger(f, v))
	defer func() {
		if t.Failed() {
			t.Logf("what happened:\n%s", story(s.Log()))
		}
	}()

	if f.Ledger.Submitted != submitted || f.Ledger.Completed != len(good) || f.Ledger.DeadLettered != 1 {
		t.Errorf("want %d submitted = %d completed + 1 dead-lettered (the poison); got %+v", submitted, len(good), f.Ledger)
	}
	for _, trace := range good {
		if n := v.finished[trace]; n != 1 {
			t.Errorf("step %s: %d handler successes, want 1 (dead-lettered: %v)", trace, n, v.dead[trace])
		}
	}
	if seen := eventsSeen(f, "step.completed"); seen != len(good) {
		t.Errorf("%d step.completed events for %d steps: a side effect duplicated or lost", seen, len(good))
	}
	if d := v.dead["poison"]; len(d) != 1 || d[0].Code != wire.ModelPolicyNotAllowed || d[0].Attempt != 1 || d[0].Reason == "" {
		t.Errorf("the poison's dead letters: %+v; want one, ModelPolicyNotAllowed with its reason, on attempt 1", d)
	}
	if f.Model.Throttled == 0 {
		t.Errorf("the wave throttled no model call: %+v", f.Model)
	}
	// The wave reached a handler as the gateway's throttle (retry_after_seconds), and every
	// fault was absorbed inside its receive: nothing went back to the queue to spend the
	// class's receives.
	if !regexp.MustCompile(`"trace_id":"wave-[a-z]+-\d".*stand-in handler for [a-z]+: .*throttled, retry after`).MatchString(s.Log()) {
		t.Errorf("no wave step saw the model gateway's throttle")
	}
	if v.released != 0 {
		t.Errorf("%d steps released to the queue (%v), want every fault held inside one receive", v.released, v.releasedCodes)
	}
	if !strings.Contains(s.Log(), `"trace_id":"fail-fn-1"`) || !strings.Contains(s.Log(), "dev fault: fn fails until") {
		t.Errorf("the failure window reached no fn step")
	}
}

// verdict is one worker verdict line.
type verdict struct {
	Msg       string    `json:"msg"`
	Class     string    `json:"class"`
	TraceID   string    `json:"trace_id"`
	Attempt   int       `json:"attempt"`
	Code      wire.Code `json:"code"`
	Reason    string    `json:"reason"`
	Duplicate bool      `json:"duplicate"`
}

// verdicts are the workers' verdicts by trace: handler successes (a step finished, not as a
// duplicate), dead letters, releases.
type verdicts struct {
	finished      map[string]int
	receives      map[string]int // the receive each step finished on
	dead          map[string][]verdict
	released      int
	releasedCodes map[wire.Code]int
}

var workerLine = regexp.MustCompile(`(?m)^\s*\S+\s+\| (\{.*\})$`)

func readVerdicts(log string) verdicts {
	v := verdicts{finished: map[string]int{}, receives: map[string]int{}, dead: map[string][]verdict{}, releasedCodes: map[wire.Code]int{}}
	for _, m := range workerLine.FindAllStringSubmatch(log, -1) {
		var l verdict
		if json.Unmarshal([]byte(m[1]), &l) != nil {
			continue
		}
		switch l.Msg {
		case "step finished":
			if !l.Duplicate {
				v.finished[l.TraceID]++
				v.receives[l.TraceID] = l.Attempt
			}
		case "step dead-lettered":
			v.dead[l.TraceID] = append(v.dead[l.TraceID], l)
		case "step released":
			v.released++
			v.releasedCodes[l.Code]++
		}
	}
	return v
}

func eventsSeen(f devtest.FleetView, detailType string) int {
	for _, e := range f.Events {
		if e.DetailType == detailType {
			return e.Seen
		}
	}
	return 0
}

// chaosLedger is one line for the test's log (and docs/faults.md): the ledger, each class's
// numbers and dead-letter codes, the releases and the model's calls.
func chaosLedger(f devtest.FleetView, v verdicts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "submitted %d, completed %d, dead-lettered %d, pending %d;", f.Ledger.Submitted, f.Ledger.Completed, f.Ledger.DeadLettered, f.Ledger.Pending)
	for _, c := range f.Classes {
		fmt.Fprintf(&b, " %s: completed %d, dead-lettered %d %v, worker starts %d;", c.Name, c.Completed, c.DeadLettered, c.DLQ.ErrorCodes, c.Worker.Starts)
	}
	fmt.Fprintf(&b, " releases %d %v; finished on receive %v; step.completed events %d; model calls %d, throttled %d",
		v.released, v.releasedCodes, v.receives, eventsSeen(f, "step.completed"), f.Model.Calls, f.Model.Throttled)
	return b.String()
}

// story is the log's lines that tell what happened to the steps: verdicts, faults, the
// stand-in handlers' model failures and dev's own lines.
func story(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		for _, w := range []string{`"msg":"step `, "dev fault:", "throttled, retry after", "not retryable", "exit 75", "fleetc dev: killed", "429 ThrottlingException for"} {
			if strings.Contains(l, w) {
				b.WriteString(l + "\n")
				break
			}
		}
	}
	return b.String()
}
