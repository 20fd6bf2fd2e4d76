package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// The fault model (docs/faults.md): within one receive the worker holds the message (the
// poller's visibility heartbeat and the lease renewals go on) and retries the handler in
// process, through throttles and retryable failures, until the step window closes. Only a
// closed window spends a receive, so the class's failure budget counts windows and crashes,
// not individual failures.

// window is how long one receive may hold the work: step.max from the claim, clipped by the
// run's deadline, the event's TTL and the invocation's end. hard names the bound that closes
// it when that is the run's deadline or the TTL (a dead letter, DeadlineExceeded); "" when
// step.max or the invocation closes it (the message is released: a receive is spent).
type window struct {
	end  time.Time
	hard string
}

func (w *Worker) stepWindow(env *wire.Envelope, d Delivery, from time.Time) window {
	win := window{end: from.Add(w.Cfg.Step.Max())}
	if t := d.InvocationDeadline; !t.IsZero() && t.Before(win.end) {
		win.end = t
	}
	if t := env.Deadline; !t.IsZero() && !t.After(win.end) {
		win = window{end: t, hard: "the run's deadline " + t.UTC().Format(time.RFC3339)}
	}
	if t := env.Expires; !t.IsZero() && !t.After(win.end) {
		win = window{end: t, hard: "the event's TTL (ttl_seconds, " + t.UTC().Format(time.RFC3339) + ")"}
	}
	return win
}

// hold calls the handler (under stepCtx, each call's budget what remains of the window)
// until it succeeds or a verdict is due. A throttle waits its RetryAfter (plus ≤10 %
// jitter) and is not counted; a retryable failure waits full jitter on the failures so far
// in this receive. When the next wait would pass the window, windowClosed decides. On a
// verdict the claim has been given back (or lost).
func (w *Worker) hold(ctx, stepCtx context.Context, env *wire.Envelope, d Delivery, st *activeStep, win window,
	call func(context.Context) (json.RawMessage, error)) (json.RawMessage, *Result) {
	pol := w.policy()
	failures := 0
	verdict := func(r Result) (json.RawMessage, *Result) {
		w.abandon(ctx, st.key, st.owner)
		return nil, &r
	}
	for {
		callCtx, cancel := context.WithDeadline(stepCtx, win.end)
		out, herr := call(callCtx)
		cancel()
		if herr == nil {
			return out, nil
		}
		if msg, bad := w.outputInvalid(herr); bad {
			return verdict(w.deadLetterTask(ctx, env, wire.HandlerOutputInvalid, msg))
		}
		if w.isStale(st) {
			// SFN timed the task out and will (or did) dispatch fresh work
			// with a new token: this delivery is finished, never retried.
			return verdict(staleToken("task token went stale during the step"))
		}
		e := retry.Classify(herr)
		if !e.Retryable || ctx.Err() != nil {
			return verdict(w.failed(ctx, env, d, herr))
		}
		kind := telemetry.RetryThrottle
		if retry.Counts(e) {
			failures++
			kind = telemetry.RetryFailure
		}
		delay := pol.Delay(e, failures)
		if !w.now().Add(delay).Before(win.end) {
			return verdict(w.windowClosed(ctx, env, d, win, e, kind, delay))
		}
		if w.leaseGone(st) {
			return nil, leaseLost(fmt.Errorf("lease ended while the step was held for a retry: %w", e))
		}
		w.held(ctx, d, st.key, kind, e, delay)
		if w.holdWait(stepCtx, delay) != nil {
			if w.isStale(st) {
				return verdict(staleToken("task token went stale while the step was held for a retry"))
			}
			// Shutdown: hand the work on now.
			return verdict(Result{Outcome: queue.Outcome{Action: queue.Release, Reason: e}})
		}
		if w.leaseGone(st) {
			// The renewals failed during the wait: another worker may own the step now, and
			// calling the handler again would repeat its side effect.
			return nil, leaseLost(fmt.Errorf("lease ended while the step was held for a retry: %w", e))
		}
	}
}

