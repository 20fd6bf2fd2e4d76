// Package dispatch feeds an AgentCore class: it takes each message of the class queue and
// forwards its body to InvokeAgentRuntime, then turns the answer into the queue's verdict
// (delete, release with a delay, or dead-letter with a reason).
//
// The step itself runs inside the runtime (fleet-worker --mode agentcore): idempotency claim,
// handler, result store, completion events, task-token callback. The dispatcher only moves
// the message and keeps it invisible while the step runs. It asks for an outcome envelope
// (Accept: wire.OutcomeMediaType) that fleet-worker answers with HTTP 200 whatever the verdict, so
// AgentCore never turns our own "retry later" into a RuntimeClientError; an agent that is not
// fleet-worker answers plain JSON or an event stream, which counts as done.
//
// Long steps: one InvokeAgentRuntime call is synchronous for at most 15 minutes. fleet-worker
// answers "busy" once a step has run for the class's sync limit and keeps it running; the
// dispatcher holds the message (the consumer's heartbeat keeps it invisible) and asks again
// after the advised delay, in the same session, until the step is done. Busy answers never
// release the message, so they cost no SQS receive.
//
// Retries happen at one layer: the SDK's are off, the queue's Policy decides.
package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Session id bounds (X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: 33 to 256 characters).
const (
	MinSessionID = 33
	MaxSessionID = 256
)

// maxResponse bounds how much of an answer is read (an agent's own JSON or event stream):
// AgentCore's payload limit, the bound a request has.
const maxResponse = wire.AgentCoreMaxPayload

// callMargin is added to the sync limit for one call: the runtime answers busy at the limit,
// and the answer must still get back.
const callMargin = 30 * time.Second

// API is the InvokeAgentRuntime part of the bedrock-agentcore client.
type API interface {
	InvokeAgentRuntime(ctx context.Context, in *bedrockagentcore.InvokeAgentRuntimeInput, optFns ...func(*bedrockagentcore.Options)) (*bedrockagentcore.InvokeAgentRuntimeOutput, error)
}

// TaskFailer sends SendTaskFailure (runtime/callback.Client).
type TaskFailer interface {
	Failure(ctx context.Context, token, errorCode, cause string) error
}

// Dispatcher forwards queue messages to one AgentCore runtime.
type Dispatcher struct {
	API        API
	RuntimeARN string
	Qualifier  string // endpoint; "" = DEFAULT
	Class      string
	// SessionField is the detail field naming the conversation ("" = the trace id).
	SessionField string
	// SyncLimit is how long fleet-worker waits before answering busy; one call may take it
	// plus callMargin.
	SyncLimit time.Duration
	// Hold bounds how long one receive re-invokes busy work when the message carries no
	// deadline of its own (the step's max plus a sync limit).
	Hold   time.Duration
	Policy retry.Policy
	// Tasks fails the Step Functions task of a message the dispatcher dead-letters itself (the
	// runtime never answered); nil = none. A dead_letter answer was already reported by the
	// runtime.
	Tasks TaskFailer
	Log   *slog.Logger
	Now   func() time.Time
	// Wait sleeps d or until ctx ends (tests replace it); nil = a timer.
	Wait func(ctx context.Context, d time.Duration) error
}

// SessionID derives the runtime session id of a conversation: deterministic, so every step
// of a conversation lands in the same session, and always 70 characters (the class keeps two
// classes' conversations apart).
func SessionID(class, conversation string) string {
	sum := sha256.Sum256([]byte(class + "\x00" + conversation))
	return "fleet-" + hex.EncodeToString(sum[:]) // 6 + 64 characters
}

