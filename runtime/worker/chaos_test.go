package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// Chaos on the poll (EKS) mode, on kumo: each fault is absorbed as backlog and the ledger
// balances (submitted = completed once, 0 dead-lettered, 0 duplicated side effects). The
// class gets max_attempts 2 with retry base 100 ms, cap 1 s, a 2 s visibility with a 1 s
// heartbeat and step.max 30 s: under the old model (each failure released, spending a
// receive) a fault outlasting 2 receives (~3 s with a 1 s retry-after) dead-lettered the step.

// A 429 wave with retry-after-ms 1000 lasting 6 s on every step: each step is held in its
// receive through ~6 throttles, none counted, and completes once. The throttle's named delay
// is honoured (not a shorter backoff).
func TestChaosPollThrottleWave(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 2, maxReceives: 3})
	ks := keys("throttle", 4)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k, Behavior: "throttle", FaultMS: 6000, RetryAfterMS: 1000}), "")
	}
	start := time.Now()
	e.startWorker(5 * time.Second)
	e.startWorker(5 * time.Second)
	l := e.account(ks, nil, 40*time.Second)
	calls, _ := e.fx.snapshot()
	for _, k := range ks {
		// 6 s of throttle at one try per ≥1 s: 6–8 tries (the last one succeeds).
		if calls[k] < 6 || calls[k] > 8 {
			t.Errorf("key %s: %d handler calls through a 6 s wave of 1 s throttles, want 6–8", k, calls[k])
		}
	}
	t.Logf("429 wave of 6 s: %d steps done in %v, ledger %+v", len(ks), time.Since(start).Round(time.Millisecond), l)
}

// A retryable failure (503, no retry-after) lasting 4 s: full-jitter backoff inside the
// receive (capped at 1 s) until it clears; completed once, nothing dead-lettered.
func TestChaosPollRetryableOutage(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 2, maxReceives: 3})
	ks := keys("outage", 4)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k, Behavior: "outage", FaultMS: 4000}), "")
	}
	start := time.Now()
	e.startWorker(5 * time.Second)
	l := e.account(ks, nil, 40*time.Second)
	t.Logf("4 s outage: done in %v, ledger %+v", time.Since(start).Round(time.Millisecond), l)
}

// crashStore is a worker's idempotency store as a killed worker leaves it: nothing given back.
type crashStore struct {
	idem.Store
	beats chan struct{} // one per successful lease renewal
}

func (c *crashStore) Abandon(context.Context, string, string) error { return nil }

func (c *crashStore) Extend(ctx context.Context, key, owner string, lease time.Duration) error {
	err := c.Store.Extend(ctx, key, owner, lease)
	if err == nil {
		select {
		case c.beats <- struct{}{}:
		default:
		}
	}
	return err
}

// crashMidStep runs d on a worker that is killed after renewing its lease once: its context
// is cut, its claim is never given back and its verdict is never applied, so its lease
// outlives the message's visibility, as a kill -9 after a heartbeat leaves it.
func crashMidStep(t *testing.T, w *worker.Worker, store *crashStore, d worker.Delivery) {
	t.Helper()
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Process(ctx, d) }() // the verdict dies with the worker
	select {
	case <-store.beats:
	case <-time.After(10 * time.Second):
		t.Fatal("the doomed worker never renewed its lease")
	}
	kill()
	<-done
}

