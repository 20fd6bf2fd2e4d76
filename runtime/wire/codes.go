package wire

// Code names why a step ended other than done: the ERROR_CODE attribute of a dead-lettered
// message, the code of a release, the error of SendTaskFailure, the code of an outcome
// envelope and of fleet-worker's AgentCore error body. Codes are compared across packages
// (the AgentCore runtime and the dispatcher both act on Busy), so they are one typed set.
// Codes a handler returns ({"error": {"code": ...}}) pass through as they are.
type Code string

// Step input and claim.
const (
	MalformedMessage       Code = "MalformedMessage"       // the body is no envelope the worker accepts
	BadIdempotencyKey      Code = "BadIdempotencyKey"      // the key fields are missing from the detail
	NoCallbacks            Code = "NoCallbacks"            // a task message reached a worker without a Step Functions client
	IdempotencyUnavailable Code = "IdempotencyUnavailable" // the idempotency table did not answer
	Busy                   Code = "Busy"                   // another live lease holds the work: come back when it ends
	ReceiveLimitExceeded   Code = "ReceiveLimitExceeded"   // earlier receives ended without a verdict
	BadPayloadRef          Code = "BadPayloadRef"          // payload_ref is not a claim-check reference
	PayloadRefRefused      Code = "PayloadRefRefused"      // payload_ref names another bucket or a key outside read_prefixes
	NoClaimCheck           Code = "NoClaimCheck"           // payload_ref given, no claim-check store configured
	PayloadFetchFailed     Code = "PayloadFetchFailed"     // the claim-checked input could not be read
	PayloadTooLarge        Code = "PayloadTooLarge"        // the body exceeds the invocation limit
	DeadlineExceeded       Code = "DeadlineExceeded"       // the run's deadline (or the TTL) passed before the step could finish, even held through a throttle
	InvocationTimeLeft     Code = "InvocationTimeLeft"     // no invocation time left to start the step
)

// After the side effect.
const (
	ResultTooLarge          Code = "ResultTooLarge"          // the result cannot be delivered inline nor by reference
	ResultStoreInterrupted  Code = "ResultStoreInterrupted"  // shutdown while storing the result under the lease
	LeaseLost               Code = "LeaseLost"               // another claimant took the lease over
	EventContractViolation  Code = "EventContractViolation"  // a completion event breaks its detail schema
	CompletionEventRejected Code = "CompletionEventRejected" // EventBridge refuses the completion event for good
	PublishFailed           Code = "PublishFailed"           // PutEvents failed; retried
	InvalidOutput           Code = "InvalidOutput"           // SendTaskSuccess refused the output
	CallbackFailed          Code = "CallbackFailed"          // SendTaskSuccess failed; retried
	StaleToken              Code = "StaleToken"              // the task token is gone: deleted, never retried
	JobStatusFailed         Code = "JobStatusFailed"         // the async tool's job record could not be written
	// HandlerOutputInvalid: the handler's result does not fit the class's output schema (or is
	// not JSON, or is larger than output.max_bytes). Nothing was emitted, answered or recorded.
	HandlerOutputInvalid Code = "HandlerOutputInvalid"
)

// The seed's envelope, checked before the handler runs.
const (
	Expired               Code = "Expired"               // the consumed event is older than its ttl_seconds
	ModelPolicyNotAllowed Code = "ModelPolicyNotAllowed" // the event's model_policy is not one the class allows
)

// Handler and retry classification.
const (
	Timeout    Code = "Timeout"
	Canceled   Code = "Canceled"
	Error      Code = "Error" // an unclassified error
	SpendLimit Code = "SpendLimit"
	// Model router verdicts.
	ContextWindowExceeded  Code = "ContextWindowExceeded"  // no context-window fallback took it
	ModelUnavailable       Code = "ModelUnavailable"       // every group failed; the queue retries the step
	ModelRequestRejected   Code = "ModelRequestRejected"   // a 4xx no retry can fix
	UnknownModelPolicy     Code = "UnknownModelPolicy"     // the step names a policy the config lacks
	ModelStreamInterrupted Code = "ModelStreamInterrupted" // a stream failed after its first byte
	RetriesExhausted       Code = "RetriesExhausted"
	BadRequest             Code = "BadRequest"
	Unavailable            Code = "Unavailable"
	ReadFailed             Code = "ReadFailed"
	OutputTooLarge         Code = "OutputTooLarge"
	BadOutput              Code = "BadOutput"
	ExecFailed             Code = "ExecFailed"
	Crashed                Code = "Crashed"
	Panic                  Code = "Panic"
	Unknown                Code = "Unknown" // dead-lettered without a reason
)

// Modes: the Lambda loop, the AgentCore server and the dispatcher.
const (
	Failed              Code = "Failed"
	Retry               Code = "Retry"
	AgentFailed         Code = "AgentFailed"
	AgentRetry          Code = "AgentRetry"
	BadOutcome          Code = "BadOutcome"
	ResponseInterrupted Code = "ResponseInterrupted"
	RuntimeUnreachable  Code = "RuntimeUnreachable"
)
