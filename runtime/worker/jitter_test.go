package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

// halfJitter fixes the worker's random source at 0.5 and records every wait instead of
// sleeping: each full-jitter delay is then half its ceiling, so a ceiling that moves (a base,
// a cap, an attempt number) shows in the recorded delays.
type halfJitter struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (h *halfJitter) install(w *worker.Worker) {
	w.Rand = func() float64 { return 0.5 }
	w.Wait = func(_ context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		return nil
	}
}

func (h *halfJitter) recorded() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waits)
}

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, n := range v {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

// A SUCCEEDED job write that keeps failing is tried four times, 100 ms · 2^n apart (capped at
// 1 s, jittered), then the message is released with the class's first backoff: the stored
// result answers the redelivery, which repeats only the write.
func TestJobWriteRetryDelays(t *testing.T) {
	e := newJobsEnv(t)
	var h halfJitter
	h.install(e.w)
	e.w.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	e.handle = func(context.Context, map[string]string) (json.RawMessage, error) {
		return json.RawMessage(`{"artifactUri":"s3://a/r"}`), nil
	}
	const id = "5d0f6c1e-0000-4000-8000-000000000021"
	e.queued(t, id)
	e.w.Jobs = &worker.DynamoJobs{API: &failingWrites{JobsAPI: e.ddb, prefix: "SET #s = :ok"}, Table: e.jobsTable}
	res := e.w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: jobBody(id), Attempt: 1})
	if res.Action != queue.Release || code(res) != string(wire.JobStatusFailed) {
		t.Fatalf("verdict %v %v, want Release/JobStatusFailed", res.Action, res.Reason)
	}
	// The class's retry policy (base 10 ms, cap 100 ms): attempt 1's ceiling is 20 ms.
	if res.Delay != 10*time.Millisecond {
		t.Errorf("released with delay %v, want 10ms (half of the class's second backoff ceiling, 20 ms)", res.Delay)
	}
	if got, want := h.recorded(), ms(50, 100, 200); !slices.Equal(got, want) {
		t.Errorf("waits between the SUCCEEDED writes %v, want %v (half of 100 ms, 200 ms, 400 ms)", got, want)
	}
}

// failingComplete fails the first n result writes with a transient error.
type failingComplete struct {
	idem.Store
	n atomic.Int64
}

func (f *failingComplete) Complete(ctx context.Context, key, owner string, result json.RawMessage, published bool, lease time.Duration) error {
	if f.n.Add(-1) >= 0 {
		return errors.New("injected: ProvisionedThroughputExceeded")
	}
	return f.Store.Complete(ctx, key, owner, result, published, lease)
}

// After the side effect, a result write that fails is retried under the lease (never
// released, which would run the side effect again), 100 ms · 2^n apart, capped at 2 s.
func TestResultWriteRetriesUnderTheLease(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "jitter")
	cfg := eksStepConfig(t, "jt", table, 60, 20)
	var effects atomic.Int64
	store := &failingComplete{Store: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}
	store.n.Store(7)
	w := &worker.Worker{Cfg: cfg, Idem: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
			effects.Add(1)
			return json.RawMessage(`{"ok":true}`), nil
		})}
	var h halfJitter
	h.install(w)
	body := []byte(`{"id":"evt-jitter-1","detail-type":"x","source":"y","detail":{"trace_id":"jitter-1"}}`)
	if res := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: body, Attempt: 1}); res.Action != queue.Delete {
		t.Fatalf("verdict %v %v, want Delete once the write goes through", res.Action, res.Reason)
	}
	if n := effects.Load(); n != 1 {
		t.Errorf("%d side effects, want 1", n)
	}
	if got, want := h.recorded(), ms(50, 100, 200, 400, 800, 1000, 1000); !slices.Equal(got, want) {
		t.Errorf("waits between the result writes %v, want %v (half of 100 ms · 2^n, capped at 2 s)", got, want)
	}
}
