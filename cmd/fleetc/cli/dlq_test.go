package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
)

// Without --auto-approve, redrive asks before moving and again after a passing canary (one
// stdin, read without buffering ahead, answers both).
func TestRedriveAsksTwice(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	stop := f.StartWorker(t, "solver")
	for i := 1; i <= 3; i++ {
		f.DeadLetter(t, "solver", dlqtest.Event(fmt.Sprintf("ev-bad-%d", i), map[string]any{"trace_id": fmt.Sprintf("t-%d", i), "job": fmt.Sprintf("bad-%d", i), "conversation_id": "c1"}), "")
	}
	stop()
	f.Handler.Fix()
	f.StartWorker(t, "solver")
	var out bytes.Buffer
	code := Main([]string{"dlq", "redrive", f.Spec, "solver", "--canary", "1", "--endpoint", f.Endpoint}, strings.NewReader("yes\nyes\n"), &out, &out)
	got := out.String()
	for _, want := range []string{
		"Redrive every dead letter to " + f.Targets["solver"].Queue + ", one at a time at 10/s, 1 canary first.",
		"Do you want to move them? Only 'yes' will be accepted.",
		"canary: 1 completed, 0 back in the DLQ, 0 pending",
		"The canary passed. Move the other 2? Only 'yes' will be accepted.",
		"  moved 2/2\ndone: 3 moved",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	f.WaitDepth(t, "solver", true, 0, 5*time.Second)
}

// redriveJSON runs `fleetc dlq redrive ... --auto-approve --format json` against f, failing
// the test (instead of hanging) when it does not end within bound.
func redriveJSON(t *testing.T, f *dlqtest.Fleet, bound time.Duration, args ...string) (int, dlq.RedriveReport, string, time.Duration) {
	t.Helper()
	args = append([]string{"dlq", "redrive", f.Spec, "solver", "--auto-approve", "--format", "json", "--endpoint", f.Endpoint}, args...)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- Main(args, strings.NewReader(""), &stdout, &stderr) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(bound):
		t.Fatalf("fleetc %s still runs after %s", strings.Join(args, " "), bound)
	}
	took := time.Since(start)
	var r dlq.RedriveReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not the JSON report (%v):\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return code, r, stderr.String(), took
}

// `fleetc dlq redrive` without a filter, on a letter that fails fast on every trip (the
// handler's bug, not fixed): it moves it once, reports it as failed again, and exits 1.
func TestRedrivePoisonEnds(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	f.StartWorker(t, "solver")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad-p", map[string]any{"trace_id": "t-p", "job": "bad-p", "conversation_id": "c1"}), "")
	code, r, stderr, took := redriveJSON(t, f, 30*time.Second)
	t.Logf("fleetc dlq redrive on poison: exit %d after %s: %s", code, took.Round(time.Millisecond), &r.Result)
	if code != exitInvalid || r.Moved != 1 || r.FailedAgain != 1 || r.Left != 0 || r.Class != "solver" || r.DLQ != f.Targets["solver"].DLQ {
		t.Fatalf("exit %d, report %+v\nstderr:\n%s", code, r, stderr)
	}
	for _, want := range []string{"done: 1 moved, 1 failed again, 0 left", "failed again: BadOutput (1)", "1 moved letter came back to"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A canary that no worker picks up is still pending at --canary-timeout: that is not a pass,
// so even with --auto-approve the rest stays in the DLQ, and the exit is 1.
func TestRedrivePendingCanaryStops(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	stop := f.StartWorker(t, "solver")
	for i := 1; i <= 3; i++ {
		f.DeadLetter(t, "solver", dlqtest.Event(fmt.Sprintf("ev-bad-%d", i), map[string]any{"trace_id": fmt.Sprintf("t-%d", i), "job": fmt.Sprintf("bad-%d", i), "conversation_id": "c1"}), "")
	}
	stop() // no worker: the canary gets no outcome
	code, r, stderr, _ := redriveJSON(t, f, 30*time.Second, "--canary", "1", "--canary-timeout", "2s")
	if code != exitInvalid || r.Canary == nil || r.Canary.Pending != 1 || r.Canary.Completed != 0 || r.Moved != 1 || r.Left != 2 {
		t.Fatalf("exit %d, report %+v (canary %+v)\nstderr:\n%s", code, r, r.Canary, stderr)
	}
	if want := "the canary did not pass: 1 of 1 still pending after --canary-timeout 2s"; !strings.Contains(stderr, want) || !strings.Contains(r.Stopped, want) {
		t.Errorf("stderr and stopped lack %q:\n%s\nstopped: %s", want, stderr, r.Stopped)
	}
	f.WaitDepth(t, "solver", true, 2, 5*time.Second)  // the rest was not moved
	f.WaitDepth(t, "solver", false, 1, 5*time.Second) // the canary waits for a worker
}
