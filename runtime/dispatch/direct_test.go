package dispatch_test

// Tests that call Dispatch directly (no queue): the fake AgentCore of dispatch_test.go answers
// with canned AWS responses, so they need no emulator.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// direct returns a dispatcher aimed at a fake AgentCore that serves only its script, and the
// fake, and the dispatcher's log.
func direct(t *testing.T) (*dispatch.Dispatcher, *fakeAgentCore, *bytes.Buffer) {
	t.Helper()
	fake := &fakeAgentCore{t: t}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", MaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d := &dispatch.Dispatcher{
		API:        bedrockagentcore.NewFromConfig(cfg, func(o *bedrockagentcore.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		RuntimeARN: testARN, Class: "deep", SyncLimit: time.Second, Hold: 10 * time.Second,
		Policy: retry.Policy{MaxAttempts: 3, Base: 100 * time.Millisecond, Cap: time.Second},
		Log:    slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return d, fake, &log
}

type brokenTasks struct{}

func (brokenTasks) Failure(context.Context, string, string, string) error {
	return errors.New("states unreachable")
}

// A task token whose SendTaskFailure fails: the dead letter stands, and the failure is logged
// to the dispatcher's own logger (the operator's only trace of a workflow left to its timeout).
func TestTaskFailureErrorIsLogged(t *testing.T) {
	d, fake, log := direct(t)
	d.Tasks = brokenTasks{}
	fake.queue(awsError(403, "AccessDeniedException", "not authorized", ""))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1,
		Body: `{"TaskToken":"tok-1","detail":{"trace_id":"t-1"}}`}, time.Time{})
	if out.Action != queue.DeadLetter || out.Reason == nil || out.Reason.Code != "AccessDeniedException" {
		t.Fatalf("outcome %+v reason %+v, want a dead letter (AccessDeniedException)", out, out.Reason)
	}
	if s := log.String(); !strings.Contains(s, "SendTaskFailure failed") || !strings.Contains(s, "states unreachable") {
		t.Errorf("log %q: the failed SendTaskFailure is not reported", s)
	}
}

// outcome answers as fleet-worker does: an OutcomeEnvelope under wire.OutcomeMediaType
// (contentType "" keeps that type; a proxy may rewrite it, the body's format still tells).
func outcome(contentType string, env wire.OutcomeEnvelope) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType == "" {
			contentType = wire.OutcomeMediaType
		}
		env.Format = wire.EnvelopeFormat
		b, _ := json.Marshal(env)
		w.Header().Set("Content-Type", contentType)
		w.Write(b)
	}
}

// The runtime's own retry verdict keeps its code and advised delay; one without a code is an
// AgentRetry.
func TestRetryOutcomeKeepsTheRuntimesCode(t *testing.T) {
	d, fake, _ := direct(t)
	fake.queue(
		outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeRetry, Code: "ModelOverloaded", Message: "try later", RetryAfterSeconds: 3}),
		outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeRetry}),
	)
	m := &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}
	out := d.Dispatch(context.Background(), m, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "ModelOverloaded" || out.Delay != 3*time.Second {
		t.Errorf("outcome %+v reason %+v, want a 3 s release (ModelOverloaded)", out, out.Reason)
	}
	out = d.Dispatch(context.Background(), m, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != wire.AgentRetry {
		t.Errorf("outcome %+v reason %+v, want a release (%s)", out, out.Reason, wire.AgentRetry)
	}
}

// An envelope whose Content-Type a proxy rewrote to application/json is still an envelope
// (its format field says so): a dead_letter verdict is not taken for a foreign agent's "done".
func TestEnvelopeUnderPlainJSON(t *testing.T) {
	d, fake, _ := direct(t)
	fake.queue(outcome("application/json", wire.OutcomeEnvelope{Outcome: wire.OutcomeDeadLetter, Code: "NoQuestion", Message: "no question"}))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.DeadLetter || out.Reason == nil || out.Reason.Code != "NoQuestion" {
		t.Errorf("outcome %+v reason %+v, want a dead letter (NoQuestion)", out, out.Reason)
	}
}

// A call cut off by the end of the hold while AgentCore has not answered (no headers yet, or
// a body still streaming) is busy, not a failure: the runtime keeps the step, and the message
// is released for a second at least, spending no retry attempt.
func TestCallOutlivingTheHoldIsBusy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
	}{
		{"no answer", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}},
		{"body cut", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"delta\":\"hel\"}\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, fake, _ := direct(t)
			fake.queue(tc.answer)
			start := time.Now()
			out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, start.Add(500*time.Millisecond))
			if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != wire.Busy || out.Delay < time.Second {
				t.Errorf("outcome %+v reason %+v, want a release of 1 s or more (Busy)", out, out.Reason)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("held %v past a 0.5 s invocation", el)
			}
		})
	}
}

