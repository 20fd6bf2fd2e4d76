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

// Labels.
const (
	LabelClass     = contract.LabelClass
	LabelOutcome   = contract.LabelOutcome
	LabelService   = contract.LabelService
	LabelOperation = contract.LabelOperation
	LabelPolicy    = contract.LabelPolicy
)

// CloudWatchNamespace is where these series land in CloudWatch.
const CloudWatchNamespace = contract.CloudWatchNamespace
