// Package metric holds the names of every Prometheus series fleet-worker exports (the worker's
// own and the model router's), with their labels and the CloudWatch namespace they land in,
// under the names the worker's packages use. They are defined in schemas/contract, which the
// compiler's generated dashboard reads.
package metric

import "github.com/fleetc/fleetc/schemas/contract"

// The worker's series (runtime/telemetry).
const (
	StepDuration      = contract.MetricStepDuration
	StepsInFlight     = contract.MetricStepsInFlight
	StepRetries       = contract.MetricStepRetries
	StepsDeadLettered = contract.MetricStepsDeadLettered
	AWSRequests       = contract.MetricAWSRequests
)

// The model router's series (runtime/router), per policy and deployment.
const (
	ModelCalls     = contract.MetricModelCalls
	ModelFailures  = contract.MetricModelFailures
	ModelCooldowns = contract.MetricModelCooldowns
	ModelFallbacks = contract.MetricModelFallbacks
	ModelInFlight  = contract.MetricModelInFlight
	ModelTokens    = contract.MetricModelTokens
	ModelDuration  = contract.MetricModelDuration
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
	// LabelStatus is the HTTP status a gateway request was answered with (the gateway's own
	// series, which no generated artifact reads).
	LabelStatus    = "status"
	LabelClass     = contract.LabelClass
	LabelOutcome   = contract.LabelOutcome
	LabelService   = contract.LabelService
	LabelOperation = contract.LabelOperation
	LabelPolicy    = contract.LabelPolicy
)

// CloudWatchNamespace is where these series land in CloudWatch.
const CloudWatchNamespace = contract.CloudWatchNamespace
