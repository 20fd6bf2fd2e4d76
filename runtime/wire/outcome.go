package wire

import (
	"encoding/json"

	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
)

// AgentCoreMaxPayload is the largest invocation body AgentCore takes
// (awslimits.AgentCoreMaxPayload). Rule W004, the dispatcher and the runtime's server all
// hold bodies to it.
const AgentCoreMaxPayload = awslimits.AgentCoreMaxPayload

// OutcomeMediaType is the Accept type under which fleet-worker answers an invocation with an
// OutcomeEnvelope (always HTTP 200).
const OutcomeMediaType = "application/vnd.fleetc.outcome+json"

// Outcome is what an outcome envelope tells the dispatcher to do with the message.
type Outcome string

// Envelope outcomes.
const (
	OutcomeDone       Outcome = "done"        // finished (or answered from the idempotency record)
	OutcomeBusy       Outcome = "busy"        // still running, or leased elsewhere: ask again after RetryAfterSeconds
	OutcomeRetry      Outcome = "retry"       // failed, retryable: release the message
	OutcomeDeadLetter Outcome = "dead_letter" // failed for good: dead-letter with Code and Message
)

// Headers the dispatcher adds to each call (schemas/contract): HeaderOutcome asks fleet-worker
// for an OutcomeEnvelope, like Accept: OutcomeMediaType; HeaderAttempt carries the message's
// receive count.
const (
	HeaderOutcome = contract.HeaderOutcome
	HeaderAttempt = contract.HeaderAttempt
)

// EnvelopeFormat marks an OutcomeEnvelope in its body too, so it is recognised even if a
// proxy rewrites the Content-Type.
const EnvelopeFormat = "fleetc.outcome/1"

// OutcomeEnvelope is fleet-worker's answer under OutcomeMediaType.
type OutcomeEnvelope struct {
	Format            string          `json:"format"` // EnvelopeFormat
	Outcome           Outcome         `json:"outcome"`
	Output            json.RawMessage `json:"output,omitempty"`
	Duplicate         bool            `json:"duplicate,omitempty"`
	RetryAfterSeconds int             `json:"retry_after_seconds,omitempty"`
	Code              Code            `json:"code,omitempty"`
	Message           string          `json:"message,omitempty"`
}
