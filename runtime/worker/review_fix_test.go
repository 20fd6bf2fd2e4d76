package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fleetc/fleetc/runtime/callback"
	"github.com/fleetc/fleetc/runtime/claimcheck"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
	"github.com/fleetc/fleetc/runtime/worker"
)

// flakyStore fails Complete (the UpdateItem that stores a result) while
// failures remain (-1: always); onFail runs on each injected failure.
type flakyStore struct {
	idem.DynamoAPI
	failures atomic.Int64
	onFail   func()
}

func (f *flakyStore) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if in.UpdateExpression != nil && strings.HasPrefix(*in.UpdateExpression, "SET #s = :done") {
		if n := f.failures.Load(); n != 0 {
			if n > 0 {
				f.failures.Add(-1)
			}
			if f.onFail != nil {
				f.onFail()
			}
			return nil, errors.New("injected: DynamoDB 500 on Complete")
		}
	}
	return f.DynamoAPI.UpdateItem(ctx, in, o...)
}

// fixClock is a settable clock shared by the worker and its store.
type fixClock struct{ ns atomic.Int64 }

func (c *fixClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fixClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newFixClock() *fixClock            { c := &fixClock{}; c.ns.Store(time.Now().UnixNano()); return c }
func fixStore(api idem.DynamoAPI, table string, c *fixClock) *idem.Dynamo {
	return &idem.Dynamo{API: api, Table: table, Class: "rv", Window: time.Hour, Now: c.now}
}

// fixWorker is a worker over a kumo table whose handler counts side effects.
// openEmit is an emitted event with an open contract: the worker writes agent_class,
// result and trace_id.
const openEmit = `{"source":"fleet.rv","detail_type":"rv.done","version":1,
 "detail":{"carry":[],"worker_fields":["agent_class","result","trace_id"],"schema":{"type":"object"}}}`

func fixWorker(t *testing.T, api idem.DynamoAPI, table string, c *fixClock, calls *atomic.Int64, emits string, threshold int) *worker.Worker {
	t.Helper()
	bus := ""
	if emits != "" {
		bus = "b"
	}
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"rv","class":"rv","region":"us-east-1","runtime":"eks",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":30,"heartbeat_seconds":10,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":1,"step":{"p95_seconds":1,"max_seconds":10},"retry":{"max_attempts":4,"base_ms":100,"cap_ms":1000},
 "idempotency":{"table":%q,"window_seconds":3600,"key":[]},"claim_check":{"bucket":"","threshold_bytes":%d,"read_prefixes":["inputs/"]},
 "events":{"bus":%q,"bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[%s]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"rv","metrics_addr":""}}`, table, threshold, bus, emits)
	cfg, err := parseCfg(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &worker.Worker{
		Cfg:  cfg,
		Idem: fixStore(api, table, c),
		Handler: handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) {
			calls.Add(1) // the side effect
			return json.RawMessage(`{"ok":true}`), nil
		}),
		Now: c.now,
	}
}

// fakeCallbacks records task callbacks; tokens in stale answer as gone.
type fakeCallbacks struct {
	mu         sync.Mutex
	stale      map[string]bool
	successes  map[string]string // token -> output
	failures   map[string]string // token -> error code
	successErr error
}

func newFakeCallbacks() *fakeCallbacks {
	return &fakeCallbacks{stale: map[string]bool{}, successes: map[string]string{}, failures: map[string]string{}}
}

func (f *fakeCallbacks) Success(_ context.Context, tok string, out []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stale[tok] {
		return fmt.Errorf("%w: TaskTimedOut", callback.ErrStaleToken)
	}
	if f.successErr != nil {
		return f.successErr
	}
	f.successes[tok] = string(out)
	return nil
}

func (f *fakeCallbacks) Failure(_ context.Context, tok, code, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[tok] = code
	return nil
}

func (f *fakeCallbacks) Heartbeat(_ context.Context, tok string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stale[tok] {
		return fmt.Errorf("%w: TaskTimedOut", callback.ErrStaleToken)
	}
	return nil
}

func (f *fakeCallbacks) snapshot() (succ, fail map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	succ, fail = map[string]string{}, map[string]string{}
	for k, v := range f.successes {
		succ[k] = v
	}
	for k, v := range f.failures {
		fail[k] = v
	}
	return succ, fail
}

func code(r worker.Result) string {
	if r.Reason == nil {
		return ""
	}
	return string(r.Reason.Code)
}

// Port of the review's TestReviewCompleteFailureRerunsSideEffect: a
// DynamoDB blip storing the result after the side effect is retried under
// the lease, so the work is finished once and never runs again.
func TestCompleteFailureDoesNotRerunSideEffect(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	api := &flakyStore{DynamoAPI: kumotest.DynamoDB(cfg)}
	api.failures.Store(2)
	clk := newFixClock()
	var calls atomic.Int64
	w := fixWorker(t, api, table, clk, &calls, "", 204800)
	body := []byte(`{"id":"evt-rv-1","detail-type":"x","source":"y","detail":{"trace_id":"rv-1"}}`)
	r1 := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: body, Attempt: 1})
	if r1.Action != queue.Delete || string(r1.Output) != `{"ok":true}` {
		t.Fatalf("first delivery: %v %v", r1.Action, r1.Reason)
	}
	if api.failures.Load() != 0 {
		t.Fatalf("Complete not retried: %d injected failures left", api.failures.Load())
	}
	// A duplicate, now and after the lease would have ended, is answered
	// from the record.
	for i, skip := range []time.Duration{0, 33 * time.Second} {
		clk.add(skip)
		r := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: body, Attempt: 2 + i})
		if r.Action != queue.Delete || !r.Duplicate {
			t.Fatalf("redelivery %d: %v dup=%v %v", i, r.Action, r.Duplicate, r.Reason)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("side effect ran %d times for one unit of work", n)
	}
}

