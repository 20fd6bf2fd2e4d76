// Package worker is the step pipeline every fleet-worker mode shares:
// parse → idempotency claim → receive-count limit → claim-check resolve →
// handler under a deadline → offload a large result → completion events
// (checked against their contracts) → record the result → Step Functions
// callback → verdict (delete, release with jitter, or dead-letter with a
// reason). Modes (SQS poller, Lambda, AgentCore) only move bytes in and
// apply the verdict.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/callback"
	"github.com/fleetc/fleetc/runtime/claimcheck"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Payloads resolves input claim checks and stores large outputs
// (runtime/claimcheck.Store). Write stores output whatever its size (the
// worker decides the threshold) under a key unique to the claimant owner;
// claimcheck.ErrNoBucket means it cannot.
type Payloads interface {
	Resolve(ctx context.Context, detail []byte) ([]byte, error)
	Write(ctx context.Context, class, workKey, owner string, output []byte) (*claimcheck.Ref, error)
}

// sfnInlineMax is the largest task output sent inline to SendTaskSuccess:
// well under its 256 KiB cap, leaving room for the JSON around it.
const sfnInlineMax = 200 * 1024

// idemInlineMax is the largest result kept inline in the idempotency
// record (DynamoDB items are at most 400 KB).
const idemInlineMax = idem.MaxResultBytes

// Publisher publishes completion events and returns once accepted
// (runtime/events.Batcher).
type Publisher interface {
	PublishAll(ctx context.Context, entries []events.Entry) error
}

// Callbacks closes Step Functions task tokens (runtime/callback.Client).
// Errors matching callback.ErrStaleToken mean the token is gone for good.
type Callbacks = step.Callbacks

// Observer sees every verdict (telemetry hooks in here).
type Observer interface {
	StepFinished(r Report)
}

// Report describes one processed delivery.
type Report struct {
	Class     string
	Key       string
	TraceID   string
	MessageID string
	Attempt   int
	Action    queue.Action
	Duplicate bool
	Busy      bool
	Code      wire.Code // error code, when failed
	Duration  time.Duration
}

// Delivery is one message handed to Process (defined with the transports' contract).
type Delivery = step.Delivery

// Result is Process's verdict plus the output, for modes that answer.
type Result = step.Result

// Worker runs steps for one class.
type Worker struct {
	Cfg       *config.Config
	Handler   handler.Handler
	Idem      idem.Store
	Payloads  Payloads             // nil: payload_ref inputs fail, large outputs are stored inline
	Events    Publisher            // nil: no completion events
	Callbacks Callbacks            // nil: SFN task messages are dead-lettered
	Jobs      Jobs                 // nil: no async-tool job records (Cfg.Jobs names the table)
	Observer  Observer             // nil: none
	Telemetry *telemetry.Telemetry // nil: no spans or step metrics
	Log       *slog.Logger
	Now       func() time.Time
	// Rand draws the jitter of every retry delay, uniform in [0, 1) (nil: math/rand/v2), and
	// Wait sleeps between retries, returning ctx's error if ctx ends first (nil: a timer):
	// tests fix both to see each delay's ceiling. Concurrent steps call both at once.
	Rand func() float64
	Wait func(ctx context.Context, d time.Duration) error
	// StepHeartbeat, when > 0, makes Process renew the idempotency lease
	// and SFN heartbeat itself (Lambda, AgentCore); the poller instead calls
	// Heartbeat from its batched visibility heartbeat.
	StepHeartbeat time.Duration

	mu     sync.Mutex
	active map[string]*activeStep // by message id

	contractsOnce sync.Once
	contracts     []contract         // emitted events with compiled detail schemas (emit.go)
	outputSchema  *jsonschema.Schema // the class's output contract (output.go); nil without one
	contractsErr  error
}

type activeStep struct {
	key, owner, token string
	cancel            context.CancelCauseFunc
	stale             bool
	lost              bool       // Extend found another owner
	leaseUntil        time.Time  // our lease's end as of the last renewal
	span              trace.Span // the step's span, for heartbeat decisions
}

// errStaleToken cancels a step whose task token went stale mid-run.
var errStaleToken = errors.New("task token went stale while the step ran")

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Worker) jitter() float64 {
	if w.Rand != nil {
		return w.Rand()
	}
	return rand.Float64()
}

