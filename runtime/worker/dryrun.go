package worker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// DryRun is one handler run outside any queue, held to the class's contracts.
type DryRun struct {
	Result json.RawMessage
	Events []events.Entry // the completion events Process would publish
	Code   wire.Code      // "" = the step would finish
	Reason string
	// Retryable: the handler's failure would release the work for another attempt, not
	// dead-letter it.
	Retryable bool
}

// DryRun runs the handler once on detail (a step's input, claim checks resolved) and judges
// the result as runStep and finish do: a handler failure, the class's output contract, then
// every completion event built by the fill rule and checked against its schema. No
// idempotency record, no queue, nothing published: `fleetc invoke` uses it.
func (w *Worker) DryRun(ctx context.Context, detail json.RawMessage) (DryRun, error) {
	env, err := wire.ParseEnvelope(detail)
	if err != nil {
		return DryRun{Code: wire.MalformedMessage, Reason: err.Error()}, nil
	}
	if err := w.CompileContracts(); err != nil {
		return DryRun{Code: wire.EventContractViolation, Reason: err.Error()}, nil
	}
	policy, reason := w.modelPolicy(env)
	if reason != "" {
		return DryRun{Code: wire.ModelPolicyNotAllowed, Reason: reason}, nil
	}
	deadline, _ := ctx.Deadline()
	out, err := w.Handler.Handle(ctx, handler.Request{Class: w.Cfg.Class, Key: env.FallbackKey(), TraceID: env.TraceID,
		Conversation: env.ConversationID(), Attempt: 1, Deadline: deadline, Input: env.Detail, ModelPolicy: policy})
	if err != nil {
		if msg, ok := w.outputInvalid(err); ok {
			return DryRun{Code: wire.HandlerOutputInvalid, Reason: msg}, nil
		}
		var re *retry.Error
		if errors.As(err, &re) {
			return DryRun{Code: re.Code, Reason: re.Message, Retryable: re.Retryable}, nil
		}
		return DryRun{}, err
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	r := DryRun{Result: out}
	if msg := w.CheckOutput(out); msg != "" {
		r.Code, r.Reason = wire.HandlerOutputInvalid, msg
		return r, nil
	}
	entries, err := w.completionEntries(ctx, env, storedResult{Result: out, Fields: OutputFields(w.Cfg, out)})
	if errors.Is(err, errContract) {
		r.Code, r.Reason = wire.EventContractViolation, err.Error()
		return r, nil
	}
	r.Events = entries
	return r, err
}