// When the store keeps failing until the lease ends, the worker gives up
// without releasing or deleting: Leave, and the record still says running.
func TestCompleteFailureUntilLeaseEndsLeaves(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	api := &flakyStore{DynamoAPI: kumotest.DynamoDB(cfg), onFail: func() { clk.add(12 * time.Second) }}
	api.failures.Store(-1)
	var calls atomic.Int64
	w := fixWorker(t, api, table, clk, &calls, "", 204800)
	body := []byte(`{"id":"evt-rv-2","detail-type":"x","source":"y","detail":{"trace_id":"rv-2"}}`)
	r := w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: body, Attempt: 1})
	if r.Action != queue.Leave || code(r) != "LeaseLost" {
		t.Fatalf("verdict %v %v, want Leave/LeaseLost", r.Action, r.Reason)
	}
	if calls.Load() != 1 {
		t.Fatalf("side effects %d", calls.Load())
	}
}

// Losing the lease to a reclaimer means Leave (the reclaimer owns the
// message now), not Delete.
func TestLeaseLostLeaves(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	api := kumotest.DynamoDB(cfg)
	var calls atomic.Int64
	w := fixWorker(t, api, table, clk, &calls, "", 204800)
	other := fixStore(api, table, clk)
	w.Handler = handler.Func(func(ctx context.Context, r handler.Request) (json.RawMessage, error) {
		calls.Add(1)
		clk.add(40 * time.Second) // our lease ends mid-step...
		if c, err := other.Acquire(ctx, r.Key, 30*time.Second); err != nil || c.State != idem.Acquired {
			t.Errorf("reclaim: %+v %v", c, err)
		}
		return json.RawMessage(`{}`), nil
	})
	body := []byte(`{"id":"evt-rv-3","detail-type":"x","source":"y","detail":{}}`)
	r := w.Process(context.Background(), worker.Delivery{MessageID: "m3", Body: body, Attempt: 1})
	if r.Action != queue.Leave || code(r) != "LeaseLost" {
		t.Fatalf("verdict %v %v, want Leave/LeaseLost", r.Action, r.Reason)
	}
}