func (w *Worker) wait(ctx context.Context, d time.Duration) error {
	if w.Wait != nil {
		return w.Wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is a full-jitter policy drawing from the worker's random source.
func (w *Worker) backoff(base, ceiling time.Duration) retry.Policy {
	return retry.Policy{Base: base, Cap: ceiling, Rand: w.jitter}
}

func (w *Worker) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

func (w *Worker) policy() retry.Policy {
	p := w.backoff(w.Cfg.Retry.Base(), w.Cfg.Retry.Cap())
	p.MaxAttempts = w.Cfg.RetryLimit()
	return p
}

// lease is one visibility cycle (at least the step's max when there is no
// queue visibility, as in AgentCore).
func (w *Worker) lease() time.Duration {
	l := w.Cfg.Queue.VisibilityTimeout()
	if l <= 0 {
		l = w.Cfg.Step.Max()
	}
	return l
}

// Concurrency is how many deliveries may run at once (the class's concurrency).
func (w *Worker) Concurrency() int { return w.Cfg.Concurrency }

// Logger is the worker's logger (nil: none).
func (w *Worker) Logger() *slog.Logger { return w.Log }

// RenewItself makes Process renew its own idempotency lease and SFN heartbeat every
// Queue.RenewEvery, unless StepHeartbeat is already set.
func (w *Worker) RenewItself() {
	if w.StepHeartbeat == 0 {
		w.StepHeartbeat = w.Cfg.Queue.RenewEvery()
	}
}

// GroupOf returns a FIFO message's group from its body (kumo omits the
// MessageGroupId attribute; on AWS the attribute is used).
func (w *Worker) GroupOf(m *queue.Message) string {
	if w.Cfg.Queue.GroupBy == "" {
		return ""
	}
	env, err := wire.ParseEnvelope([]byte(m.Body))
	if err != nil {
		return ""
	}
	return wire.DetailField(env.Detail, w.Cfg.Queue.GroupBy)
}

// Process runs one delivery to a verdict. It never returns Leave unless
// ownership of the work was lost. Its phases, each a method below: parse and
// continue the trace → claim the work → step input (receive limit, claim
// check) → step budget → run the handler → finish (store, announce, record,
// answer the task).
func (w *Worker) Process(ctx context.Context, d Delivery) (res Result) {
	start := w.now()
	rep := Report{Class: w.Cfg.Class, MessageID: d.MessageID, Attempt: d.Attempt}
	defer func() { w.report(rep, res, start) }()

	env, err := wire.ParseEnvelope(d.Body)
	if err != nil {
		if w.Telemetry != nil {
			// No trace to attach a span to; still count the dead letter.
			w.Telemetry.Metrics.ObserveStep(w.Cfg.Class, telemetry.OutcomeDeadLetter, w.now().Sub(start))
		}
		return deadLetter(wire.MalformedMessage, err.Error())
	}
	rep.TraceID = env.TraceID
	env.CountFrom(d.SentAt)
	// An async tool's job record ends FAILED on every dead letter that names a job (the
	// id must ride the detail itself, not a claim-checked payload).
	jobID := w.jobID(env.Detail)
	defer func() {
		if res.Action == queue.DeadLetter {
			w.jobFailed(ctx, jobID, res.Reason)
		}
	}()
	ctx, endSpan := w.startTrace(ctx, env, &d)
	defer func() { endSpan(res) }()
	policy, reason := w.modelPolicy(env)
	if reason != "" {
		return w.deadLetterTask(ctx, env, wire.ModelPolicyNotAllowed, reason)
	}

	key, err := idem.Key(env.Detail, w.Cfg.Idempotency.Key, env.FallbackKey())
	if err != nil {
		return w.deadLetterTask(ctx, env, wire.BadIdempotencyKey, err.Error())
	}
	rep.Key = key
	if env.Kind == wire.KindSFN && w.Callbacks == nil {
		return deadLetter(wire.NoCallbacks, "a Step Functions task message reached a worker without a Step Functions client")
	}
	claim, claimedAt, verdict := w.claim(ctx, env, d, key, w.stepWindow(env, d, w.now()))
	if verdict != nil {
		return *verdict
	}
	// We own the work. The step window counts from the claim (a takeover gets all of it).
	win := w.stepWindow(env, d, claimedAt)
	input, verdict := w.stepInput(ctx, env, d, key, claim.Owner)
	if verdict != nil {
		return *verdict
	}
	if verdict := w.stepBudget(ctx, env, d, key, claim.Owner, win, w.now()); verdict != nil {
		return *verdict
	}
	w.jobRunning(ctx, jobID)
	st := &activeStep{key: key, owner: claim.Owner, token: env.TaskToken, leaseUntil: claimedAt.Add(w.lease())}
	return w.runStep(ctx, env, d, st, input, policy, win)
}

// modelPolicy is the policy the event picks (detail.model_policy), checked against the
// class's allowed policies: "" with no reason when the event names none, else the reason it
// is refused. A policy is never silently replaced by another.
func (w *Worker) modelPolicy(env *wire.Envelope) (policy, reason string) {
	if env.ModelPolicy == "" {
		return "", ""
	}
	allowed := w.Cfg.Models.Allowed
	if len(allowed) == 0 && w.Cfg.Models.Policy != "" {
		allowed = []string{w.Cfg.Models.Policy}
	}
	if !slices.Contains(allowed, env.ModelPolicy) {
		if len(allowed) == 0 {
			return "", fmt.Sprintf("the event asks for model policy %q, but class %s has no model policy", env.ModelPolicy, w.Cfg.Class)
		}
		return "", fmt.Sprintf("the event asks for model policy %q; class %s allows %s", env.ModelPolicy, w.Cfg.Class, strings.Join(allowed, ", "))
	}
	return env.ModelPolicy, ""
}

// report logs the verdict and hands it to the observer.
func (w *Worker) report(rep Report, res Result, start time.Time) {
	rep.Action = res.Action
	rep.Duplicate = res.Duplicate
	if res.Reason != nil {
		rep.Code = res.Reason.Code
	}
	rep.Duration = w.now().Sub(start)
	w.logVerdict(rep, res)
	if w.Observer != nil {
		w.Observer.StepFinished(rep)
	}
}

// startTrace continues the producer's trace: the traceparent message attribute, else a
// traceparent the consumed detail declares, else one derived from trace_id. With telemetry
// it starts the step's span (d.TraceParent becomes the span's own context, for the handler)
// and returns the function that ends it.
func (w *Worker) startTrace(ctx context.Context, env *wire.Envelope, d *Delivery) (context.Context, func(Result)) {
	if d.TraceParent == "" {
		d.TraceParent = wire.DetailField(env.Detail, "traceparent")
	}
	if w.Telemetry == nil {
		// No spans of our own: still carry the producer's context (or the one trace_id
		// derives) onward, to the events' TraceHeader and a declared detail.traceparent.
		ctx = telemetry.ExtractInto(ctx, map[string]string{telemetry.AttrTraceparent: d.TraceParent}, env.TraceID)
		return ctx, func(Result) {}
	}
	ctx = telemetry.ExtractInto(ctx, map[string]string{telemetry.AttrTraceparent: d.TraceParent}, env.TraceID)
	ctx, step := w.Telemetry.StartStep(ctx, telemetry.StepInfo{TraceID: env.TraceID, MessageID: d.MessageID, Attempt: d.Attempt,
		Source: env.Kind, ConversationID: env.ConversationID()})
	if tp := telemetry.Inject(ctx)[telemetry.AttrTraceparent]; tp != "" {
		d.TraceParent = tp
	}
	return ctx, func(res Result) {
		var err error
		if res.Reason != nil {
			err = res.Reason
		}
		verdictEvent(ctx, res, d.Attempt)
		step.End(outcomeLabel(res), err)
	}
}

// verdictEvent records the verdict's decision on the step span: a retry (released or left
// for another delivery, with the delay the policy chose), a lost lease, or a dead letter
// with its code and reason. A plain success or duplicate needs no explaining.
func verdictEvent(ctx context.Context, res Result, attempt int) {
	if res.Reason == nil && res.Action == queue.Delete {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(telemetry.AttrAction, res.Action.String()), attribute.Int(telemetry.AttrAttempt, attempt)}
	if r := res.Reason; r != nil {
		attrs = append(attrs, attribute.String(telemetry.AttrErrorCode, string(r.Code)), attribute.String(telemetry.AttrErrorMessage, r.Message),
			attribute.Bool(telemetry.AttrRetryable, r.Retryable))
	}
	switch {
	case res.Action == queue.DeadLetter:
		telemetry.Event(ctx, telemetry.EventDeadLetter, attrs...)
	case res.Action == queue.Leave && res.Reason != nil && res.Reason.Code == wire.LeaseLost:
		telemetry.Event(ctx, telemetry.EventLeaseLost, attrs...)
	case res.Action == queue.Release || res.Action == queue.Leave:
		telemetry.Event(ctx, telemetry.EventRetry, append(attrs, attribute.Int64(telemetry.AttrRetryDelayMS, res.Delay.Milliseconds()))...)
	}
}

// claim takes the idempotency claim (and says when: the lease counts from then), or returns
// the verdict when the work is not ours. The record is consulted before the receive limit:
// finished work is answered from it, and work another worker holds is waited for inside this
// receive (busyWait), so neither a crash after the side effect nor a crashed holder kills it.
func (w *Worker) claim(ctx context.Context, env *wire.Envelope, d Delivery, key string, win window) (idem.Claim, time.Time, *Result) {
	for {
		at := w.now()
		claim, err := w.Idem.Acquire(idem.WithTraceID(ctx, env.TraceID), key, w.lease())
		if err != nil {
			r := w.failed(ctx, env, d, retry.Retryable(wire.IdempotencyUnavailable, err))
			return claim, at, &r
		}
		switch claim.State {
		case idem.Done:
			r := w.answerDuplicate(ctx, env, key, claim)
			return claim, at, &r
		case idem.Busy:
			if r := w.busyWait(ctx, d, key, win, claim.LeaseUntil); r != nil {
				return claim, at, r
			}
			continue // the holder's lease has lapsed (or it finished): ask again
		}
		return claim, at, nil
	}
}

// stepInput checks the receive limit and resolves a claim-checked payload. On a verdict the
// claim has been given back.
func (w *Worker) stepInput(ctx context.Context, env *wire.Envelope, d Delivery, key, owner string) ([]byte, *Result) {
	giveUp := func(code wire.Code, msg string) ([]byte, *Result) {
		w.abandon(ctx, key, owner)
		r := w.deadLetterTask(ctx, env, code, msg)
		return nil, &r
	}
	if limit := w.Cfg.RetryLimit(); d.Attempt > limit {
		// Earlier attempts ended with no verdict and no live lease: the
		// worker died or lost the message mid-step. Say so instead of
		// redriving silently.
		return giveUp(wire.ReceiveLimitExceeded, fmt.Sprintf("received %d times (limit %d); earlier attempts ended without a verdict (worker killed, crashed or lost its heartbeat)", d.Attempt, limit))
	}
	detail := []byte(env.Detail)
	_, hasRef, err := claimcheck.ParseRef(detail)
	switch {
	case err != nil:
		return giveUp(wire.BadPayloadRef, err.Error())
	case !hasRef:
		return detail, nil
	case w.Payloads == nil:
		return giveUp(wire.NoClaimCheck, "payload_ref given but no claim-check store configured")
	}
	resolved, err := w.Payloads.Resolve(ctx, detail)
	if errors.Is(err, claimcheck.ErrRefused) {
		// Another bucket, or a key this class may not read: no retry makes it readable.
		return giveUp(wire.PayloadRefRefused, err.Error())
	}
	if err != nil {
		w.abandon(ctx, key, owner)
		r := w.failed(ctx, env, d, retry.Retryable(wire.PayloadFetchFailed, err))
		return nil, &r
	}
	return resolved, nil
}

// stepBudget checks that the step may start: its event has not expired, the run's deadline
// has not passed and the window (step.max from the claim, clipped by the deadline, the TTL
// and the invocation's end) has time left. On a verdict the claim has been given back.
func (w *Worker) stepBudget(ctx context.Context, env *wire.Envelope, d Delivery, key, owner string, win window, now time.Time) *Result {
	if !env.Expires.IsZero() && !now.Before(env.Expires) {
		// The seed's envelope: work older than its ttl_seconds is not run at all.
		w.abandon(ctx, key, owner)
		r := w.deadLetterTask(ctx, env, wire.Expired, fmt.Sprintf("the event expired at %s (ttl_seconds) before the step started", env.Expires.UTC().Format(time.RFC3339)))
		return &r
	}
	if win.end.After(now) {
		return nil
	}
	w.abandon(ctx, key, owner)
	if win.hard != "" {
		deadline := env.Deadline.UTC().Format(time.RFC3339)
		if env.TaskToken != "" {
			// The task timed out in Step Functions already: its token is as
			// good as stale and the state's Retry/Catch has taken over.
			r := staleToken(fmt.Sprintf("the task's deadline %s passed before the step started", deadline))
			return &r
		}
		r := w.deadLetterTask(ctx, env, wire.DeadlineExceeded, fmt.Sprintf("the run's deadline %s passed before the step started", deadline))
		return &r
	}
	r := w.failed(ctx, env, d, &retry.Error{Code: wire.InvocationTimeLeft, Message: "no invocation time left to start the step", Retryable: true})
	return &r
}

// runStep runs the handler inside the step window with heartbeats (lease, visibility, SFN),
// retrying it in process through throttles and retryable failures (hold), and the heartbeats
// go on until the result is recorded; then it finishes the step.
func (w *Worker) runStep(ctx context.Context, env *wire.Envelope, d Delivery, st *activeStep, input []byte, policy string, win window) Result {
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st.cancel = cancel
	st.span = trace.SpanFromContext(ctx)
	w.register(d.MessageID, st)
	stopBeat := w.selfHeartbeat(ctx, d.MessageID)
	stopHeartbeats := sync.OnceFunc(func() { stopBeat(); w.unregister(d.MessageID) })
	defer stopHeartbeats()
	out, fail := w.hold(ctx, stepCtx, env, d, st, win, func(c context.Context) (json.RawMessage, error) {
		return w.Handler.Handle(c, handler.Request{
			Class: w.Cfg.Class, Key: st.key, TraceID: env.TraceID, Conversation: env.ConversationID(), TraceParent: d.TraceParent,
			Attempt: d.Attempt, Deadline: win.end, Input: input, ModelPolicy: policy,
		})
	})
	if fail != nil {
		stopHeartbeats()
		return *fail
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if err := w.CompileContracts(); err != nil {
		stopHeartbeats()
		w.abandon(ctx, st.key, st.owner)
		return w.deadLetterTask(ctx, env, wire.EventContractViolation, err.Error())
	}
	// The result is held to the class's output contract before anything else: a misfit is
	// dead-lettered with no event, no callback and no record of success.
	if msg := w.CheckOutput(out); msg != "" {
		stopHeartbeats()
		w.abandon(ctx, st.key, st.owner)
		return w.deadLetterTask(ctx, env, wire.HandlerOutputInvalid, msg)
	}
	res := w.finish(ctx, env, st, out, stopHeartbeats)
	res.Output = out
	return res
}

// finish delivers a successful handler's output. The side effect happened: from here the
// work is never released for another run. Under the running lease, in order: offload a
// large output to S3, check every completion event against its contract, mark the async job
// SUCCEEDED and publish the events, and record the result, already marked published. So a
// step that emits events costs two DynamoDB writes (claim, complete); only when publishing
// fails is the flag set later by the delivery that publishes (a third). Then the heartbeats
// stop and the Step Functions task is answered.
func (w *Worker) finish(ctx context.Context, env *wire.Envelope, st *activeStep, out json.RawMessage, stopHeartbeats func()) Result {
	s, stored, fail := w.storeOutput(ctx, env, st, out)
	if fail != nil {
		return *fail
	}
	var entries []events.Entry
	if w.emits() {
		var err error
		if entries, err = w.completionEntries(ctx, env, s); err != nil {
			// The handler's output cannot make a valid event: a defect of the handler (or
			// the contract), which no retry fixes.
			w.abandon(ctx, st.key, st.owner)
			return w.deadLetterTask(ctx, env, wire.EventContractViolation, err.Error())
		}
	}
	announced := w.announce(ctx, env, s, entries)
	published := announced == nil || !w.emits()
	if fail := w.underLease(ctx, env, st, len(out), func(c context.Context) error {
		return w.Idem.Complete(c, st.key, st.owner, stored, published, w.lease())
	}); fail != nil {
		return *fail
	}
	stopHeartbeats()
	if announced != nil {
		// The result is recorded: the redelivery repeats only what is left.
		return *announced
	}
	if w.isStale(st) {
		// The task SFN re-dispatched with a new token is answered from the record.
		return staleToken("task token went stale during the step; result stored for the re-dispatched task")
	}
	return w.answerTask(ctx, env, st.key, s)
}

// errResultTooLarge marks outputs that cannot be delivered (no claim-check
// bucket for an output above an inline limit): retrying cannot help.
var errResultTooLarge = errors.New("result too large to deliver inline and no claim-check bucket is configured")

// storeOutput offloads a large output to the claim-check store (retried under the lease)
// and returns the completion payload and its encoding for the record.
func (w *Worker) storeOutput(ctx context.Context, env *wire.Envelope, st *activeStep, out json.RawMessage) (storedResult, json.RawMessage, *Result) {
	var s storedResult
	var stored json.RawMessage
	fail := w.underLease(ctx, env, st, len(out), func(c context.Context) (err error) {
		s, stored, err = w.storedResult(c, env, st.key, st.owner, out)
		return err
	})
	return s, stored, fail
}

// underLease runs op, a write after the side effect, retrying transient failures with
// jitter while our lease holds, since releasing would let a later delivery re-run the side
// effect; it gives up (Leave) only when the lease is lost or ctx ends. Outputs that can
// never be delivered are dead-lettered. A shutdown that lands just after the side effect
// still gets its attempts; ctx only stops the retrying.
func (w *Worker) underLease(ctx context.Context, env *wire.Envelope, st *activeStep, size int, op func(context.Context) error) *Result {
	pol := w.backoff(100*time.Millisecond, 2*time.Second)
	for i := 0; ; i++ {
		opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err := op(opCtx)
		cancel()
		if err == nil {
			return nil
		}
		switch {
		case errors.Is(err, idem.ErrLost):
			return leaseLost(err)
		case errors.Is(err, errResultTooLarge), errors.Is(err, claimcheck.ErrNoBucket), errors.Is(err, idem.ErrResultTooLarge):
			w.abandon(ctx, st.key, st.owner)
			r := w.deadLetterTask(ctx, env, wire.ResultTooLarge, fmt.Sprintf("the step succeeded but its %d-byte result cannot be delivered: %v", size, err))
			return &r
		}
		if w.leaseGone(st) {
			return leaseLost(fmt.Errorf("lease ended while storing the result: %w", err))
		}
		w.log().Warn("storing the result failed; retrying under the lease", "key", st.key, "attempt", i+1, "err", err)
		telemetry.Event(ctx, telemetry.EventStoreRetry, attribute.Int(telemetry.AttrStoreAttempt, i+1), attribute.String(telemetry.AttrErrorMessage, err.Error()))
		if w.wait(ctx, pol.Backoff(i)) != nil {
			// Shutdown: keep the claim (the record says running) and leave
			// the message; only the lease's end lets another run happen.
			return &Result{Outcome: queue.Outcome{Action: queue.Leave, Reason: &retry.Error{Code: wire.ResultStoreInterrupted, Message: err.Error(), Retryable: true}}}
		}
	}
}

// leaseGone reports whether another claimant took the lease or our last
// renewal has run out.
func (w *Worker) leaseGone(st *activeStep) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return st.lost || !w.now().Before(st.leaseUntil)
}

// leaseLost is the verdict when ownership is gone: leave the message to the
// claimant that reclaimed it (deleting with our receipt could drop the work
// if that claimant then crashes).
func leaseLost(err error) *Result {
	return &Result{Outcome: queue.Outcome{Action: queue.Leave, Reason: &retry.Error{Code: wire.LeaseLost, Message: err.Error(), Retryable: true}}}
}

// storedResult is the completion payload kept in the idempotency record:
// {"result": out} or, above the claim-check threshold, {"result_ref": ref}.
type storedResult struct {
	Result    json.RawMessage `json:"result,omitempty"`
	ResultRef *claimcheck.Ref `json:"result_ref,omitempty"`
	// Fields are the result's top-level properties that emitted events fill (from_output),
	// kept beside a claim-checked result so every delivery fills them the same way.
	Fields map[string]json.RawMessage `json:"fields,omitempty"`
}

// decodeStored reads a record's payload (a bare value from an older worker is the result).
func decodeStored(stored json.RawMessage) storedResult {
	var s storedResult
	if err := json.Unmarshal(stored, &s); err != nil {
		s = storedResult{Result: stored}
	}
	return s
}

// storedResult offloads out to the claim-check store above the class's
// threshold, and for Step Functions tasks above sfnInlineMax whatever the
// threshold (SendTaskSuccess would reject it); with no store such an
// output is errResultTooLarge.
func (w *Worker) storedResult(ctx context.Context, env *wire.Envelope, key, owner string, out json.RawMessage) (storedResult, json.RawMessage, error) {
	limit := w.Cfg.ClaimCheck.ThresholdBytes
	if limit <= 0 || limit > idemInlineMax {
		limit = idemInlineMax
	}
	if env.TaskToken != "" && limit > sfnInlineMax {
		limit = sfnInlineMax
	}
	s := storedResult{Result: out, Fields: OutputFields(w.Cfg, out)}
	if len(out) > limit {
		if w.Payloads == nil {
			return s, nil, fmt.Errorf("%w (%d bytes, inline limit %d)", errResultTooLarge, len(out), limit)
		}
		ref, err := w.Payloads.Write(ctx, w.Cfg.Class, key, owner, out)
		if err != nil {
			return s, nil, err
		}
		s = storedResult{ResultRef: ref, Fields: s.Fields}
	}
	b, err := json.Marshal(s)
	return s, b, err
}

// emits reports whether the class publishes completion events.
func (w *Worker) emits() bool { return w.Events != nil && len(w.Cfg.Events.Emits) > 0 }

// answerDuplicate answers a delivery of finished work from the record.
func (w *Worker) answerDuplicate(ctx context.Context, env *wire.Envelope, key string, c idem.Claim) Result {
	r := w.publish(ctx, env, key, c.Result, c.Published)
	r.Duplicate = true
	var s storedResult
	if json.Unmarshal(c.Result, &s) == nil && s.Result != nil {
		r.Output = s.Result
	}
	return r
}

// publish finishes work an earlier delivery recorded as done: the job status, the events
// if that delivery never published them (then the published flag), and the callback. A
// failure releases the message; the next delivery finds the record done and tries again.
func (w *Worker) publish(ctx context.Context, env *wire.Envelope, key string, stored json.RawMessage, published bool) Result {
	s := decodeStored(stored)
	var entries []events.Entry
	if !published && w.emits() {
		var err error
		if entries, err = w.completionEntries(ctx, env, s); err != nil {
			return w.deadLetterTask(ctx, env, wire.EventContractViolation, err.Error())
		}
	}
	if r := w.announce(ctx, env, s, entries); r != nil {
		return *r
	}
	if len(entries) > 0 {
		if err := w.Idem.MarkPublished(ctx, key); err != nil {
			w.log().Warn("could not mark published; a duplicate delivery would re-emit", "key", key, "err", err)
		}
	}
	return w.answerTask(ctx, env, key, s)
}

// announce marks the async job SUCCEEDED, then publishes the completion events: nil when
// both are done, else the verdict (release, or a dead letter when EventBridge refuses an
// event for good). The job goes first so that an event's consumer finds it finished.
func (w *Worker) announce(ctx context.Context, env *wire.Envelope, s storedResult, entries []events.Entry) *Result {
	if r := w.jobSucceeded(ctx, w.jobID(env.Detail), s); r != nil {
		return r
	}
	if len(entries) == 0 || w.Events == nil {
		return nil
	}
	if err := w.Events.PublishAll(ctx, entries); err != nil {
		if permanentPublishError(err) {
			// No retry can make EventBridge take this event.
			r := w.deadLetterTask(ctx, env, wire.CompletionEventRejected, err.Error())
			return &r
		}
		r := w.release(&retry.Error{Code: wire.PublishFailed, Message: err.Error(), Retryable: true, Err: err}, 1)
		return &r
	}
	return nil
}

// answerTask closes a Step Functions task with the result (or its reference) and deletes
// the message; other deliveries are simply deleted.
func (w *Worker) answerTask(ctx context.Context, env *wire.Envelope, key string, s storedResult) Result {
	if env.TaskToken == "" {
		return Result{Outcome: queue.Outcome{Action: queue.Delete}}
	}
	output := s.Result
	if s.ResultRef != nil {
		// The task output is the same object the events were filled from: the reference plus
		// the result's declared top-level properties.
		obj := map[string]any{"result_ref": s.ResultRef}
		for k, v := range s.Fields {
			if k != "result_ref" {
				obj[k] = v
			}
		}
		output, _ = json.Marshal(obj)
	}
	err := w.Callbacks.Success(ctx, env.TaskToken, output)
	switch {
	case err == nil:
	case errors.Is(err, callback.ErrStaleToken):
		w.log().Info("stale task token on success; deleting", "key", key, "err", err)
	case errors.Is(err, callback.ErrInvalidOutput):
		// Too large or not JSON (e.g. a record stored inline by an
		// older worker): tell the workflow instead of retrying forever.
		code := wire.InvalidOutput
		if len(output) > callback.MaxOutputBytes {
			code = wire.ResultTooLarge
		}
		return w.deadLetterTask(ctx, env, code, err.Error())
	default:
		return w.release(&retry.Error{Code: wire.CallbackFailed, Message: err.Error(), Retryable: true, Err: err}, 1)
	}
	return Result{Outcome: queue.Outcome{Action: queue.Delete}}
}

// permanentEventCodes are PutEvents entry codes no retry can fix (the
// events batcher gives up on them at once).
var permanentEventCodes = map[string]bool{
	"MalformedDetail": true, "InvalidArgument": true, "ValidationException": true,
	"AccessDeniedException": true, "NotAuthorizedForSourceException": true,
	"NotAuthorizedForDetailTypeException": true, "ResourceNotFoundException": true,
}

func permanentPublishError(err error) bool {
	if errors.Is(err, events.ErrEntryTooLarge) {
		return true
	}
	var ee *events.EntryError
	return errors.As(err, &ee) && permanentEventCodes[ee.Code]
}

// failed turns a step failure into release-with-jitter or dead-letter.
func (w *Worker) failed(ctx context.Context, env *wire.Envelope, d Delivery, err error) Result {
	var re *retry.Error
	if ctx.Err() != nil && !(errors.As(err, &re) && !re.Retryable) {
		// Shutdown cut the step short: hand it to another worker now.
		return Result{Outcome: queue.Outcome{Action: queue.Release, Delay: 0, Reason: retry.Classify(err)}}
	}
	dec := w.policy().Decide(err, d.Attempt)
	if dec.DeadLetter {
		w.failTask(ctx, env, dec.Reason)
		return Result{Outcome: queue.Outcome{Action: queue.DeadLetter, Reason: dec.Reason}}
	}
	return Result{Outcome: queue.Outcome{Action: queue.Release, Delay: dec.Delay, Reason: dec.Reason}}
}

func (w *Worker) release(e *retry.Error, attempt int) Result {
	return Result{Outcome: queue.Outcome{Action: queue.Release, Delay: w.policy().Backoff(attempt), Reason: e}}
}

// failTask sends SendTaskFailure for SFN messages that are dead-lettered.
func (w *Worker) failTask(ctx context.Context, env *wire.Envelope, reason *retry.Error) {
	if env == nil || env.TaskToken == "" || w.Callbacks == nil || reason == nil {
		return
	}
	if err := w.Callbacks.Failure(ctx, env.TaskToken, string(reason.Code), reason.Message); err != nil {
		w.log().Warn("SendTaskFailure failed", "code", reason.Code, "err", err, "stale", errors.Is(err, callback.ErrStaleToken))
	}
}

func (w *Worker) abandon(ctx context.Context, key, owner string) {
	if err := w.Idem.Abandon(context.WithoutCancel(ctx), key, owner); err != nil {
		w.log().Warn("could not release idempotency claim; the next attempt waits for the lease", "key", key, "err", err)
	}
}

// outcomeLabel maps a verdict to telemetry's outcome label.
func outcomeLabel(r Result) string {
	switch {
	case r.Action == queue.DeadLetter:
		return telemetry.OutcomeDeadLetter
	case r.Action == queue.Release || r.Action == queue.Leave:
		return telemetry.OutcomeRetry
	case r.Duplicate:
		return telemetry.OutcomeDuplicate
	case r.Reason != nil && r.Reason.Code == wire.StaleToken:
		return telemetry.OutcomeStaleToken
	}
	return telemetry.OutcomeSuccess
}

// deadLetterTask dead-letters the delivery and fails its Step Functions task.
func (w *Worker) deadLetterTask(ctx context.Context, env *wire.Envelope, code wire.Code, msg string) Result {
	r := deadLetter(code, msg)
	w.failTask(ctx, env, r.Reason)
	return r
}

// staleToken is the verdict of a task whose token went stale: deleted, never retried.
func staleToken(msg string) Result {
	return Result{Outcome: queue.Outcome{Action: queue.Delete, Reason: &retry.Error{Code: wire.StaleToken, Message: msg}}}
}

func deadLetter(code wire.Code, msg string) Result {
	return Result{Outcome: queue.Outcome{Action: queue.DeadLetter, Reason: &retry.Error{Code: code, Message: msg}}}
}

func (w *Worker) register(id string, st *activeStep) {
	w.mu.Lock()
	if w.active == nil {
		w.active = map[string]*activeStep{}
	}
	w.active[id] = st
	w.mu.Unlock()
}

func (w *Worker) unregister(id string) {
	w.mu.Lock()
	delete(w.active, id)
	w.mu.Unlock()
}

func (w *Worker) isStale(st *activeStep) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return st.stale
}

// Heartbeat renews the idempotency lease and SFN heartbeat of the given
// in-flight messages (called by the poller after each visibility
// extension). A stale task token cancels its step.
func (w *Worker) Heartbeat(ctx context.Context, messageIDs []string) {
	w.heartbeat(ctx, messageIDs, true)
}

// heartbeat renews the steps' leases; visibility says the poller has just extended their
// messages' visibility (recorded as such on the step span).
func (w *Worker) heartbeat(ctx context.Context, messageIDs []string, visibility bool) {
	var wg sync.WaitGroup
	for _, id := range messageIDs {
		w.mu.Lock()
		st := w.active[id]
		w.mu.Unlock()
		if st == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.beat(ctx, st, visibility) }()
	}
	wg.Wait()
}