// A message's own deadline ends the hold before d.Hold: a busy answer then releases the
// message instead of asking again past the deadline.
func TestMessageDeadlineEndsTheHold(t *testing.T) {
	d, fake, _ := direct(t)
	busy := outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeBusy, RetryAfterSeconds: 1})
	fake.queue(busy, busy)
	deadline := time.Now().Add(500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	body := strings.Replace(event("t-1", "c"), `"detail":{`, `"detail":{"deadline":"`+deadline+`",`, 1)
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: body}, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != wire.Busy {
		t.Errorf("outcome %+v reason %+v, want a release (Busy)", out, out.Reason)
	}
	if n := len(fake.seen()); n != 1 {
		t.Errorf("%d calls, want 1: the deadline leaves no time to ask again", n)
	}
}

// deadlines wraps the client and records each call's context deadline.
type deadlines struct {
	dispatch.API
	mu  sync.Mutex
	got []time.Duration
}

func (r *deadlines) InvokeAgentRuntime(ctx context.Context, in *bedrockagentcore.InvokeAgentRuntimeInput, optFns ...func(*bedrockagentcore.Options)) (*bedrockagentcore.InvokeAgentRuntimeOutput, error) {
	if dl, ok := ctx.Deadline(); ok {
		r.mu.Lock()
		r.got = append(r.got, time.Until(dl))
		r.mu.Unlock()
	}
	return r.API.InvokeAgentRuntime(ctx, in, optFns...)
}

// A dispatcher without a sync limit gives each call DefaultSyncLimit (plus the margin for the
// answer), not the margin alone: a step over 30 s would otherwise be cut off at every call.
func TestZeroSyncLimitIsTheDefault(t *testing.T) {
	d, fake, _ := direct(t)
	rec := &deadlines{API: d.API}
	d.API, d.SyncLimit, d.Hold = rec, 0, time.Hour
	fake.queue(outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeDone}))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.Delete {
		t.Fatalf("outcome %+v, want delete", out)
	}
	if len(rec.got) != 1 || rec.got[0] < dispatch.DefaultSyncLimit || rec.got[0] > dispatch.DefaultSyncLimit+time.Minute {
		t.Errorf("call deadlines %v, want DefaultSyncLimit (%v) plus a margin", rec.got, dispatch.DefaultSyncLimit)
	}
}

// Throttling carries AgentCore's Retry-After and HTTP status into the release: the queue
// waits what the server asked, not its own backoff.
func TestThrottlingRetryAfterIsTheDelay(t *testing.T) {
	d, fake, _ := direct(t)
	fake.queue(awsError(429, "ThrottlingException", "Rate exceeded", "7"))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "ThrottlingException" || out.Reason.Status != 429 || out.Delay != 7*time.Second {
		t.Errorf("outcome %+v reason %+v, want a 7 s release (ThrottlingException, 429)", out, out.Reason)
	}
}

// Client is the production client: SDK retries off (one HTTP attempt per Dispatch, the queue
// retries) and the endpoint override honoured.
func TestClientMakesOneAttempt(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	d, fake, _ := direct(t)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := dispatch.Client(context.Background(), "us-east-1", srv.URL, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.API = client
	fake.queue(awsError(500, "InternalServerException", "Internal error", ""), awsError(500, "InternalServerException", "Internal error", ""))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != "InternalServerException" {
		t.Errorf("outcome %+v reason %+v, want a release (InternalServerException)", out, out.Reason)
	}
	if n := len(fake.seen()); n != 1 {
		t.Errorf("%d HTTP attempts, want 1 (SDK retries off)", n)
	}
}

// An answer whose connection drops mid-body before the hold ends is an interrupted response
// (retried by the policy), not "busy": the call's own time was not up.
func TestBodyCutByTheServerIsInterrupted(t *testing.T) {
	d, fake, _ := direct(t)
	fake.queue(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		w.Write([]byte(`{"result":`))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != wire.ResponseInterrupted {
		t.Errorf("outcome %+v reason %+v, want a release (%s)", out, out.Reason, wire.ResponseInterrupted)
	}
}

// A call that fails before any HTTP exchange (here the credentials cannot be loaded, as when
// the pod identity agent is not up yet) has no response to read a status from: it is retried
// as RuntimeUnreachable.
func TestNoResponseIsRetried(t *testing.T) {
	d, fake, _ := direct(t)
	fake.queue(outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeDone}))
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	noCreds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no credentials yet")
	})
	d.API = bedrockagentcore.New(bedrockagentcore.Options{Region: "us-east-1", Credentials: noCreds, BaseEndpoint: aws.String(srv.URL)})
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
	if out.Action != queue.Release || out.Reason == nil || out.Reason.Code != wire.RuntimeUnreachable || !strings.Contains(out.Reason.Message, "no credentials yet") {
		t.Errorf("outcome %+v reason %+v, want a release (%s)", out, out.Reason, wire.RuntimeUnreachable)
	}
	if n := len(fake.seen()); n != 0 {
		t.Errorf("%d calls reached AgentCore without credentials", n)
	}
}

