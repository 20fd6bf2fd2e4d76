// Package worker is the step pipeline every fleet-worker mode shares:
// parse → receive-count limit → idempotency claim → claim-check resolve →
// handler under a deadline → store result → completion events → Step
// Functions callback → verdict (delete, release with jitter, or dead-letter
// with a reason). Modes (SQS poller, Lambda, AgentCore) only move bytes in
// and apply the verdict.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fleetc/fleetc/runtime/callback"
	"github.com/fleetc/fleetc/runtime/claimcheck"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/telemetry"
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
const idemInlineMax = 350 * 1024

// Publisher publishes completion events and returns once accepted
// (runtime/events.Batcher).
type Publisher interface {
	PublishAll(ctx context.Context, entries []events.Entry) error
}

// Callbacks closes Step Functions task tokens (runtime/callback.Client).
// Errors matching callback.ErrStaleToken mean the token is gone for good.
type Callbacks interface {
	Success(ctx context.Context, token string, output []byte) error
	Failure(ctx context.Context, token, errorCode, cause string) error
	Heartbeat(ctx context.Context, token string) error
}

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
	Code      string // error code, when failed
	Duration  time.Duration
}

// Delivery is one message handed to Process.
type Delivery struct {
	MessageID   string
	Body        []byte
	Attempt     int    // 1-based receive count
	TraceParent string // W3C, from the traceparent message attribute
	// InvocationDeadline bounds this delivery's processing (Lambda: the
	// invocation's deadline); passing it is retryable, unlike the run's
	// own deadline carried in the message.
	InvocationDeadline time.Time
}

// Result is Process's verdict plus the output, for modes that answer.
type Result struct {
	queue.Outcome
	Output    json.RawMessage
	Duplicate bool
}

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
	// StepHeartbeat, when > 0, makes Process renew the idempotency lease
	// and SFN heartbeat itself (Lambda, AgentCore); the poller instead calls
	// Heartbeat from its batched visibility heartbeat.
	StepHeartbeat time.Duration

	mu     sync.Mutex
	active map[string]*activeStep // by message id
}

type activeStep struct {
	key, owner, token string
	cancel            context.CancelCauseFunc
	stale             bool
	lost              bool      // Extend found another owner
	leaseUntil        time.Time // our lease's end as of the last renewal
}

// errStaleToken cancels a step whose task token went stale mid-run.
var errStaleToken = errors.New("task token went stale while the step ran")

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Worker) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

