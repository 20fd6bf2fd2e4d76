// Package contract is the vocabulary fleetc's compiler and fleet-worker share beyond the
// runtime config (schemas/runtimeconfig) and the async tools' jobs (schemas/jobs): the metric
// names the generated dashboard reads, the error types a generated state machine retries, the
// AgentCore invocation headers the generated runtime allowlists, and the environment
// variables generated infrastructure sets. The compiler imports this package, never runtime/
// (compiler/imports_test.go holds it); the worker's packages re-export these names. It
// imports nothing of fleetc beyond schemas/.
package contract

// The worker's Prometheus series (runtime/telemetry), labelled by class.
const (
	// MetricStepDuration is a histogram of step wall time in seconds, by class and outcome.
	MetricStepDuration = "agent_step_duration_seconds"
	// MetricStepsInFlight is a gauge of steps currently running, by class.
	MetricStepsInFlight = "agent_steps_in_flight"
	// MetricStepRetries counts steps left for queue redelivery, by class.
	MetricStepRetries = "agent_step_retries_total"
	// MetricStepsDeadLettered counts steps the worker dead-lettered, by class.
	MetricStepsDeadLettered = "agent_steps_dead_lettered_total"
	// MetricAWSRequests counts AWS API HTTP attempts, by service and operation.
	MetricAWSRequests = "aws_api_requests_total"
)

// The model router's series (runtime/router), per policy and deployment.
const (
	MetricModelCalls     = "fleet_model_calls_total"           // {policy,deployment,outcome}
	MetricModelFailures  = "fleet_model_failures_total"        // {policy,deployment,class}
	MetricModelCooldowns = "fleet_model_cooldowns_total"       // {policy,deployment}
	MetricModelFallbacks = "fleet_model_fallbacks_total"       // {policy,to,reason}
	MetricModelInFlight  = "fleet_model_in_flight"             // {policy}
	MetricModelTokens    = "fleet_model_tokens_total"          // {policy,deployment,type}
	MetricModelDuration  = "fleet_model_call_duration_seconds" // {policy,deployment}
)

// Metric labels.
const (
	LabelClass     = "class"
	LabelOutcome   = "outcome"
	LabelService   = "service"
	LabelOperation = "operation" // the AWS API action, e.g. ReceiveMessage
	// LabelPolicy is the policy label of every router series (the generated dashboard's
	// dimension for them).
	LabelPolicy = "policy"
)

// CloudWatchNamespace is where these series land in CloudWatch when a collector scrapes
// /metrics and exports them as EMF (docs/operating.md, "Dashboard"): names unchanged,
// dimension class (router series: policy). fleetc's generated dashboard reads it.
const CloudWatchNamespace = "fleetc/worker"

// Error types of a direct (synchronous) Lambda invocation of fleet-worker: a step it would
// have released for a retry fails with ErrorRetry, which the generated state machine retries;
// any other failure with ErrorPrefix + its dead-letter code.
const (
	ErrorPrefix = "FleetWorker."
	ErrorRetry  = "FleetWorker.Retry" // ErrorPrefix + the worker's Retry code
)

// Headers the AgentCore dispatcher adds to each call. AgentCore passes only allowlisted
// request headers on to the container, and not Accept or Content-Type (restricted), so the
// outcome envelope is asked for with a custom header too; the generated runtime allowlists
// both (AllowedHeaders).
const (
	// HeaderOutcome asks fleet-worker for an outcome envelope.
	HeaderOutcome = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Fleet-Outcome"
	// HeaderAttempt carries the message's receive count, so the runtime's retry policy, receive
	// limit and task-token failure see the real attempt.
	HeaderAttempt = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Fleet-Attempt"
)

// AllowedHeaders is the generated runtime's request_header_allowlist.
var AllowedHeaders = []string{HeaderAttempt, HeaderOutcome}

// Environment variables generated infrastructure sets for fleet-worker.
const (
	EnvQueueURL        = "FLEET_QUEUE_URL"
	EnvDLQURL          = "FLEET_DLQ_URL"
	EnvMode            = "FLEET_MODE"              // poll | lambda | agentcore | dispatch, when --mode is absent
	EnvAgentRuntimeARN = "FLEET_AGENT_RUNTIME_ARN" // the AgentCore dispatcher's runtime
	// EnvConfigS3 names the runtime config's object (ObjectRef), when --config is absent.
	EnvConfigS3 = "FLEET_CONFIG_S3"
	// EnvToolsS3 names the async tools config's object, when --tools-config is absent.
	EnvToolsS3 = "FLEET_TOOLS_S3"
)

// IdempotencyExpiresAttr is the idempotency table's TTL attribute (N, epoch seconds): the
// worker's work-key claims (runtime/idem) and the generated approval recorder's records both
// carry it, and the generated table names it as its TTL.
const IdempotencyExpiresAttr = "expires_at"