// ProcessMessage is a queue.ProcessFunc (poll mode: no invocation deadline).
func (d *Dispatcher) ProcessMessage(ctx context.Context, m *queue.Message) queue.Outcome {
	return d.Dispatch(ctx, m, time.Time{})
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

func (d *Dispatcher) wait(ctx context.Context, t time.Duration) error {
	ctx, cancel := queue.UntilShutdown(ctx) // SIGTERM hands the message back, not only the drain budget
	defer cancel()
	if d.Wait != nil {
		return d.Wait(ctx, t)
	}
	tm := time.NewTimer(t)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// Dispatch invokes the runtime with m's body until it answers something other than busy, or
// until the hold ends: the message's own deadline, d.Hold, or until (a Lambda invocation's
// end; zero = none), whichever comes first.
func (d *Dispatcher) Dispatch(ctx context.Context, m *queue.Message, until time.Time) queue.Outcome {
	if len(m.Body) > wire.AgentCoreMaxPayload {
		return deadLetter(wire.PayloadTooLarge, fmt.Sprintf("message body of %d bytes exceeds InvokeAgentRuntime's 100 MB; claim-check it", len(m.Body)))
	}
	env, err := wire.ParseEnvelope([]byte(m.Body))
	if err != nil {
		return deadLetter(wire.MalformedMessage, err.Error())
	}
	session := SessionID(d.Class, d.conversation(env, m))
	hold, callEnd := d.window(env.Deadline, until)
	in := d.input(m, session)
	for call := 1; ; call++ {
		out, err := d.invoke(ctx, in, callEnd, m.ReceiveCount)
		if err != nil {
			if ctx.Err() != nil {
				// Shutdown: hand the message back now; the runtime keeps the step, and the
				// next delivery is answered from it.
				return queue.Outcome{Action: queue.Release, Reason: retry.Classify(err)}
			}
			return d.failTask(ctx, env.TaskToken, d.decide(err, m.ReceiveCount))
		}
		if out.Outcome != wire.OutcomeBusy {
			return d.verdict(ctx, env.TaskToken, out, m.ReceiveCount)
		}
		delay := max(seconds(out.RetryAfterSeconds), time.Second)
		reason := &retry.Error{Code: wire.Busy, Message: out.Message, Retryable: true, RetryAfter: delay}
		if !d.now().Add(delay).Before(hold) {
			if !d.lastReceive(m.ReceiveCount) || (!until.IsZero() && !d.now().Add(delay).Before(until)) {
				// Out of holding time: release for the advised delay; the next delivery is
				// answered busy or from the result.
				return queue.Outcome{Action: queue.Release, Delay: delay, Reason: reason}
			}
			// The last receive the class may use: a release would spend it on work that is
			// still running (docs/faults.md). Hold on; the runtime ends the step itself, past
			// the run's deadline too.
			hold, callEnd = d.window(time.Time{}, until)
		}
		d.log().Debug("agent step still running; asking again", "class", d.Class, "message_id", m.ID, "session", session, "call", call, "after", delay)
		if err := d.wait(ctx, delay); err != nil {
			return queue.Outcome{Action: queue.Release, Reason: reason}
		}
	}
}

// lastReceive reports whether a delivery is on the last receive the retry policy allows.
func (d *Dispatcher) lastReceive(receiveCount int) bool {
	return d.Policy.MaxAttempts > 0 && receiveCount >= d.Policy.MaxAttempts
}

// conversation names the conversation m belongs to: the SessionField of its detail, else its
// trace id, else the message itself.
func (d *Dispatcher) conversation(env *wire.Envelope, m *queue.Message) string {
	conv := ""
	if d.SessionField != "" {
		conv = wire.DetailField(env.Detail, d.SessionField)
	}
	if conv == "" {
		conv = env.TraceID
	}
	if conv == "" {
		conv = "message:" + m.ID
	}
	return conv
}

// window returns how long busy work is held (the message's deadline or d.Hold, whichever is
// first) and when a call must end: the hold plus a margin (the runtime ends the step itself),
// never past until, a Lambda invocation's end (zero = none).
func (d *Dispatcher) window(deadline, until time.Time) (hold, callEnd time.Time) {
	hold = d.now().Add(d.Hold)
	if !deadline.IsZero() && deadline.Before(hold) {
		hold = deadline
	}
	callEnd = hold.Add(callMargin)
	if !until.IsZero() && until.Before(hold) {
		hold = until
	}
	if !until.IsZero() && until.Before(callEnd) {
		callEnd = until
	}
	return hold, callEnd
}

// input is the InvokeAgentRuntime request for m, the same for every call of one receive.
func (d *Dispatcher) input(m *queue.Message, session string) *bedrockagentcore.InvokeAgentRuntimeInput {
	var traceParent *string
	if tp, ok := m.MessageAttributes["traceparent"]; ok && aws.ToString(tp.StringValue) != "" {
		traceParent = tp.StringValue
	}
	return &bedrockagentcore.InvokeAgentRuntimeInput{
		AgentRuntimeArn:  aws.String(d.RuntimeARN),
		Qualifier:        aws.String(d.qualifier()),
		RuntimeSessionId: aws.String(session),
		ContentType:      aws.String("application/json"),
		Accept:           aws.String(wire.OutcomeMediaType),
		TraceParent:      traceParent,
		Payload:          []byte(m.Body),
	}
}

// verdict turns the runtime's final (not busy) answer into the queue's outcome.
func (d *Dispatcher) verdict(ctx context.Context, task string, out *wire.OutcomeEnvelope, receiveCount int) queue.Outcome {
	switch out.Outcome {
	case wire.OutcomeDone:
		return queue.Outcome{Action: queue.Delete}
	case wire.OutcomeDeadLetter:
		code := out.Code
		if code == "" {
			code = wire.AgentFailed
		}
		return queue.Outcome{Action: queue.DeadLetter, Reason: &retry.Error{Code: code, Message: out.Message}}
	case wire.OutcomeRetry:
		e := &retry.Error{Code: out.Code, Message: out.Message, Retryable: true, RetryAfter: seconds(out.RetryAfterSeconds)}
		if e.Code == "" {
			e.Code = wire.AgentRetry
		}
		return d.failTask(ctx, task, d.decide(e, receiveCount))
	default:
		return d.failTask(ctx, task, deadLetter(wire.BadOutcome, fmt.Sprintf("runtime answered outcome %q", out.Outcome)))
	}
}

func (d *Dispatcher) qualifier() string {
	if d.Qualifier == "" {
		return "DEFAULT"
	}
	return d.Qualifier
}

// invoke makes one call and reads the whole answer into an envelope: fleet-worker's own, or
// "done" for any other agent's 2xx answer (JSON or an event stream read to its end). A call
// cut short by its own timeout while the runtime may still run the step is "busy".
func (d *Dispatcher) invoke(ctx context.Context, in *bedrockagentcore.InvokeAgentRuntimeInput, end time.Time, attempt int) (*wire.OutcomeEnvelope, error) {
	limit := d.SyncLimit
	if limit <= 0 {
		limit = DefaultSyncLimit
	}
	callCtx, cancel := context.WithTimeout(ctx, limit+callMargin)
	defer cancel()
	callCtx, cancelEnd := context.WithDeadline(callCtx, end)
	defer cancelEnd()
	out, err := d.API.InvokeAgentRuntime(callCtx, in, func(o *bedrockagentcore.Options) {
		o.APIOptions = append(o.APIOptions,
			smithyhttp.SetHeaderValue(wire.HeaderOutcome, "1"),
			smithyhttp.SetHeaderValue(wire.HeaderAttempt, strconv.Itoa(max(attempt, 1))))
	})
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() != nil {
			return &wire.OutcomeEnvelope{Outcome: wire.OutcomeBusy, RetryAfterSeconds: 1, Message: "the call outlived its timeout; the runtime keeps the step"}, nil
		}
		return nil, err
	}
	defer out.Response.Close()
	body, err := io.ReadAll(io.LimitReader(out.Response, maxResponse))
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() != nil {
			return &wire.OutcomeEnvelope{Outcome: wire.OutcomeBusy, RetryAfterSeconds: 1, Message: "the answer outlived the call's timeout"}, nil
		}
		return nil, &retry.Error{Code: wire.ResponseInterrupted, Message: err.Error(), Retryable: true, Err: err}
	}
	mt, _, _ := mime.ParseMediaType(aws.ToString(out.ContentType))
	var env wire.OutcomeEnvelope
	err = json.Unmarshal(body, &env)
	switch {
	case mt == wire.OutcomeMediaType && err != nil:
		return nil, &retry.Error{Code: wire.BadOutcome, Message: "unreadable outcome envelope: " + err.Error(), Retryable: true}
	case mt == wire.OutcomeMediaType || (err == nil && env.Format == wire.EnvelopeFormat):
		return &env, nil
	}
	// Another agent's own answer (JSON, text, or an event stream read to its end).
	return &wire.OutcomeEnvelope{Outcome: wire.OutcomeDone, Output: body}, nil
}