func (w *Worker) beat(ctx context.Context, st *activeStep, visibility bool) {
	at := w.now()
	if err := w.Idem.Extend(ctx, st.key, st.owner, w.lease()); err != nil {
		w.log().Warn("lease renewal failed", "key", st.key, "err", err)
		lost := errors.Is(err, idem.ErrLost)
		if lost {
			w.mu.Lock()
			st.lost = true
			w.mu.Unlock()
		}
		st.span.AddEvent(telemetry.EventLeaseRenewalFailed, trace.WithAttributes(attribute.Bool(telemetry.AttrLeaseLost, lost),
			attribute.String(telemetry.AttrErrorMessage, err.Error())))
	} else {
		w.mu.Lock()
		st.leaseUntil = at.Add(w.lease())
		w.mu.Unlock()
		event := telemetry.EventLeaseRenewed
		if visibility {
			event = telemetry.EventVisibilityExtended
		}
		st.span.AddEvent(event, trace.WithAttributes(attribute.Int64(telemetry.AttrVisibilityS, int64(w.lease()/time.Second))))
	}
	if st.token != "" && w.Callbacks != nil {
		if err := w.Callbacks.Heartbeat(ctx, st.token); errors.Is(err, callback.ErrStaleToken) {
			w.mu.Lock()
			st.stale = true
			w.mu.Unlock()
			st.cancel(errStaleToken)
		} else if err != nil {
			w.log().Warn("SendTaskHeartbeat failed", "key", st.key, "err", err)
		}
	}
}

func (w *Worker) selfHeartbeat(ctx context.Context, id string) (stop func()) {
	if w.StepHeartbeat <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.StepHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.heartbeat(ctx, []string{id}, false)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (w *Worker) logVerdict(rep Report, res Result) {
	attrs := []any{"class", rep.Class, "key", rep.Key, "trace_id", rep.TraceID, "message_id", rep.MessageID,
		"attempt", rep.Attempt, "action", res.Action.String(), "duration_ms", rep.Duration.Milliseconds()}
	if res.Duplicate {
		attrs = append(attrs, "duplicate", true)
	}
	if res.Reason != nil {
		attrs = append(attrs, "code", res.Reason.Code, "reason", res.Reason.Message)
	}
	if res.Action == queue.Release {
		attrs = append(attrs, "delay_ms", res.Delay.Milliseconds())
	}
	switch res.Action {
	case queue.DeadLetter:
		w.log().Error("step dead-lettered", attrs...)
	case queue.Release:
		w.log().Warn("step released", attrs...)
	case queue.Leave:
		w.log().Warn("step left to the lease holder", attrs...)
	default:
		w.log().Info("step finished", attrs...)
	}
}
