package dispatch_test

// The SQS side runs on kumo. AgentCore has no local emulator, so fakeAgentCore is an
// httptest server that speaks the InvokeAgentRuntime wire format as the AWS API reference
// documents it (POST /runtimes/{agentRuntimeArn}/invocations?qualifier=..., the
// X-Amzn-Bedrock-AgentCore-Runtime-Session-Id header of 33 to 256 characters, errors as
// JSON {"message"} with their X-Amzn-ErrorType) and asserts every request; by default it
// hands the invocation to fleet-worker's real AgentCore server (runtime/agentcore), as
// AgentCore hands it to the container's POST /invocations.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/agentcore"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/runtime/worker"
)

const testARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/fx_deep-Ab12Cd34Ef"

// call is one InvokeAgentRuntime request the fake saw.
type call struct {
	Session string
	Attempt string
	Body    string
	Answer  string // the envelope or body answered (forwarded calls only)
}

type fakeAgentCore struct {
	t     *testing.T
	inner http.Handler

	mu     sync.Mutex
	script []http.HandlerFunc // canned answers, used before forwarding
	calls  []call
}

func (f *fakeAgentCore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost {
		t.Errorf("method %s, want POST", r.Method)
	}
	if want := "/runtimes/" + testARN + "/invocations"; r.URL.Path != want {
		t.Errorf("path %q, want %q", r.URL.Path, want)
	}
	// The ARN is one label: its '/' travels percent-encoded.
	if !strings.Contains(r.URL.EscapedPath(), "runtime%2Ffx_deep") {
		t.Errorf("escaped path %q: the ARN's '/' is not encoded", r.URL.EscapedPath())
	}
	if q := r.URL.Query().Get("qualifier"); q != "DEFAULT" {
		t.Errorf("qualifier %q", q)
	}
	session := r.Header.Get(agentcore.SessionHeader)
	if n := len(session); n < dispatch.MinSessionID || n > dispatch.MaxSessionID {
		t.Errorf("session id %q has %d characters, want 33..256", session, n)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if a := r.Header.Get("Accept"); a != wire.OutcomeMediaType {
		t.Errorf("Accept %q", a)
	}
	if az := r.Header.Get("Authorization"); !strings.HasPrefix(az, "AWS4-HMAC-SHA256 ") || !strings.Contains(az, "/us-east-1/bedrock-agentcore/aws4_request") {
		t.Errorf("Authorization %q: not SigV4 for bedrock-agentcore", az)
	}
	if v := r.Header.Get(wire.HeaderOutcome); v != "1" {
		t.Errorf("%s = %q, want 1", wire.HeaderOutcome, v)
	}
	attempt := r.Header.Get(wire.HeaderAttempt)
	if n, err := strconv.Atoi(attempt); err != nil || n < 1 {
		t.Errorf("%s = %q, want the receive count", wire.HeaderAttempt, attempt)
	}
	if !strings.Contains(r.Header.Get("Authorization"), strings.ToLower(wire.HeaderAttempt)) {
		t.Errorf("the custom headers are not signed: %s", r.Header.Get("Authorization"))
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, call{Session: session, Attempt: attempt, Body: string(body)})
	i := len(f.calls) - 1
	var canned http.HandlerFunc
	if len(f.script) > 0 {
		canned, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if canned != nil {
		canned(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery = "/invocations", "", ""
	r2.Body = io.NopCloser(bytes.NewReader(body))
	// AgentCore does not pass Accept (a restricted header) or the caller's signature on to the
	// container: the custom header alone must select the envelope.
	r2.Header.Del("Accept")
	r2.Header.Del("Authorization")
	rec := httptest.NewRecorder()
	f.inner.ServeHTTP(rec, r2)
	f.mu.Lock()
	f.calls[i].Answer = rec.Body.String()
	f.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func (f *fakeAgentCore) queue(h ...http.HandlerFunc) {
	f.mu.Lock()
	f.script = append(f.script, h...)
	f.mu.Unlock()
}

func (f *fakeAgentCore) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// awsError answers as the bedrock-agentcore REST-JSON protocol does.
func awsError(status int, typ, msg string, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazonaws.bedrockagentcore/")
		w.Header().Set("X-Amzn-Requestid", "req-1")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"message":%q}`, msg)
	}
}

type harness struct {
	t        *testing.T
	fake     *fakeAgentCore
	server   *agentcore.Server
	cfg      *config.Config
	sqs      *sqs.Client
	queueURL string
	dlqURL   string
	disp     *dispatch.Dispatcher

	mu      sync.Mutex
	effects map[string]int
}

// newHarness makes the test's own queues and idempotency table on kumo (kumotest names) and
// its own fake AgentCore server: nothing is shared, so the tests that wait on kumo for seconds
// run in parallel (t.Parallel); the ones that t.Setenv stay sequential.
func newHarness(t *testing.T, syncLimit time.Duration) *harness {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "dispidem")
	_, qurl := kumotest.Queue(t, awsCfg, "disp", false, nil)
	_, dlq := kumotest.Queue(t, awsCfg, "dispdlq", false, nil)
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"fx","class":"deep","region":"us-east-1","runtime":"agentcore",
 "queue":{"name":"q","dlq_name":"d","fifo":false,"group_by":"","visibility_timeout_seconds":2,"heartbeat_seconds":1,"wait_time_seconds":1,"max_messages":10,"max_receives":4},
 "concurrency":4,"step":{"p95_seconds":1,"max_seconds":30},"retry":{"max_attempts":3,"base_ms":100,"cap_ms":300},
 "idempotency":{"table":%q,"window_seconds":3600,"key":["trace_id"]},"claim_check":{"bucket":"","threshold_bytes":204800,"read_prefixes":["inputs/"]},
 "agentcore":{"runtime_name":"fx_deep","qualifier":"DEFAULT","session_field":"conversation_id","sync_limit_seconds":60},
 "events":{"bus":"","bus_model":"classic","max_entries":10,"fill_order":["worker","output","carried"],"emits":[]},"handler":{"type":"http","url":"http://127.0.0.1:1/step"},
 "models":{"policy":"","policies":{}},"telemetry":{"service_name":"fx-deep","metrics_addr":""}}`, table)
	cfg, err := config.Parse("deep.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QueueURL, cfg.DLQURL = qurl, dlq
	h := &harness{t: t, cfg: cfg, sqs: awsconfig.SQS(awsCfg), queueURL: qurl, dlqURL: dlq, effects: map[string]int{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	step := handler.Func(func(ctx context.Context, req handler.Request) (json.RawMessage, error) {
		switch {
		case strings.HasPrefix(req.Key, "poison"):
			return nil, retry.Permanent("NoQuestion", errors.New("the request names no question"))
		case strings.HasPrefix(req.Key, "flaky"):
			return nil, retry.FromStatus(503, "", "model overloaded")
		case strings.HasPrefix(req.Key, "slow"), strings.HasPrefix(req.Key, "long"):
			d := 3 * time.Second
			if strings.HasPrefix(req.Key, "long") {
				d = 30 * time.Second
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		h.mu.Lock()
		h.effects[req.Key]++
		h.mu.Unlock()
		return json.RawMessage(fmt.Sprintf(`{"answer":%q}`, req.Key)), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: step, Log: log, StepHeartbeat: 500 * time.Millisecond,
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}
	h.server = &agentcore.Server{Worker: w, Log: log, SyncLimit: syncLimit}
	h.fake = &fakeAgentCore{t: t, inner: h.server.Handler()}
	srv := httptest.NewServer(h.fake)
	t.Cleanup(srv.Close)
	client := bedrockagentcore.NewFromConfig(awsCfg, func(o *bedrockagentcore.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	h.disp, err = dispatch.New(cfg, client, testARN)
	if err != nil {
		t.Fatal(err)
	}
	h.disp.Log = log
	return h
}

func (h *harness) send(body string) {
	h.t.Helper()
	if _, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(h.queueURL), MessageBody: aws.String(body)}); err != nil {
		h.t.Fatal(err)
	}
}

// run consumes the queue with the dispatcher until done reports true (or 20 s pass).
func (h *harness) run(done func(*queue.Consumer) bool) *queue.Consumer {
	h.t.Helper()
	rt := &worker.Runtime{Cfg: h.cfg, Worker: &worker.Worker{Cfg: h.cfg}, SQS: h.sqs, Log: h.disp.Log}
	c, err := dispatch.NewPoller(h.disp, rt.Host(), 5*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !done(c) {
		if time.Now().After(deadline) {
			h.t.Errorf("timed out: received %d, deleted %d, released %d, dead-lettered %d",
				c.Stats.Received.Load(), c.Stats.Deleted.Load(), c.Stats.Released.Load(), c.Stats.DeadLettered.Load())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		h.t.Errorf("consumer: %v", err)
	}
	return c
}

func (h *harness) effect(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.effects[key]
}

func (h *harness) dlq() []sqstypes.Message {
	h.t.Helper()
	out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.dlqURL),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
	if err != nil {
		h.t.Fatal(err)
	}
	return out.Messages
}

func event(trace, conversation string) string {
	return fmt.Sprintf(`{"version":"0","id":"e-%s","detail-type":"task.requested","source":"fx.app","time":"2026-11-30T00:00:00Z","detail":{"trace_id":%q,"conversation_id":%q}}`, trace, trace, conversation)
}

func deleted(n int64) func(*queue.Consumer) bool {
	return func(c *queue.Consumer) bool { return c.Stats.Deleted.Load() >= n }
}

// A normal step: one call carrying the message body, in the conversation's session; the
// step runs once inside the runtime and the message is deleted.
func TestNormalStep(t *testing.T) {
	h := newHarness(t, 0)
	body := event("t-1", "conv-42")
	h.send(body)
	c := h.run(deleted(1))
	calls := h.fake.seen()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	if calls[0].Body != body {
		t.Errorf("payload %s, want the message body %s", calls[0].Body, body)
	}
	if calls[0].Attempt != "1" {
		t.Errorf("attempt header %q, want 1", calls[0].Attempt)
	}
	if want := dispatch.SessionID("deep", "conv-42"); calls[0].Session != want {
		t.Errorf("session %s, want %s (from conversation_id)", calls[0].Session, want)
	}
	if !strings.Contains(calls[0].Answer, `"outcome":"done"`) || !strings.Contains(calls[0].Answer, `"answer":"t-1"`) {
		t.Errorf("answer %s", calls[0].Answer)
	}
	if h.effect("t-1") != 1 || c.Stats.Released.Load() != 0 || c.Stats.DeadLettered.Load() != 0 {
		t.Errorf("effects %d, released %d, dead-lettered %d", h.effect("t-1"), c.Stats.Released.Load(), c.Stats.DeadLettered.Load())
	}
}

// Throttling: ThrottlingException (429) is retried by the queue, with the server's
// Retry-After; the step then runs once.
func TestThrottling(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 0)
	h.fake.queue(awsError(429, "ThrottlingException", "Rate exceeded", "1"))
	h.send(event("t-throttle", "conv-1"))
	c := h.run(deleted(1))
	if n := len(h.fake.seen()); n != 2 {
		t.Errorf("%d calls, want 2 (throttled, then served)", n)
	}
	if c.Stats.Released.Load() != 1 || h.effect("t-throttle") != 1 {
		t.Errorf("released %d, effects %d; want 1 and 1", c.Stats.Released.Load(), h.effect("t-throttle"))
	}
}

// A runtime that is down: AgentCore answers RuntimeClientError (424) while the container
// fails, then 500; both are released, and the step runs once the runtime is back.
func TestRuntimeDown(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 0)
	h.fake.queue(
		awsError(424, "RuntimeClientError", "Received error (502) from runtime. Please check your runtime logs.", ""),
		awsError(500, "InternalServerException", "Internal error", ""),
	)
	h.send(event("t-down", "conv-2"))
	c := h.run(deleted(1))
	if c.Stats.Released.Load() != 2 || h.effect("t-down") != 1 || c.Stats.DeadLettered.Load() != 0 {
		t.Errorf("released %d, effects %d, dead-lettered %d; want 2, 1, 0", c.Stats.Released.Load(), h.effect("t-down"), c.Stats.DeadLettered.Load())
	}
}

// A runtime that stays down exhausts the retries: the message is dead-lettered with the
// AgentCore error as its reason.
func TestRuntimeDownExhaustsRetries(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 0)
	for range 5 {
		h.fake.queue(awsError(424, "RuntimeClientError", "Received error (502) from runtime", ""))
	}
	h.send(event("t-gone", "conv-3"))
	h.run(func(c *queue.Consumer) bool { return c.Stats.DeadLettered.Load() >= 1 })
	msgs := h.dlq()
	if len(msgs) != 1 {
		t.Fatalf("%d DLQ messages, want 1", len(msgs))
	}
	code := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorCode].StringValue)
	why := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorMessage].StringValue)
	if code != "RetriesExhausted" || !strings.Contains(why, "RuntimeClientError") {
		t.Errorf("DLQ reason %s: %s", code, why)
	}
}

// Work past the synchronous limit: the runtime answers busy after the (shortened) limit and
// keeps the step running; the dispatcher holds the message through the queue's heartbeat
// (the step outlives the 2 s visibility timeout) and asks again until it is done. No receive
// is spent on the busy answers and the step runs once.
func TestPastSyncLimit(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 700*time.Millisecond)
	h.send(event("slow-1", "conv-4"))
	c := h.run(deleted(1))
	calls := h.fake.seen()
	busy := 0
	for _, cl := range calls {
		if strings.Contains(cl.Answer, `"outcome":"busy"`) {
			busy++
		}
		if cl.Session != calls[0].Session {
			t.Errorf("re-invocation in session %s, first in %s", cl.Session, calls[0].Session)
		}
	}
	if busy < 2 || !strings.Contains(calls[len(calls)-1].Answer, `"outcome":"done"`) {
		t.Errorf("calls: %+v; want busy answers then done", calls)
	}
	if c.Stats.Received.Load() != 1 || c.Stats.Released.Load() != 0 || h.effect("slow-1") != 1 {
		t.Errorf("received %d, released %d, effects %d; want 1, 0, 1", c.Stats.Received.Load(), c.Stats.Released.Load(), h.effect("slow-1"))
	}
	if c.Stats.Extended.Load() == 0 {
		t.Error("no visibility heartbeat while the step ran past the visibility timeout")
	}
}

// A duplicate: a second message for the same work is answered from the idempotency record
// (duplicate: true) without running the step again.
func TestDuplicateFromIdempotencyRecord(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 0)
	h.send(event("t-dup", "conv-5"))
	h.run(deleted(1))
	h.send(event("t-dup", "conv-5"))
	h.run(deleted(1))
	calls := h.fake.seen()
	if len(calls) != 2 || !strings.Contains(calls[1].Answer, `"duplicate":true`) || !strings.Contains(calls[1].Answer, `"answer":"t-dup"`) {
		t.Errorf("calls %+v; want the second answered as a duplicate with the stored result", calls)
	}
	if h.effect("t-dup") != 1 {
		t.Errorf("the step ran %d times, want 1", h.effect("t-dup"))
	}
}

// A poison message: the step fails for good inside the runtime, which says dead_letter (HTTP
// 200, so AgentCore passes it on); the message goes to the DLQ with the step's reason.
func TestPoisonToDLQ(t *testing.T) {
	h := newHarness(t, 0)
	h.send(event("poison-1", "conv-6"))
	c := h.run(func(c *queue.Consumer) bool { return c.Stats.DeadLettered.Load() >= 1 })
	msgs := h.dlq()
	if len(msgs) != 1 {
		t.Fatalf("%d DLQ messages, want 1", len(msgs))
	}
	code := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorCode].StringValue)
	why := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorMessage].StringValue)
	if code != "NoQuestion" || !strings.Contains(why, "names no question") {
		t.Errorf("DLQ reason %s: %s", code, why)
	}
	if len(h.fake.seen()) != 1 || c.Stats.Released.Load() != 0 {
		t.Errorf("%d calls, %d releases; a permanent failure is not retried", len(h.fake.seen()), c.Stats.Released.Load())
	}
}