// decide applies the retry policy to a failed call.
func (d *Dispatcher) decide(err error, attempt int) queue.Outcome {
	dec := d.Policy.Decide(classify(err), attempt)
	if dec.DeadLetter {
		return queue.Outcome{Action: queue.DeadLetter, Reason: dec.Reason}
	}
	return queue.Outcome{Action: queue.Release, Delay: dec.Delay, Reason: dec.Reason}
}

// permanentCodes are InvokeAgentRuntime errors no retry fixes: the request or the caller's
// permissions are wrong. Throttling, quota, internal errors, a missing runtime (deploying) and
// RuntimeClientError (the container failed or is not up) are retried by the queue.
var permanentCodes = map[string]bool{
	"ValidationException":   true,
	"AccessDeniedException": true,
	"UnauthorizedException": true,
}

// classify turns an SDK error into a retry.Error carrying the AWS error code, the HTTP status
// and the server's Retry-After.
func classify(err error) error {
	var re *retry.Error
	if errors.As(err, &re) {
		return re
	}
	e := &retry.Error{Code: wire.RuntimeUnreachable, Message: err.Error(), Retryable: true, Err: err}
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.Response != nil {
		e.Status = resp.HTTPStatusCode()
		if ra, ok := retry.ParseRetryAfter(resp.Response.Header.Get("Retry-After"), time.Now()); ok {
			e.RetryAfter = ra
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		e.Code = wire.Code(api.ErrorCode()) // AWS's own error code, passed on as the reason
		e.Message = api.ErrorMessage()
		if e.Message == "" {
			e.Message = http.StatusText(e.Status)
		}
		e.Retryable = !permanentCodes[api.ErrorCode()]
	}
	e.Message = strings.TrimSpace(e.Message)
	return e
}

// failTask reports a dead letter the dispatcher decided to the task's workflow, as the worker
// does for its own: the state's Catch runs now instead of at the task's timeout.
func (d *Dispatcher) failTask(ctx context.Context, token string, out queue.Outcome) queue.Outcome {
	if out.Action != queue.DeadLetter || token == "" || d.Tasks == nil || out.Reason == nil {
		return out
	}
	if err := d.Tasks.Failure(context.WithoutCancel(ctx), token, string(out.Reason.Code), out.Reason.Message); err != nil {
		d.log().Warn("SendTaskFailure failed", "class", d.Class, "code", out.Reason.Code, "err", err)
	}
	return out
}

func deadLetter(code wire.Code, msg string) queue.Outcome {
	return queue.Outcome{Action: queue.DeadLetter, Reason: &retry.Error{Code: code, Message: msg}}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