// memPayloads is an in-memory claim-check store.
type memPayloads struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func (m *memPayloads) Resolve(_ context.Context, d []byte) ([]byte, error) { return d, nil }
func (m *memPayloads) Write(_ context.Context, class, key, owner string, out []byte) (*claimcheck.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref := claimcheck.Ref{Type: "s3", Bucket: "mem", Key: claimcheck.OutputKey(class, key, owner)}
	m.objects[ref.Key] = out
	return &ref, nil
}

// Port of TestReviewLargeSFNResultWithoutBucket: an output SendTaskSuccess
// cannot take is never replaced by {"result_ref":null}; with no bucket the
// task fails with ResultTooLarge and the message is dead-lettered, with a
// bucket it is offloaded even under a higher configured threshold.
func TestLargeSFNResultWithoutBucket(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv2")
	clk := newFixClock()
	var calls atomic.Int64
	big := `{"text":"` + strings.Repeat("a", 220*1024) + `"}`
	for _, withBucket := range []bool{false, true} {
		w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, "", 1<<20)
		w.Handler = handler.Func(func(context.Context, handler.Request) (json.RawMessage, error) { return json.RawMessage(big), nil })
		cb := newFakeCallbacks()
		w.Callbacks = cb
		mem := &memPayloads{objects: map[string][]byte{}}
		if withBucket {
			w.Payloads = mem
		}
		body := []byte(fmt.Sprintf(`{"TaskToken":"tok","execution_id":"arn:exec:%v","state":"S","trace_id":"rv-2","detail":{"trace_id":"rv-2"}}`, withBucket))
		r := w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: body, Attempt: 1})
		succ, fail := cb.snapshot()
		if !withBucket {
			if r.Action != queue.DeadLetter || code(r) != "ResultTooLarge" || fail["tok"] != "ResultTooLarge" || len(succ) != 0 {
				t.Fatalf("no bucket: %v %v success=%v failure=%v", r.Action, r.Reason, len(succ), fail)
			}
			continue
		}
		var out struct {
			ResultRef *claimcheck.Ref `json:"result_ref"`
		}
		if r.Action != queue.Delete || json.Unmarshal([]byte(succ["tok"]), &out) != nil || out.ResultRef == nil || string(mem.objects[out.ResultRef.Key]) != big {
			t.Fatalf("with bucket: %v %v success=%.200s", r.Action, r.Reason, succ["tok"])
		}
	}
}

// The receive limit consults the record first: finished work is answered,
// work held by a live lease is left alone (no dead letter, no task
// failure); only unowned work past the limit is dead-lettered.
func TestReceiveLimitConsultsRecord(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	api := kumotest.DynamoDB(cfg)
	var calls atomic.Int64
	w := fixWorker(t, api, table, clk, &calls, "", 204800)
	cb := newFakeCallbacks()
	w.Callbacks = cb
	over := w.Cfg.RetryLimit() + 1

	done := []byte(`{"TaskToken":"tok-done","execution_id":"arn:e","state":"Done","detail":{}}`)
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "a", Body: done, Attempt: 1}); r.Action != queue.Delete {
		t.Fatalf("first run: %v %v", r.Action, r.Reason)
	}
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "a", Body: done, Attempt: over}); r.Action != queue.Delete || !r.Duplicate {
		t.Fatalf("finished work past the limit: %v %v", r.Action, r.Reason)
	}

	// Past the limit, work another live lease holds is waited for inside the receive (never
	// released: that would spend a receive it does not have); here the holder finishes during
	// the wait, and the delivery is answered from its record.
	busy := []byte(`{"TaskToken":"tok-busy","execution_id":"arn:e","state":"Busy","detail":{}}`)
	holder := fixStore(api, table, clk)
	held, err := holder.Acquire(context.Background(), "arn:e/Busy", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	w.Wait = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		clk.add(d / 2) // the holder is still inside its lease when it finishes
		return holder.Complete(ctx, "arn:e/Busy", held.Owner, json.RawMessage(`{"result":1}`), true, 30*time.Second)
	}
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "b", Body: busy, Attempt: over}); r.Action != queue.Delete || !r.Duplicate {
		t.Fatalf("live lease elsewhere past the limit: %v %v, want the finished work answered after holding", r.Action, r.Reason)
	}
	if len(waits) != 1 || waits[0] < 30*time.Second {
		t.Fatalf("busy waits %v, want one wait for the holder's 30 s lease", waits)
	}
	w.Wait = nil

	orphan := []byte(`{"TaskToken":"tok-orphan","execution_id":"arn:e","state":"Orphan","detail":{}}`)
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "c", Body: orphan, Attempt: over}); r.Action != queue.DeadLetter || code(r) != "ReceiveLimitExceeded" {
		t.Fatalf("unowned work past the limit: %v %v", r.Action, r.Reason)
	}
	_, fail := cb.snapshot()
	if len(fail) != 1 || fail["tok-orphan"] != "ReceiveLimitExceeded" {
		t.Fatalf("task failures %v, want only tok-orphan", fail)
	}
	if calls.Load() != 1 {
		t.Fatalf("side effects %d, want 1", calls.Load())
	}
}