// The dispatcher fails a workflow's task only for a message that carries a task token and
// only when it has a Step Functions client: an event's dead letter sends no SendTaskFailure
// (an empty token is a ValidationException at best), and a dispatcher without a client
// dead-letters a task message all the same.
func TestDeadLetterFailsTaskOnlyWithTokenAndClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		client bool
		want   []string
	}{
		{"token and client", `{"TaskToken":"tok-1","detail":{"trace_id":"t-1"}}`, true, []string{"tok-1 AccessDeniedException not authorized"}},
		{"no token", event("t-1", "c"), true, nil},
		{"no client", `{"TaskToken":"tok-1","detail":{"trace_id":"t-1"}}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, fake, _ := direct(t)
			tasks := &failedTasks{}
			if tc.client {
				d.Tasks = tasks
			}
			fake.queue(awsError(403, "AccessDeniedException", "not authorized", ""))
			out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: tc.body}, time.Time{})
			if out.Action != queue.DeadLetter || out.Reason == nil || out.Reason.Code != "AccessDeniedException" {
				t.Fatalf("outcome %+v reason %+v, want a dead letter (AccessDeniedException)", out, out.Reason)
			}
			if strings.Join(tasks.calls, "|") != strings.Join(tc.want, "|") {
				t.Errorf("SendTaskFailure calls %q, want %q", tasks.calls, tc.want)
			}
		})
	}
}

// AgentCore's payload limit is inclusive: a body of exactly wire.AgentCoreMaxPayload bytes
// is forwarded whole, one byte more is dead-lettered as PayloadTooLarge without a call.
func TestPayloadLimitIsInclusive(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a 100 MB body")
	}
	d, fake, _ := direct(t)
	fake.queue(outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeDone}))
	head := event("t-1", "c")
	body := head + strings.Repeat(" ", wire.AgentCoreMaxPayload-len(head))
	out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: body}, time.Time{})
	if out.Action != queue.Delete {
		t.Errorf("a body of exactly %d bytes: outcome %+v reason %+v, want delete", len(body), out, out.Reason)
	}
	if calls := fake.seen(); len(calls) != 1 || len(calls[0].Body) != len(body) {
		t.Fatalf("%d calls, want 1 carrying all %d bytes", len(calls), len(body))
	}
	out = d.Dispatch(context.Background(), &queue.Message{ID: "m-2", ReceiveCount: 1, Body: body + " "}, time.Time{})
	if out.Action != queue.DeadLetter || out.Reason == nil || out.Reason.Code != wire.PayloadTooLarge {
		t.Errorf("one byte over: outcome %+v reason %+v, want a dead letter (%s)", out, out.Reason, wire.PayloadTooLarge)
	}
	if n := len(fake.seen()); n != 1 {
		t.Errorf("%d calls, want none for the body over the limit", n)
	}
}

// The hold decides between asking again and releasing: a busy answer whose advised delay
// still ends inside the hold is waited out in the same receive (no SQS release), one that
// ends past it is released for that delay at once, without waiting.
func TestBusyWaitsOnlyInsideTheHold(t *testing.T) {
	busy := outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeBusy, RetryAfterSeconds: 2})
	for _, tc := range []struct {
		name   string
		hold   time.Duration
		action queue.Action
		waits  []time.Duration
		calls  int
	}{
		{"inside", 10 * time.Second, queue.Delete, []time.Duration{2 * time.Second}, 2},
		{"past", time.Second, queue.Release, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, fake, _ := direct(t)
			d.Hold = tc.hold
			var waits []time.Duration
			d.Wait = func(ctx context.Context, w time.Duration) error {
				waits = append(waits, w)
				if len(waits) > 3 {
					return context.Canceled // a loop past the hold: stop it
				}
				return nil
			}
			fake.queue(busy, outcome("", wire.OutcomeEnvelope{Outcome: wire.OutcomeDone}))
			out := d.Dispatch(context.Background(), &queue.Message{ID: "m-1", ReceiveCount: 1, Body: event("t-1", "c")}, time.Time{})
			if out.Action != tc.action {
				t.Errorf("outcome %+v reason %+v, want action %v", out, out.Reason, tc.action)
			}
			if tc.action == queue.Release && (out.Reason == nil || out.Reason.Code != wire.Busy || out.Delay != 2*time.Second) {
				t.Errorf("outcome %+v reason %+v, want a 2 s release (Busy)", out, out.Reason)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.waits) || len(fake.seen()) != tc.calls {
				t.Errorf("waits %v and %d calls, want %v and %d", waits, len(fake.seen()), tc.waits, tc.calls)
			}
		})
	}
}