// windowClosed is the verdict when the next wait would pass the window: the run's deadline
// or the TTL closing it dead-letters DeadlineExceeded naming the last cause; step.max (or
// the invocation's end) releases the message with the pending delay, which spends a
// receive, and at the class's receive limit dead-letters RetriesExhausted.
func (w *Worker) windowClosed(ctx context.Context, env *wire.Envelope, d Delivery, win window, cause *retry.Error, kind telemetry.RetryKind, delay time.Duration) Result {
	if win.hard != "" {
		during := "a retry backoff"
		if kind == telemetry.RetryThrottle {
			during = "a throttle"
		}
		r := &retry.Error{Code: wire.DeadlineExceeded, Status: cause.Status, Err: cause,
			Message: fmt.Sprintf("%s passes during %s: %s", win.hard, during, cause.Error())}
		w.failTask(ctx, env, r)
		return Result{Outcome: queue.Outcome{Action: queue.DeadLetter, Reason: r}}
	}
	if dec := w.policy().Decide(cause, d.Attempt); dec.DeadLetter {
		w.failTask(ctx, env, dec.Reason)
		return Result{Outcome: queue.Outcome{Action: queue.DeadLetter, Reason: dec.Reason}}
	}
	return Result{Outcome: queue.Outcome{Action: queue.Release, Delay: delay, Reason: cause}}
}

// busyWait is what a receive does when another worker's live lease holds the work (e.g. a
// worker killed mid-step, whose lease has not lapsed yet): it holds the message until the
// lease's end (plus ≤1 s jitter, so duplicates do not return in lockstep) and returns nil
// for the caller to claim again. Only when the lease would outlast the window (a live holder
// that keeps renewing) is the message released for the rest of the lease, and never on the
// last receive the worker may use: there it keeps holding (up to the invocation's end).
func (w *Worker) busyWait(ctx context.Context, d Delivery, key string, win window, leaseUntil time.Time) *Result {
	wait := leaseUntil.Sub(w.now()) + time.Duration(w.jitter()*float64(time.Second))
	wait = max(wait, busyFloor)
	bound := win.end
	if d.Attempt >= w.Cfg.RetryLimit() {
		bound = d.InvocationDeadline // zero: no bound
	}
	busy := &retry.Error{Code: wire.Busy, Message: "another worker holds the lease", Retryable: true}
	release := &Result{Outcome: queue.Outcome{Action: queue.Release, Delay: max(wait, time.Second), Reason: busy}}
	if !bound.IsZero() && !w.now().Add(wait).Before(bound) {
		return release
	}
	w.held(ctx, d, key, telemetry.RetryBusy, busy, wait)
	if w.holdWait(ctx, wait) != nil {
		return release // shutdown
	}
	return nil
}

// holdWait is wait for a hold's pauses (throttle, backoff, Busy), which also end when the
// poller is told to stop (SIGTERM): the message is handed back then, not held until the drain
// budget cancels the step. A running handler call still gets that budget.
func (w *Worker) holdWait(ctx context.Context, d time.Duration) error {
	ctx, cancel := queue.UntilShutdown(ctx)
	defer cancel()
	return w.wait(ctx, d)
}

// busyFloor keeps a Busy wait from spinning on a lease that is just ending.
const busyFloor = 100 * time.Millisecond

// held makes an in-receive retry visible: a span event and a log line with the delay and why.
func (w *Worker) held(ctx context.Context, d Delivery, key string, kind telemetry.RetryKind, e *retry.Error, delay time.Duration) {
	telemetry.Event(ctx, telemetry.EventRetry, attribute.String(telemetry.AttrAction, telemetry.ActionHold),
		attribute.String(telemetry.AttrRetryKind, string(kind)), attribute.Int(telemetry.AttrAttempt, d.Attempt),
		attribute.Int64(telemetry.AttrRetryDelayMS, delay.Milliseconds()), attribute.String(telemetry.AttrErrorCode, string(e.Code)),
		attribute.String(telemetry.AttrErrorMessage, e.Message))
	w.log().Warn("step held for a retry in this receive", "class", w.Cfg.Class, "key", key, "message_id", d.MessageID,
		"attempt", d.Attempt, "kind", string(kind), "code", e.Code, "reason", e.Message, "delay_ms", delay.Milliseconds())
}