// A token that goes stale while a step succeeds: the result is stored
// before the delete, so the task SFN re-dispatches with a new token is
// answered from the record instead of running the side effect again.
func TestStaleTokenAfterSuccessStoresResult(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	var calls atomic.Int64
	w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, "", 204800)
	cb := newFakeCallbacks()
	cb.stale["tok-1"] = true
	w.Callbacks = cb
	w.StepHeartbeat = 5 * time.Millisecond
	w.Handler = handler.Func(func(ctx context.Context, _ handler.Request) (json.RawMessage, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // ignores cancellation: the effect commits
		return json.RawMessage(`{"answer":1}`), nil
	})
	msg := func(tok string) []byte {
		return []byte(`{"TaskToken":"` + tok + `","execution_id":"arn:e","state":"S","entered_time":"2026-01-01T00:00:00Z","detail":{}}`)
	}
	r1 := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: msg("tok-1"), Attempt: 1})
	if r1.Action != queue.Delete || code(r1) != "StaleToken" {
		t.Fatalf("stale: %v %v", r1.Action, r1.Reason)
	}
	r2 := w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: msg("tok-2"), Attempt: 1})
	succ, fail := cb.snapshot()
	if r2.Action != queue.Delete || !r2.Duplicate || succ["tok-2"] != `{"answer":1}` || len(fail) != 0 {
		t.Fatalf("re-dispatched task: %v dup=%v %v success=%v failure=%v", r2.Action, r2.Duplicate, r2.Reason, succ, fail)
	}
	if calls.Load() != 1 {
		t.Fatalf("side effect ran %d times", calls.Load())
	}
}

// A task whose deadline passed before it started is a stale token: delete,
// no dead letter, no SendTaskFailure, no handler call.
func TestSFNDeadlinePassedIsStale(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	var calls atomic.Int64
	w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, "", 204800)
	cb := newFakeCallbacks()
	w.Callbacks = cb
	entered := clk.now().Add(-time.Hour).UTC().Format(time.RFC3339)
	body := []byte(`{"TaskToken":"tok","execution_id":"arn:e","state":"Late","entered_time":"` + entered + `","timeout_seconds":60,"detail":{}}`)
	r := w.Process(context.Background(), worker.Delivery{MessageID: "m", Body: body, Attempt: 1})
	_, fail := cb.snapshot()
	if r.Action != queue.Delete || code(r) != "StaleToken" || len(fail) != 0 || calls.Load() != 0 {
		t.Fatalf("%v %v failures=%v calls=%d", r.Action, r.Reason, fail, calls.Load())
	}
}

type fakePublisher struct{ err error }