func (w *Worker) policy() retry.Policy {
	return retry.Policy{MaxAttempts: w.Cfg.RetryLimit(), Base: w.Cfg.Retry.Base(), Cap: w.Cfg.Retry.Cap()}
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

// GroupOf returns a FIFO message's group from its body (kumo omits the
// MessageGroupId attribute; on AWS the attribute is used).
func (w *Worker) GroupOf(m *queue.Message) string {
	if w.Cfg.Queue.GroupBy == "" {
		return ""
	}
	env, err := ParseEnvelope([]byte(m.Body))
	if err != nil {
		return ""
	}
	return DetailField(env.Detail, w.Cfg.Queue.GroupBy)
}

// Process runs one delivery to a verdict. It never returns Leave unless
// ownership of the work was lost.
func (w *Worker) Process(ctx context.Context, d Delivery) (res Result) {
	start := w.now()
	rep := Report{Class: w.Cfg.Class, MessageID: d.MessageID, Attempt: d.Attempt}
	defer func() {
		rep.Action = res.Action
		rep.Duplicate = res.Duplicate
		if res.Reason != nil && rep.Code == "" {
			rep.Code = res.Reason.Code
		}
		rep.Duration = w.now().Sub(start)
		w.logVerdict(rep, res)
		if w.Observer != nil {
			w.Observer.StepFinished(rep)
		}
	}()

	env, err := ParseEnvelope(d.Body)
	if err != nil {
		if w.Telemetry != nil {
			// No trace to attach a span to; still count the dead letter.
			w.Telemetry.Metrics.ObserveStep(w.Cfg.Class, telemetry.OutcomeDeadLetter, w.now().Sub(start))
		}
		return deadLetter("MalformedMessage", err.Error())
	}
	rep.TraceID = env.TraceID
	// An async tool's job record ends FAILED on every dead letter that names a job (the
	// id must ride the detail itself, not a claim-checked payload).
	jobID := w.jobID(env.Detail)
	defer func() {
		if res.Action == queue.DeadLetter {
			w.jobFailed(ctx, jobID, res.Reason)
		}
	}()
	if w.Telemetry != nil {
		var step *telemetry.Step
		ctx = telemetry.ExtractInto(ctx, map[string]string{telemetry.AttrTraceparent: d.TraceParent}, env.TraceID)
		ctx, step = w.Telemetry.StartStep(ctx, telemetry.StepInfo{TraceID: env.TraceID, MessageID: d.MessageID, Attempt: d.Attempt, Source: env.Kind})
		defer func() {
			var err error
			if res.Reason != nil {
				err = res.Reason
			}
			step.End(outcomeLabel(res), err)
		}()
		if tp := telemetry.Inject(ctx)[telemetry.AttrTraceparent]; tp != "" {
			d.TraceParent = tp
		}
	} else if d.TraceParent != "" {
		// No spans of our own: still carry the producer's context onward.
		ctx = telemetry.ExtractInto(ctx, map[string]string{telemetry.AttrTraceparent: d.TraceParent}, "")
	}
	key, err := idem.Key(env.Detail, w.Cfg.Idempotency.Key, env.FallbackKey())
	if err != nil {
		r := deadLetter("BadIdempotencyKey", err.Error())
		w.failTask(ctx, env, r.Reason)
		return r
	}
	rep.Key = key
	if env.Kind == KindSFN && w.Callbacks == nil {
		return deadLetter("NoCallbacks", "a Step Functions task message reached a worker without a Step Functions client")
	}

	// The record is consulted before the receive limit: finished work is
	// answered from it and work another worker holds is left to it, so
	// neither a crash after the side effect nor busy bounces kill it.
	claimedAt := w.now()
	claim, err := w.Idem.Acquire(ctx, key, w.lease())
	if err != nil {
		return w.failed(ctx, env, d, retry.Retryable("IdempotencyUnavailable", err))
	}
	switch claim.State {
	case idem.Done:
		return w.answerDuplicate(ctx, env, key, claim)
	case idem.Busy:
		// Another live lease holds the work: not a failure, come back when
		// it ends (plus jitter, so duplicates do not return in lockstep).
		wait := claim.LeaseUntil.Sub(w.now()) + time.Duration(rand.Int64N(int64(time.Second)))
		if wait < time.Second {
			wait = time.Second
		}
		rep.Code = "Busy"
		return Result{Outcome: queue.Outcome{Action: queue.Release, Delay: wait, Reason: &retry.Error{Code: "Busy", Message: "another worker holds the lease", Retryable: true}}}
	}

	// We own the work.
	if limit := w.Cfg.RetryLimit(); d.Attempt > limit {
		// Earlier attempts ended with no verdict and no live lease: the
		// worker died or lost the message mid-step. Say so instead of
		// redriving silently.
		w.abandon(ctx, key, claim.Owner)
		r := deadLetter("ReceiveLimitExceeded", fmt.Sprintf("received %d times (limit %d); earlier attempts ended without a verdict (worker killed, crashed or lost its heartbeat)", d.Attempt, limit))
		w.failTask(ctx, env, r.Reason)
		return r
	}
	detail := []byte(env.Detail)
	if _, hasRef, err := claimcheck.ParseRef(detail); err != nil {
		w.abandon(ctx, key, claim.Owner)
		r := deadLetter("BadPayloadRef", err.Error())
		w.failTask(ctx, env, r.Reason)
		return r
	} else if hasRef {
		if w.Payloads == nil {
			w.abandon(ctx, key, claim.Owner)
			r := deadLetter("NoClaimCheck", "payload_ref given but no claim-check store configured")
			w.failTask(ctx, env, r.Reason)
			return r
		}
		resolved, err := w.Payloads.Resolve(ctx, detail)
		if err != nil {
			w.abandon(ctx, key, claim.Owner)
			return w.failed(ctx, env, d, retry.Retryable("PayloadFetchFailed", err))
		}
		detail = resolved
	}

	// Deadline: the smaller of the step's max and what remains of the run;
	// then no later than the invocation's end.
	now := w.now()
	budget := retry.StepBudget(w.Cfg.Step.Max(), env.Deadline, now)
	if budget <= 0 {
		w.abandon(ctx, key, claim.Owner)
		if env.TaskToken != "" {
			// The task timed out in Step Functions already: its token is as
			// good as stale and the state's Retry/Catch has taken over.
			rep.Code = "StaleToken"
			return Result{Outcome: queue.Outcome{Action: queue.Delete, Reason: &retry.Error{Code: "StaleToken", Message: fmt.Sprintf("the task's deadline %s passed before the step started", env.Deadline.UTC().Format(time.RFC3339))}}}
		}
		r := deadLetter("DeadlineExceeded", fmt.Sprintf("the run's deadline %s passed before the step started", env.Deadline.UTC().Format(time.RFC3339)))
		w.failTask(ctx, env, r.Reason)
		return r
	}
	if !d.InvocationDeadline.IsZero() {
		if rem := d.InvocationDeadline.Sub(now); rem < budget {
			budget = rem
		}
		if budget <= 0 {
			w.abandon(ctx, key, claim.Owner)
			return w.failed(ctx, env, d, &retry.Error{Code: "InvocationTimeLeft", Message: "no invocation time left to start the step", Retryable: true})
		}
	}
	w.jobRunning(ctx, jobID)
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stepCtx, cancelT := context.WithTimeout(stepCtx, budget)
	defer cancelT()
	st := &activeStep{key: key, owner: claim.Owner, token: env.TaskToken, cancel: cancel, leaseUntil: claimedAt.Add(w.lease())}
	w.register(d.MessageID, st)
	// Heartbeats (lease, visibility, SFN) run until the result is stored,
	// not just while the handler runs.
	stopBeat := w.selfHeartbeat(ctx, d.MessageID)
	out, herr := w.Handler.Handle(stepCtx, handler.Request{
		Class: w.Cfg.Class, Key: key, TraceID: env.TraceID, TraceParent: d.TraceParent,
		Attempt: d.Attempt, Deadline: now.Add(budget), Input: detail,
	})
	if herr != nil {
		stopBeat()
		w.unregister(d.MessageID)
		w.abandon(ctx, key, claim.Owner)
		if w.isStale(st) {
			// SFN timed the task out and will (or did) dispatch fresh work
			// with a new token: this delivery is finished, never retried.
			rep.Code = "StaleToken"
			return Result{Outcome: queue.Outcome{Action: queue.Delete, Reason: &retry.Error{Code: "StaleToken", Message: "task token went stale during the step"}}}
		}
		return w.failed(ctx, env, d, herr)
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}

	// The side effect happened: from here the work is never released for
	// another run. The result is stored (retrying while the lease holds)
	// before anything is deleted or answered.
	stored, fail := w.persist(ctx, env, key, st, out)
	stopBeat()
	w.unregister(d.MessageID)
	if fail != nil {
		if fail.Reason != nil {
			rep.Code = fail.Reason.Code
		}
		fail.Output = out
		return *fail
	}
	if w.isStale(st) {
		// The result is stored: the task SFN re-dispatched with a new token
		// is answered from the record. Emit events now, skip the callback.
		noToken := *env
		noToken.TaskToken = ""
		res = w.publish(ctx, &noToken, key, stored, !w.emits())
		if res.Action == queue.Delete {
			rep.Code = "StaleToken"
			res.Reason = &retry.Error{Code: "StaleToken", Message: "task token went stale during the step; result stored for the re-dispatched task"}
		}
		res.Output = out
		return res
	}
	res = w.publish(ctx, env, key, stored, false)
	res.Output = out
	return res
}

// errResultTooLarge marks outputs that cannot be delivered (no claim-check
// bucket for an output above an inline limit): retrying cannot help.
var errResultTooLarge = errors.New("result too large to deliver inline and no claim-check bucket is configured")

// persist stores the result (offloading it when large) and completes the
// idempotency record. Transient failures are retried with jitter while our
// lease holds, since releasing would let a later delivery re-run the side
// effect; it gives up (Leave) only when the lease is lost or ctx ends.
// Outputs that can never be delivered are dead-lettered.
func (w *Worker) persist(ctx context.Context, env *Envelope, key string, st *activeStep, out json.RawMessage) (json.RawMessage, *Result) {
	var stored json.RawMessage
	pol := retry.Policy{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	// A shutdown that lands just after the side effect still gets its
	// store attempts; ctx only stops the retrying.
	attempt := func() (err error) {
		storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if stored == nil {
			if stored, err = w.storedResult(storeCtx, env, key, st.owner, out); err != nil {
				return err
			}
		}
		return w.Idem.Complete(storeCtx, key, st.owner, stored, !w.emits(), w.lease())
	}
	for i := 0; ; i++ {
		err := attempt()
		if err == nil {
			return stored, nil
		}
		switch {
		case errors.Is(err, idem.ErrLost):
			return nil, leaseLost(err)
		case errors.Is(err, errResultTooLarge), errors.Is(err, claimcheck.ErrNoBucket), errors.Is(err, idem.ErrResultTooLarge):
			w.abandon(ctx, key, st.owner)
			r := deadLetter("ResultTooLarge", fmt.Sprintf("the step succeeded but its %d-byte result cannot be delivered: %v", len(out), err))
			w.failTask(ctx, env, r.Reason)
			return nil, &r
		}
		if w.leaseGone(st) {
			return nil, leaseLost(fmt.Errorf("lease ended while storing the result: %w", err))
		}
		w.log().Warn("storing the result failed; retrying under the lease", "key", key, "attempt", i+1, "err", err)
		t := time.NewTimer(pol.Backoff(i))
		select {
		case <-ctx.Done():
			t.Stop()
			// Shutdown: keep the claim (the record says running) and leave
			// the message; only the lease's end lets another run happen.
			return nil, &Result{Outcome: queue.Outcome{Action: queue.Leave, Reason: &retry.Error{Code: "ResultStoreInterrupted", Message: err.Error(), Retryable: true}}}
		case <-t.C:
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
	return &Result{Outcome: queue.Outcome{Action: queue.Leave, Reason: &retry.Error{Code: "LeaseLost", Message: err.Error(), Retryable: true}}}
}

// storedResult is the completion payload kept in the idempotency record:
// {"result": out} or, above the claim-check threshold, {"result_ref": ref}.
type storedResult struct {
	Result    json.RawMessage `json:"result,omitempty"`
	ResultRef *claimcheck.Ref `json:"result_ref,omitempty"`
}

// storedResult offloads out to the claim-check store above the class's
// threshold, and for Step Functions tasks above sfnInlineMax whatever the
// threshold (SendTaskSuccess would reject it); with no store such an
// output is errResultTooLarge.
func (w *Worker) storedResult(ctx context.Context, env *Envelope, key, owner string, out json.RawMessage) (json.RawMessage, error) {
	limit := w.Cfg.ClaimCheck.ThresholdBytes
	if limit <= 0 || limit > idemInlineMax {
		limit = idemInlineMax
	}
	if env.TaskToken != "" && limit > sfnInlineMax {
		limit = sfnInlineMax
	}
	s := storedResult{Result: out}
	if len(out) > limit {
		if w.Payloads == nil {
			return nil, fmt.Errorf("%w (%d bytes, inline limit %d)", errResultTooLarge, len(out), limit)
		}
		ref, err := w.Payloads.Write(ctx, w.Cfg.Class, key, owner, out)
		if err != nil {
			return nil, err
		}
		s = storedResult{ResultRef: ref}
	}
	return json.Marshal(s)
}

// emits reports whether the class publishes completion events.
func (w *Worker) emits() bool { return w.Events != nil && len(w.Cfg.Events.Emits) > 0 }

// answerDuplicate answers a delivery of finished work from the record.
func (w *Worker) answerDuplicate(ctx context.Context, env *Envelope, key string, c idem.Claim) Result {
	r := w.publish(ctx, env, key, c.Result, c.Published)
	r.Duplicate = true
	var s storedResult
	if json.Unmarshal(c.Result, &s) == nil && s.Result != nil {
		r.Output = s.Result
	}
	return r
}

// publish emits completion events (unless already published), marks the
// record, and closes the SFN task. Events and callback failures release the
// message; the next delivery finds the record done and finishes the job.
func (w *Worker) publish(ctx context.Context, env *Envelope, key string, stored json.RawMessage, published bool) Result {
	var s storedResult
	if err := json.Unmarshal(stored, &s); err != nil {
		s = storedResult{Result: stored}
	}
	// The job record goes first: a failed write releases the message, and the redelivery
	// finds the idempotency record done and repeats only what is left.
	if r := w.jobSucceeded(ctx, w.jobID(env.Detail), s); r != nil {
		return *r
	}
	if !published && w.emits() {
		entries, err := w.completionEntries(ctx, env, s)
		if err != nil {
			return deadLetter("BadCompletionEvent", err.Error())
		}
		if err := w.Events.PublishAll(ctx, entries); err != nil {
			if permanentPublishError(err) {
				// No retry can make EventBridge take this event.
				r := deadLetter("CompletionEventRejected", err.Error())
				w.failTask(ctx, env, r.Reason)
				return r
			}
			return w.release(&retry.Error{Code: "PublishFailed", Message: err.Error(), Retryable: true, Err: err}, 1)
		}
	}
	// Classes without events were stored as published by Complete.
	if !published && w.emits() {
		if err := w.Idem.MarkPublished(ctx, key); err != nil {
			w.log().Warn("could not mark published; a duplicate delivery would re-emit", "key", key, "err", err)
		}
	}
	if env.TaskToken != "" {
		output := s.Result
		if s.ResultRef != nil {
			output, _ = json.Marshal(map[string]any{"result_ref": s.ResultRef})
		}
		if err := w.Callbacks.Success(ctx, env.TaskToken, output); err != nil {
			if errors.Is(err, callback.ErrStaleToken) {
				w.log().Info("stale task token on success; deleting", "key", key, "err", err)
			} else if errors.Is(err, callback.ErrInvalidOutput) {
				// Too large or not JSON (e.g. a record stored inline by an
				// older worker): tell the workflow instead of retrying forever.
				code := "InvalidOutput"
				if len(output) > callback.MaxOutputBytes {
					code = "ResultTooLarge"
				}
				r := deadLetter(code, err.Error())
				w.failTask(ctx, env, r.Reason)
				return r
			} else {
				return w.release(&retry.Error{Code: "CallbackFailed", Message: err.Error(), Retryable: true, Err: err}, 1)
			}
		}
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

// completionEntries builds one entry per events.emits: detail = trace_id,
// agent_class, the group_by field, and result or result_ref.
// The step's trace context rides along (detail.traceparent and the X-Ray
// TraceHeader), so consumers continue the trace.
func (w *Worker) completionEntries(ctx context.Context, env *Envelope, s storedResult) ([]events.Entry, error) {
	detail := map[string]any{"agent_class": w.Cfg.Class}
	if env.TraceID != "" {
		detail["trace_id"] = env.TraceID
	}
	if tp := telemetry.Inject(ctx)[telemetry.AttrTraceparent]; tp != "" {
		detail["traceparent"] = tp
	}
	xray := telemetry.XRayTraceHeader(ctx)
	if g := w.Cfg.Queue.GroupBy; g != "" {
		var m map[string]json.RawMessage
		if json.Unmarshal(env.Detail, &m) == nil {
			if v, ok := m[g]; ok {
				detail[g] = v
			}
		}
	}
	if s.ResultRef != nil {
		detail["result_ref"] = s.ResultRef
	} else {
		detail["result"] = s.Result
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return nil, err
	}
	entries := make([]events.Entry, 0, len(w.Cfg.Events.Emits))
	for _, e := range w.Cfg.Events.Emits {
		entries = append(entries, events.Entry{Source: e.Source, DetailType: e.DetailType, Detail: raw, TraceID: env.TraceID, TraceHeader: xray})
	}
	return entries, nil
}

// failed turns a step failure into release-with-jitter or dead-letter.
func (w *Worker) failed(ctx context.Context, env *Envelope, d Delivery, err error) Result {
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
func (w *Worker) failTask(ctx context.Context, env *Envelope, reason *retry.Error) {
	if env == nil || env.TaskToken == "" || w.Callbacks == nil || reason == nil {
		return
	}
	if err := w.Callbacks.Failure(ctx, env.TaskToken, reason.Code, reason.Message); err != nil {
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
	case r.Reason != nil && r.Reason.Code == "StaleToken":
		return telemetry.OutcomeStaleToken
	}
	return telemetry.OutcomeSuccess
}

func deadLetter(code, msg string) Result {
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
	var wg sync.WaitGroup
	for _, id := range messageIDs {
		w.mu.Lock()
		st := w.active[id]
		w.mu.Unlock()
		if st == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.beat(ctx, st) }()
	}
	wg.Wait()
}

func (w *Worker) beat(ctx context.Context, st *activeStep) {
	at := w.now()
	if err := w.Idem.Extend(ctx, st.key, st.owner, w.lease()); err != nil {
		w.log().Warn("lease renewal failed", "key", st.key, "err", err)
		if errors.Is(err, idem.ErrLost) {
			w.mu.Lock()
			st.lost = true
			w.mu.Unlock()
		}
	} else {
		w.mu.Lock()
		st.leaseUntil = at.Add(w.lease())
		w.mu.Unlock()
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
				w.Heartbeat(ctx, []string{id})
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
