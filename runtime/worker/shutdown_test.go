package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/internal/jsonkeystest"
)

// SIGTERM to the real binary while a 20 s long poll is on the wire and a step runs far past
// the drain budget: --drain-timeout counts from the signal, not from when the receive returns.
// The step gets the budget, is then cancelled and its message released (visible again at
// once), and the process exits within the budget plus the flush, not 20 s later. Every log
// line it wrote is JSON without a duplicate key.
func TestSIGTERMDrainCountsFromTheSignal(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{visibility: 40, heartbeat: 5})
	raw, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["queue"].(map[string]any)["wait_time_seconds"] = 20 // SQS's longest long poll
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	e.send(envelope("evt-slow", stepSpec{TraceID: "slow", SleepMS: 30000}), "")

	const drain = 2 * time.Second
	p := e.startBinary(t, "--drain-timeout", drain.String())
	waitFor(t, "the step to start", 15*time.Second, func() bool {
		calls, _ := e.fx.snapshot()
		return calls["slow"] == 1
	})
	// The step holds 1 of 10 slots; the poller is now long-polling for the other 9.
	time.Sleep(500 * time.Millisecond)
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(25 * time.Second):
		t.Fatalf("no exit 25 s after SIGTERM\n%s", p.logs)
	}
	took := time.Since(signalled)
	if p.err != nil {
		t.Errorf("exit: %v\n%s", p.err, p.logs)
	}
	// Budget, then up to a second for cancellation, release and flushes.
	if took < drain-100*time.Millisecond || took > drain+2*time.Second {
		t.Errorf("exited %v after SIGTERM; want the %v drain budget counted from the signal\n%s", took.Round(time.Millisecond), drain, p.logs)
	}
	waitFor(t, "the cancelled step's message to be visible again", 5*time.Second, func() bool {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Messages) == 1
	})

	logs := strings.TrimSpace(p.logs.String())
	if !strings.Contains(logs, "drain budget spent") {
		t.Errorf("no drain log:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if dups, err := jsonkeystest.Duplicates([]byte(line)); err != nil || len(dups) > 0 {
			t.Errorf("log line with duplicate keys %v (%v): %s", dups, err, line)
		}
	}
}