// A request AgentCore rejects (ValidationException, 400) cannot succeed on retry: it is
// dead-lettered at once with the AWS error code.
func TestValidationErrorToDLQ(t *testing.T) {
	h := newHarness(t, 0)
	h.fake.queue(awsError(400, "ValidationException", "1 validation error detected: runtimeSessionId", ""))
	h.send(event("t-invalid", "conv-7"))
	h.run(func(c *queue.Consumer) bool { return c.Stats.DeadLettered.Load() >= 1 })
	msgs := h.dlq()
	if len(msgs) != 1 || aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorCode].StringValue) != "ValidationException" {
		t.Fatalf("DLQ %+v, want one message with ERROR_CODE ValidationException", msgs)
	}
}

// An agent that is not fleet-worker answers its own JSON or an event stream: done.
func TestForeignAgentAnswers(t *testing.T) {
	h := newHarness(t, 0)
	h.fake.queue(
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"result":"plain json"}`))
		},
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			for _, chunk := range []string{"data: {\"delta\":\"hel\"}\n\n", "data: {\"delta\":\"lo\"}\n\n"} {
				w.Write([]byte(chunk))
				fl.Flush()
				time.Sleep(50 * time.Millisecond)
			}
		},
	)
	h.send(event("t-json", "conv-8"))
	h.send(event("t-sse", "conv-9"))
	c := h.run(deleted(2))
	if c.Stats.Released.Load() != 0 || c.Stats.DeadLettered.Load() != 0 || len(h.fake.seen()) != 2 {
		t.Errorf("released %d, dead-lettered %d, calls %d", c.Stats.Released.Load(), c.Stats.DeadLettered.Load(), len(h.fake.seen()))
	}
}

func TestSessionID(t *testing.T) {
	a, b := dispatch.SessionID("deep", "conv-1"), dispatch.SessionID("deep", "conv-1")
	if a != b || len(a) < dispatch.MinSessionID || len(a) > dispatch.MaxSessionID {
		t.Errorf("dispatch.SessionID %q (%d chars): want deterministic, 33..256", a, len(a))
	}
	if dispatch.SessionID("deep", "conv-2") == a || dispatch.SessionID("other", "conv-1") == a {
		t.Error("different conversations or classes share a session")
	}
}

// A runtime that cannot be reached at all (connection refused) is retried, not dead-lettered.
func TestUnreachableIsRetried(t *testing.T) {
	awsCfg := kumotest.Require(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	d := &dispatch.Dispatcher{API: bedrockagentcore.NewFromConfig(awsCfg, func(o *bedrockagentcore.Options) { o.BaseEndpoint = aws.String(url) }),
		RuntimeARN: testARN, Class: "deep", SyncLimit: time.Second, Hold: time.Second,
		Policy: retry.Policy{MaxAttempts: 3, Base: 100 * time.Millisecond, Cap: time.Second}}
	out := d.ProcessMessage(context.Background(), &queue.Message{ID: "m-1", Body: event("t-x", "c"), ReceiveCount: 1})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "RuntimeUnreachable" {
		t.Errorf("outcome %+v reason %+v, want a release (RuntimeUnreachable)", out, out.Reason)
	}
}

// A step that keeps failing retryably inside the runtime: each call carries the receive count,
// so the runtime's own policy dead-letters it at the last attempt (as on every other runtime,
// failing a task token too), with the step's error in the reason.
func TestRetriesExhaustedInsideRuntime(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 0)
	h.cfg.Step.MaxSeconds = 1 // each receive holds the failing step through a 1 s window
	h.send(event("flaky-1", "conv-10"))
	c := h.run(func(c *queue.Consumer) bool { return c.Stats.DeadLettered.Load() >= 1 })
	calls := h.fake.seen()
	var attempts []string
	for _, cl := range calls {
		attempts = append(attempts, cl.Attempt)
	}
	if strings.Join(attempts, ",") != "1,2,3" || c.Stats.Released.Load() != 2 {
		t.Errorf("attempts %v, released %d; want 1,2,3 and 2", attempts, c.Stats.Released.Load())
	}
	if last := calls[len(calls)-1].Answer; !strings.Contains(last, `"outcome":"dead_letter"`) || !strings.Contains(last, "RetriesExhausted") {
		t.Errorf("last answer %s, want the runtime's dead_letter", last)
	}
	msgs := h.dlq()
	if len(msgs) != 1 {
		t.Fatalf("%d DLQ messages, want 1", len(msgs))
	}
	code := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorCode].StringValue)
	why := aws.ToString(msgs[0].MessageAttributes[queue.AttrErrorMessage].StringValue)
	if code != "RetriesExhausted" || !strings.Contains(why, "HTTP503") {
		t.Errorf("DLQ reason %s: %s", code, why)
	}
}

type failedTasks struct {
	mu    sync.Mutex
	calls []string
}

func (f *failedTasks) Failure(_ context.Context, token, code, cause string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, token+" "+code+" "+cause)
	return nil
}

// A workflow step the dispatcher dead-letters itself (AgentCore rejected the call, so the
// runtime never saw it) fails its task token too, as every other class's dead letter does.
func TestDispatcherDeadLetterFailsTask(t *testing.T) {
	h := newHarness(t, 0)
	tasks := &failedTasks{}
	h.disp.Tasks = tasks
	h.fake.queue(awsError(403, "AccessDeniedException", "not authorized to perform bedrock-agentcore:InvokeAgentRuntime", ""))
	h.send(`{"TaskToken":"tok-1","execution_id":"ex-1","state":"Research","detail":{"trace_id":"t-task","conversation_id":"conv-11"}}`)
	h.run(func(c *queue.Consumer) bool { return c.Stats.DeadLettered.Load() >= 1 })
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	if len(tasks.calls) != 1 || !strings.HasPrefix(tasks.calls[0], "tok-1 AccessDeniedException not authorized") {
		t.Errorf("SendTaskFailure calls %q, want one for tok-1 with the AWS error", tasks.calls)
	}
}

// In a Lambda the hold ends with the invocation: a step still running then is released for
// the advised delay (the runtime keeps it), and the next delivery collects its result.
func TestLambdaInvocationEndReleasesBusyStep(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 300*time.Millisecond)
	m := &queue.Message{ID: "m-slow", Body: event("slow-lambda", "conv-12"), ReceiveCount: 1}
	start := time.Now()
	out := h.disp.Dispatch(context.Background(), m, start.Add(time.Second))
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "Busy" || out.Delay < time.Second {
		t.Fatalf("outcome %+v (reason %+v), want a release for the advised delay (Busy)", out, out.Reason)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("held %v past a 1 s invocation", el)
	}
	m.ReceiveCount = 2
	out = h.disp.Dispatch(context.Background(), m, time.Now().Add(10*time.Second))
	if out.Action != queue.Delete || h.effect("slow-lambda") != 1 {
		t.Errorf("second delivery: %+v, effects %d; want delete and one run", out, h.effect("slow-lambda"))
	}
}

// On the last receive the class may use, busy work past the hold is held on (a release
// would spend that receive on a step that is still running) until the runtime answers; on an
// earlier receive it is released for the advised delay.
func TestBusyHeldOnLastReceive(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newHarness
	h := newHarness(t, 300*time.Millisecond)
	h.disp.Hold = 500 * time.Millisecond
	m := &queue.Message{ID: "m-slow", Body: event("slow-last", "conv-13"), ReceiveCount: 1}
	if out := h.disp.Dispatch(context.Background(), m, time.Time{}); out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "Busy" {
		t.Fatalf("receive 1: %+v, want a Busy release past the 0.5 s hold", out)
	}
	m.ReceiveCount = h.cfg.RetryLimit()
	if out := h.disp.Dispatch(context.Background(), m, time.Time{}); out.Action != queue.Delete || h.effect("slow-last") != 1 {
		t.Errorf("last receive: %+v, effects %d; want held until done, one run", out, h.effect("slow-last"))
	}
}

// SIGTERM while the dispatcher holds busy work (a 30 s step, answered busy after the 500 ms
// sync limit): the message is handed back at once (the runtime keeps the step, the next
// delivery is answered from it), not asked about every second until the drain budget (5 s)
// cancels the hold.
func TestBusyHoldReleasedAtSIGTERM(t *testing.T) {
	h := newHarness(t, 500*time.Millisecond)
	h.send(event("long-1", "conv-9"))
	rt := &worker.Runtime{Cfg: h.cfg, Worker: &worker.Worker{Cfg: h.cfg}, SQS: h.sqs, Log: h.disp.Log}
	c, err := dispatch.NewPoller(h.disp, rt.Host(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = c.Run(ctx) }()
	waitBusy := time.Now().Add(15 * time.Second)
	for !slices.ContainsFunc(h.fake.seen(), func(cl call) bool { return strings.Contains(cl.Answer, `"outcome":"busy"`) }) {
		if time.Now().After(waitBusy) {
			cancel()
			t.Fatal("no busy answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	<-stopped
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the consumer stopped %v after SIGTERM: the busy hold went on until the drain budget", took.Round(time.Millisecond))
	}
	if c.Stats.Released.Load() != 1 {
		t.Errorf("released %d, want the held message handed back", c.Stats.Released.Load())
	}
}
