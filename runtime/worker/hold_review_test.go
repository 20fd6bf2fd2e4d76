package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// A throttle that names no wait (Retry-After: 0, retry-after-ms: 0, a router cooldown that
// is just ending) must not make the hold call the dependency back in a tight loop: each
// wait is at least the class's retry base (100 ms here). Idempotency on kumo.
func TestHoldZeroThrottleDoesNotSpin(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "zthr")
	cfg := eksStepConfig(t, "zthr", table, 60, 20)
	answers := []error{
		retry.Throttled(wire.ModelUnavailable, 0, errors.New("cooldown ending")),
		retry.FromResponse(429, http.Header{"Retry-After-Ms": {"0"}}, "rate limited"),
		retry.FromStatus(503, "0", "overloaded"),
		nil,
	}
	w := scriptedWorker(awsCfg, cfg, table, answers)
	var h halfJitter
	h.install(w)
	res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: []byte(`{"trace_id":"zthr-1"}`), Attempt: 1})
	if res.Action != queue.Delete {
		t.Fatalf("verdict %v %v, want Delete", res.Action, res.Reason)
	}
	got := h.recorded()
	if len(got) != 3 {
		t.Fatalf("waits %v, want 3", got)
	}
	for _, d := range got {
		if d < cfg.Retry.Base() {
			t.Errorf("waits %v: a zero throttle was retried after %v, below the retry base %v (a spin)", got, d, cfg.Retry.Base())
		}
	}
}

// A throttle naming an absurd wait (retry-after-ms near 2^53, Retry-After of 10^11 s) ends
// the receive (the wait passes the window: released, a receive spent), after one call: the
// delay must not overflow into a negative wait that retries at once.
func TestHoldHugeThrottleReleases(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "hthr")
	cfg := eksStepConfig(t, "hthr", table, 60, 20)
	for i, throttle := range []error{
		retry.FromResponse(429, http.Header{"Retry-After-Ms": {"9007199254740000"}}, "rate limited"),
		retry.FromStatus(429, "100000000000", "rate limited"),
	} {
		calls := 0
		w := &worker.Worker{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour},
			Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
				calls++
				if calls > 3 {
					return json.RawMessage(`{"ok":true}`), nil // a spinning hold ends here
				}
				return nil, throttle
			})}
		var h halfJitter
		h.install(w)
		w.Rand = func() float64 { return 0 } // the throttle's wait exactly as parsed
		res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: []byte(`{"trace_id":"hthr-` + string(rune('a'+i)) + `"}`), Attempt: 1})
		if res.Action != queue.Release || calls != 1 {
			t.Errorf("throttle %v: verdict %v %v after %d calls (waits %v), want Release after 1 call", throttle, res.Action, res.Reason, calls, h.recorded())
			continue
		}
		if res.Delay < time.Hour {
			t.Errorf("throttle %v: released with delay %v, want the long named wait (capped), not a short one", throttle, res.Delay)
		}
	}
}

// A hold whose lease ran out during its wait (the renewals failed: here there are none, and
// the clock passes the 5 s lease during a 6 s throttle) must not call the handler again:
// another worker may own the step by now, and a second call repeats the side effect. The
// verdict is LeaseLost (Leave), as when the lease is found gone before the wait.
func TestHoldLeaseLapsedDuringWaitStops(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "lapse")
	cfg := eksStepConfig(t, "lapse", table, 5, 2)
	clock := time.Now()
	calls := 0
	w := &worker.Worker{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return clock },
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour, Now: func() time.Time { return clock }},
		Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
			calls++
			if calls == 1 {
				return nil, retry.Throttled(wire.ModelUnavailable, 6*time.Second, errors.New("cooling down"))
			}
			return json.RawMessage(`{"ok":true}`), nil
		})}
	w.Rand = func() float64 { return 0 }
	w.Wait = func(_ context.Context, d time.Duration) error { clock = clock.Add(d); return nil }
	res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: []byte(`{"trace_id":"lapse-1"}`), Attempt: 1})
	if calls != 1 || res.Action != queue.Leave || code(res) != string(wire.LeaseLost) {
		t.Errorf("%d handler calls, verdict %v %v; want 1 call and Leave/LeaseLost (the lease ended during the wait)", calls, res.Action, res.Reason)
	}
}

// SIGTERM during a hold's wait (a 20 s throttle) hands the message back at once: the poller
// stops within a second or two, not when the 25 s drain budget cancels the step, and the
// message is visible again for another worker right away. On kumo, the real poller.
func TestHoldReleasesAtSIGTERM(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1, stepMax: 120})
	e.send(envelope("evt-sigterm", stepSpec{TraceID: "sigterm-1", Behavior: "throttle", FaultMS: 120000, RetryAfterMS: 20000}), "")
	_, stop := e.startWorker(25 * time.Second)
	waitFor(t, "the first throttled call", 15*time.Second, func() bool {
		calls, _ := e.fx.snapshot()
		return calls["sigterm-1"] >= 1
	})
	time.Sleep(300 * time.Millisecond) // into the 20 s wait
	start := time.Now()
	stop() // the poller's context ends: SIGTERM
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the poller stopped %v after SIGTERM: the hold waited out its throttle", took.Round(time.Millisecond))
	}
	out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), WaitTimeSeconds: 3, VisibilityTimeout: 30})
	if err != nil || len(out.Messages) != 1 {
		t.Errorf("the held message is not back in the queue 3 s after SIGTERM: %v %v", out, err)
	}
}