func (f *fakePublisher) PublishAll(context.Context, []events.Entry) error { return f.err }

// Permanent rejections (event rejected or too large, SFN InvalidOutput)
// dead-letter with the reason (failing the task) instead of releasing
// forever; transient ones still release.
func TestPermanentDeliveryErrorsDeadLetter(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	var calls atomic.Int64
	emit := openEmit
	for i, tc := range []struct {
		pubErr, cbErr error
		action        queue.Action
		code          string
	}{
		{pubErr: &events.EntryError{Code: "MalformedDetail", Message: "bad", Attempts: 1}, action: queue.DeadLetter, code: "CompletionEventRejected"},
		{pubErr: fmt.Errorf("wrap: %w", events.ErrEntryTooLarge), action: queue.DeadLetter, code: "CompletionEventRejected"},
		{pubErr: &events.EntryError{Code: "ThrottlingException", Message: "slow", Attempts: 4}, action: queue.Release, code: "PublishFailed"},
		{cbErr: fmt.Errorf("%w: InvalidOutput", callback.ErrInvalidOutput), action: queue.DeadLetter, code: "InvalidOutput"},
		{cbErr: errors.New("connection reset"), action: queue.Release, code: "CallbackFailed"},
	} {
		w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, emit, 204800)
		w.Events = &fakePublisher{err: tc.pubErr}
		cb := newFakeCallbacks()
		cb.successErr = tc.cbErr
		w.Callbacks = cb
		tok := fmt.Sprintf("tok-%d", i)
		body := []byte(fmt.Sprintf(`{"TaskToken":%q,"execution_id":"arn:p","state":"S%d","detail":{}}`, tok, i))
		r := w.Process(context.Background(), worker.Delivery{MessageID: "m", Body: body, Attempt: 1})
		_, fail := cb.snapshot()
		if r.Action != tc.action || code(r) != tc.code {
			t.Errorf("case %d: %v %v, want %v %s", i, r.Action, r.Reason, tc.action, tc.code)
		}
		if wantFail := tc.action == queue.DeadLetter; (fail[tok] == tc.code) != wantFail {
			t.Errorf("case %d: task failures %v", i, fail)
		}
	}
}

type recPublisher struct {
	mu      sync.Mutex
	entries []events.Entry
}

func (r *recPublisher) PublishAll(_ context.Context, e []events.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e...)
	return nil
}

// Completion events carry the step's trace context in the X-Ray TraceHeader (the PutEvents
// envelope), and in detail.traceparent only when the contract declares it: an undeclared
// field would break a schema with additionalProperties: false.
func TestCompletionEventCarriesTraceContext(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	var calls atomic.Int64
	declared := `{"source":"fleet.rv","detail_type":"rv.done","version":1,
 "detail":{"carry":[],"worker_fields":["trace_id","traceparent"],"schema":{"type":"object","additionalProperties":false,
  "properties":{"trace_id":{"type":"string"},"traceparent":{"type":"string"}}}}}`
	for i, emit := range []string{openEmit, declared} {
		w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, emit, 204800)
		pub := &recPublisher{}
		w.Events = pub
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		body := []byte(fmt.Sprintf(`{"id":"evt-tc-%d","detail-type":"x","source":"y","detail":{"trace_id":"tc-1"}}`, i))
		if r := w.Process(context.Background(), worker.Delivery{MessageID: "m", Body: body, Attempt: 1, TraceParent: tp}); r.Action != queue.Delete {
			t.Fatalf("%v %v", r.Action, r.Reason)
		}
		if len(pub.entries) != 1 {
			t.Fatalf("entries %d", len(pub.entries))
		}
		e := pub.entries[0]
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			t.Fatal(err)
		}
		got, _ := detail["traceparent"].(string)
		if emit == openEmit && got != "" {
			t.Errorf("undeclared traceparent written into the detail: %s", e.Detail)
		}
		if emit == declared && !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
			t.Errorf("declared traceparent missing: %s", e.Detail)
		}
		if !strings.HasPrefix(e.TraceHeader, "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;") {
			t.Fatalf("TraceHeader %q", e.TraceHeader)
		}
	}
}

