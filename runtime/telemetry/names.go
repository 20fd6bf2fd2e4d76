package telemetry

// The Prometheus metric and label names are in runtime/telemetry/metric (a leaf package the
// compiler's generated dashboard imports).

// Step outcomes (values of the outcome label).
const (
	OutcomeSuccess    = "success"     // done; message deleted
	OutcomeFailure    = "failure"     // non-retryable; reported (SendTaskFailure) and deleted
	OutcomeRetry      = "retry"       // left for queue redelivery
	OutcomeDeadLetter = "dead_letter" // moved to the DLQ by the worker
	OutcomeDuplicate  = "duplicate"   // idempotency hit; skipped
	OutcomeStaleToken = "stale_token" // callback token stale; deleted
)

// Log attribute keys written by the JSON log handler.
const (
	LogTraceID     = "trace_id"      // the business trace id (detail.trace_id)
	LogOTelTraceID = "otel_trace_id" // W3C trace id of the current span
	LogSpanID      = "span_id"
	LogClass       = "class"
)

// AttrTraceparent is the SQS message attribute carrying W3C trace context.
const AttrTraceparent = "traceparent"

// StepDurationBuckets span sub-second tool calls to hour-long agent steps.
var StepDurationBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600}

// Span events on a step's invoke_agent span: every decision the worker takes about the
// step, so a trace explains why a message was retried, kept or dead-lettered.
const (
	// EventRetry: the step is released (or left) for another delivery, with the code,
	// the delay the retry policy chose and the attempt.
	EventRetry = "fleet.retry"
	// EventDeadLetter: the step is dead-lettered, with its wire.Code and reason (the
	// ERROR_CODE and ERROR_MESSAGE the dead letter carries).
	EventDeadLetter = "fleet.dead_letter"
	// EventLeaseLost: another claimant owns the work now; the message is left to it.
	EventLeaseLost = "fleet.lease_lost"
	// EventLeaseRenewalFailed: renewing the idempotency lease failed (lost or transient).
	EventLeaseRenewalFailed = "fleet.lease_renewal_failed"
	// EventVisibilityExtended: the poller extended the message's visibility and the
	// lease was renewed with it.
	EventVisibilityExtended = "fleet.visibility_extended"
	// EventLeaseRenewed: a self-heartbeat (Lambda, AgentCore) renewed the lease.
	EventLeaseRenewed = "fleet.lease_renewed"
	// EventRetry with AttrAction ActionHold: the worker holds the message and retries in
	// process after the delay (AttrRetryKind says why).
	// EventStoreRetry: a write after the side effect failed and is retried under the lease.
	EventStoreRetry = "fleet.store_retry"
)

// Span and event attributes of fleet's own (the gen_ai.* ones come from semconv through
// runtime/telemetry/genai).
const (
	AttrClass          = "fleet.class"
	AttrTraceID        = "fleet.trace_id" // the business trace id (detail.trace_id)
	AttrWorkKey        = "fleet.work_key"
	AttrAttempt        = "fleet.attempt"
	AttrSource         = "fleet.source"
	AttrOutcome        = "fleet.outcome"
	AttrErrorCode      = "fleet.error.code" // a wire.Code
	AttrErrorMessage   = "fleet.error.message"
	AttrRetryable      = "fleet.error.retryable"
	AttrAction         = "fleet.action" // the queue verdict: delete, release, leave, dead-letter
	AttrRetryDelayMS   = "fleet.retry.delay_ms"
	AttrRetryKind      = "fleet.retry.kind" // a RetryKind, on an in-receive retry
	AttrVisibilityS    = "fleet.visibility_timeout_s"
	AttrLeaseLost      = "fleet.lease.lost"
	AttrStoreAttempt   = "fleet.store.attempt"
	AttrMessageID      = "messaging.message.id"
	AttrMessagingSys   = "messaging.system"
	MessagingSystemSQS = "aws_sqs"
)

// ActionHold is the AttrAction of an in-receive retry: the message stays with the worker.
const ActionHold = "hold"

// RetryKind is why a held step waits before its next try.
type RetryKind string

const (
	RetryThrottle RetryKind = "throttle" // a dependency named when to come back: not a failure
	RetryFailure  RetryKind = "failure"  // a retryable failure: full jitter on the failures so far
	RetryBusy     RetryKind = "busy"     // another worker's lease holds the work: wait for it to lapse
)