// A worker killed mid-step (after a lease renewal, so its lease outlives the message's
// visibility) on the class's last usable receive but one: the next receive finds the dead
// worker's lease (Busy), holds the message until it lapses and takes the step over in that
// same receive. Under the old model it released (spending the last receive) and the step was
// dead-lettered (ReceiveLimitExceeded or the redrive policy).
func TestChaosPollWorkerKilledTakenOver(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{heartbeat: 1, maxAttempts: 2, maxReceives: 2})
	const k = "killed-1"
	e.send(envelope("evt-"+k, stepSpec{TraceID: k, SleepMS: 3000}), "")
	out, err := e.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 1,
		VisibilityTimeout: 2, WaitTimeSeconds: 1, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("the doomed worker's receive: %v %v", out, err)
	}
	h, err := handler.NewHTTP(e.fx.srv.URL+"/step", nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &crashStore{Store: &idem.Dynamo{API: e.ddb, Table: e.cfg.Idempotency.Table, Class: e.cfg.Class, Window: time.Hour}, beats: make(chan struct{}, 1)}
	doomed := &worker.Worker{Cfg: e.cfg, Handler: h, Idem: store, StepHeartbeat: time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	crashMidStep(t, doomed, store, step.DeliveryOf(queue.FromSQS(out.Messages[0], time.Now())))
	e.startWorker(5 * time.Second)
	l := e.account([]string{k}, nil, 30*time.Second)
	if l.Attempts != 2 {
		t.Errorf("handler attempts %d, want 2 (the killed one, the takeover)", l.Attempts)
	}
}

// A throttle that outlasts the run's deadline (or the event's TTL) is dead-lettered
// DeadlineExceeded, its message naming the bound and the throttle, its cause the throttle
// itself; the throttles before it were waited for with their named delay (+5 % at jitter
// 0.5), not counted.
func TestThrottlePastDeadlineDeadLetters(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "thr")
	cfg := eksStepConfig(t, "thr", table, 60, 20)
	for _, tc := range []struct {
		name, bound string
		body        func(now time.Time) string
	}{
		{"deadline", "run's deadline", func(now time.Time) string {
			return `{"id":"evt-thr-1","detail-type":"x","source":"y","detail":{"trace_id":"thr-1","deadline":"` + now.Add(5*time.Second).UTC().Format(time.RFC3339Nano) + `"}}`
		}},
		{"ttl", "event's TTL", func(now time.Time) string {
			return `{"id":"evt-thr-2","detail-type":"x","source":"y","time":"` + now.UTC().Format(time.RFC3339Nano) + `","detail":{"trace_id":"thr-2","ttl_seconds":5}}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Now()
			calls := 0
			w := &worker.Worker{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return clock },
				Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour, Now: func() time.Time { return clock }},
				Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
					calls++
					return nil, retry.FromResponse(429, http.Header{"Retry-After-Ms": {"2000"}}, "rate limited")
				})}
			var waits []time.Duration
			w.Rand = func() float64 { return 0.5 }
			w.Wait = func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				clock = clock.Add(d)
				return nil
			}
			res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: []byte(tc.body(clock)), Attempt: 1})
			if res.Action != queue.DeadLetter || code(res) != string(wire.DeadlineExceeded) {
				t.Fatalf("verdict %v %v, want a DeadlineExceeded dead letter", res.Action, res.Reason)
			}
			if m := res.Reason.Message; !strings.Contains(m, "during a throttle") || !strings.Contains(m, "HTTP429") || !strings.Contains(m, tc.bound) {
				t.Errorf("dead letter message %q does not name the %s and the throttle", m, tc.bound)
			}
			var cause *retry.Error
			if !errors.As(res.Reason.Err, &cause) || !cause.Throttle {
				t.Errorf("dead letter cause %v, want the throttle", res.Reason.Err)
			}
			if want := ms(2100, 2100); calls != 3 || !slices.Equal(waits, want) {
				t.Errorf("%d calls, waits %v; want 3 calls and waits %v (the third 2.1 s wait would pass the 5 s bound)", calls, waits, want)
			}
		})
	}
}

// Inside one receive, throttles do not count as failures: a failure after two throttles
// backs off from the first ceiling (base 100 ms · 2), and the second failure from the next.
func TestHoldBackoffCountsFailuresNotThrottles(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "hold")
	cfg := eksStepConfig(t, "hold", table, 60, 20)
	answers := []error{
		retry.Throttled(wire.ModelUnavailable, time.Second, errors.New("cooling down")),
		retry.Throttled(wire.ModelUnavailable, time.Second, errors.New("cooling down")),
		retry.FromStatus(503, "", "down"),
		retry.FromStatus(503, "", "down"),
		nil,
	}
	w := scriptedWorker(awsCfg, cfg, table, answers)
	var h halfJitter
	h.install(w)
	res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: []byte(`{"trace_id":"hold-1"}`), Attempt: 1})
	if res.Action != queue.Delete {
		t.Fatalf("verdict %v %v, want Delete after the faults", res.Action, res.Reason)
	}
	if got, want := h.recorded(), ms(1050, 1050, 100, 200); !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v (two throttles of 1 s + 5 %%, then half of 200 ms and 400 ms)", got, want)
	}
}

// scriptedWorker is a worker whose handler answers each call with the next of answers (nil:
// success), its idempotency table on kumo.
func scriptedWorker(awsCfg aws.Config, cfg *config.Config, table string, answers []error) *worker.Worker {
	n := 0
	return &worker.Worker{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour},
		Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
			err := answers[n]
			n++
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`{"ok":true}`), nil
		})}
}
