// Package metric holds the names of every Prometheus series fleet-worker exports (the worker's
// own and the model router's), with their labels and the CloudWatch namespace they land in.
// It imports nothing: the compiler's generated dashboard reads these names without linking
// the runtime's Prometheus and OpenTelemetry packages into fleetc.
package metric

// The worker's series (runtime/telemetry).
const (
	// StepDuration is a histogram of step wall time in seconds, labelled by class and outcome.
	StepDuration = "agent_step_duration_seconds"
	// StepsInFlight is a gauge of steps currently running, by class.
	StepsInFlight = "agent_steps_in_flight"
	// StepRetries counts steps left for queue redelivery, by class.
	StepRetries = "agent_step_retries_total"
	// StepsDeadLettered counts steps the worker dead-lettered, by class.
	StepsDeadLettered = "agent_steps_dead_lettered_total"
	// AWSRequests counts AWS API HTTP attempts, by service and operation.
	AWSRequests = "aws_api_requests_total"
)

// The model router's series (runtime/router), per policy and deployment.
const (
	ModelCalls     = "fleet_model_calls_total"           // {policy,deployment,outcome}
	ModelFailures  = "fleet_model_failures_total"        // {policy,deployment,class}
	ModelCooldowns = "fleet_model_cooldowns_total"       // {policy,deployment}
	ModelFallbacks = "fleet_model_fallbacks_total"       // {policy,to,reason}
	ModelInFlight  = "fleet_model_in_flight"             // {policy}
	ModelTokens    = "fleet_model_tokens_total"          // {policy,deployment,type}
	ModelDuration  = "fleet_model_call_duration_seconds" // {policy,deployment}
)

// The model gateway's series (runtime/router/gateway), per policy.
const (
	// GatewayOwnTime is a histogram of the gateway's own time per request in seconds: wall
	// time minus the upstream calls, the capacity queue and the backoff between attempts.
	GatewayOwnTime = "fleet_gateway_own_seconds" // {policy}
	// GatewayQueueTime is a histogram of the time a request waited for router capacity
	// (max_in_flight slot, token bucket), in seconds.
	GatewayQueueTime = "fleet_gateway_queue_seconds" // {policy}
	// GatewayRequests counts answered requests by policy and HTTP status.
	GatewayRequests = "fleet_gateway_requests_total" // {policy,status}
	// GatewayAdmitted is a gauge of requests admitted and not yet answered (in flight plus
	// waiting for capacity).
	GatewayAdmitted = "fleet_gateway_admitted" // {policy}
)

// Labels.
const (
	// LabelStatus is the HTTP status a gateway request was answered with.
	LabelStatus    = "status"
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