// An older worker's record holds a bare inline result that SendTaskSuccess refuses: the dead
// letter's code says why, ResultTooLarge only above callback.MaxOutputBytes and InvalidOutput
// at the cap itself (the boundary of answerTask's size check).
func TestOlderRecordRefusedOutputCode(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	api := kumotest.DynamoDB(cfg)
	var calls atomic.Int64
	w := fixWorker(t, api, table, clk, &calls, "", 204800)
	store := fixStore(api, table, clk)
	ctx := context.Background()
	for i, tc := range []struct {
		size int
		code string
	}{{callback.MaxOutputBytes, "InvalidOutput"}, {callback.MaxOutputBytes + 1, "ResultTooLarge"}} {
		state := fmt.Sprintf("Old%d", i)
		c, err := store.Acquire(ctx, "arn:old/"+state, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		bare := `"` + strings.Repeat("a", tc.size-2) + `"` // a bare JSON string, not the {"result":...} wrapper
		if err := store.Complete(ctx, "arn:old/"+state, c.Owner, json.RawMessage(bare), true, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		cb := newFakeCallbacks()
		cb.successErr = fmt.Errorf("%w: refused", callback.ErrInvalidOutput)
		w.Callbacks = cb
		tok := fmt.Sprintf("tok-old-%d", i)
		body := []byte(fmt.Sprintf(`{"TaskToken":%q,"execution_id":"arn:old","state":%q,"detail":{}}`, tok, state))
		r := w.Process(ctx, worker.Delivery{MessageID: "m", Body: body, Attempt: 1})
		_, fail := cb.snapshot()
		if r.Action != queue.DeadLetter || code(r) != tc.code || fail[tok] != tc.code {
			t.Errorf("%d-byte result: %v %v, task failures %v; want a dead letter %s", tc.size, r.Action, r.Reason, fail, tc.code)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("side effects %d, want 0 (answered from the records)", calls.Load())
	}
}

// A stale token's verdict is its own outcome in the step metrics, apart from successes, so a
// dashboard tells workflows that gave up from work done.
func TestStaleTokenOutcomeLabel(t *testing.T) {
	cfg := kumotest.Require(t)
	table := kumotest.Table(t, cfg, "rv")
	clk := newFixClock()
	var calls atomic.Int64
	w := fixWorker(t, kumotest.DynamoDB(cfg), table, clk, &calls, "", 204800)
	w.Callbacks = newFakeCallbacks()
	tel, err := telemetry.New(telemetry.Options{ServiceName: "rv", Class: w.Cfg.Class, LogWriter: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	w.Telemetry = tel
	entered := clk.now().Add(-time.Hour).UTC().Format(time.RFC3339)
	late := []byte(`{"TaskToken":"tok-late","execution_id":"arn:e","state":"Late","entered_time":"` + entered + `","timeout_seconds":60,"detail":{}}`)
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "m1", Body: late, Attempt: 1}); code(r) != "StaleToken" {
		t.Fatalf("late task: %v %v", r.Action, r.Reason)
	}
	done := []byte(`{"TaskToken":"tok-ok","execution_id":"arn:e","state":"Ok","detail":{}}`)
	if r := w.Process(context.Background(), worker.Delivery{MessageID: "m2", Body: done, Attempt: 1}); r.Action != queue.Delete || r.Reason != nil {
		t.Fatalf("task: %v %v", r.Action, r.Reason)
	}
	fams, err := tel.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != metric.StepDuration {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					got[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if got[telemetry.OutcomeStaleToken] != 1 || got[telemetry.OutcomeSuccess] != 1 || len(got) != 2 {
		t.Errorf("step outcomes %v, want one %s and one %s", got, telemetry.OutcomeStaleToken, telemetry.OutcomeSuccess)
	}
}
