// Package capacity is fleetc's traffic arithmetic: step rates per class from the declared
// traffic and the fleet's topology, the AWS requests they turn into, headroom against the
// service quotas, and an estimated bill. The quota rules in compiler/check and the
// `fleetc capacity` report call the same functions, so a rule fires exactly where the
// report says a quota breaks.
package capacity

import (
	"slices"
	"time"

	"github.com/fleetc/fleetc/schemas/awslimits"
)

// Service quotas, from the one table (schemas/awslimits).
const (
	FIFOTPS            = awslimits.SQSFIFOTPS
	InFlightCap        = awslimits.SQSMaxInFlight
	InvocationsPerSec  = awslimits.EventBridgeInvocationsPerSec
	TransitionsPerSec  = awslimits.SFNTransitionsPerSec
	ExpressStartPerSec = awslimits.SFNExpressStartPerSec
	MapMaxConcurrency  = awslimits.SFNMapMaxConcurrency
	OpenMapRuns        = awslimits.SFNOpenMapRuns
	// LambdaConcurrency: the seed names reserved concurrency as the hard ceiling; the
	// account quota is the one a fleet meets first.
	LambdaConcurrency = awslimits.LambdaConcurrency
)

// Big3 says the region is one of the three the seeds quote the highest quotas for.
func Big3(region string) bool {
	switch region {
	case "us-east-1", "us-west-2", "eu-west-1":
		return true
	}
	return false
}

// PutEventsRPS is the PutEvents requests/s quota.
func PutEventsRPS(region string) float64 {
	switch {
	case Big3(region):
		return awslimits.PutEventsRPS
	case region == "us-east-2" || region == "eu-central-1" || region == "eu-south-2":
		return awslimits.PutEventsRPSMid
	}
	return awslimits.PutEventsRPSOther
}

// FIFOHighThroughputTPS is the per-action FIFO high-throughput ceiling.
func FIFOHighThroughputTPS(region string) float64 {
	if Big3(region) {
		return awslimits.SQSFIFOHighThroughputTPS
	}
	return awslimits.SQSFIFOHighThroughputTPSOther
}

// CallbackRefill is the SendTask* token bucket: refill per second and bucket size.
func CallbackRefill(region string) (refill, bucket float64) {
	if Big3(region) {
		return awslimits.SFNCallbackRefill, awslimits.SFNCallbackBucket
	}
	return awslimits.SFNCallbackRefillOther, awslimits.SFNCallbackBucketOther
}

// AgentCoreSessions is the active-session quota per account.
func AgentCoreSessions(region string) int {
	if slices.Contains(awslimits.AgentCoreSessionsRegions, region) {
		return awslimits.AgentCoreSessions
	}
	return awslimits.AgentCoreSessionsOther
}

// What fleet-worker really issues per step, measured by its benchmarks (docs: Performance):
// `go test ./runtime/worker -bench StepOverhead` (SQS at saturation: one ReceiveMessage of 10
// and one DeleteMessageBatch of 10 per ten steps), `-bench EmittingStep` (DynamoDB: claim +
// completion), `go test ./runtime/events -bench PublishSaturation` (PutEvents batches full).
const (
	WorkerSQSPerStep      = 0.2005                               // measured 0.2005 at concurrency 10 and 50
	WorkerSQSBatch        = awslimits.SQSMaxBatch                // visibility heartbeats go ten per ChangeMessageVisibilityBatch
	WorkerDynamoDBPerStep = 2                                    // claim + completion; each heartbeat adds one lease renewal
	SeedSQSPerStep        = 2                                    // the seed's count: receive + delete
	SeedDynamoDBPerStep   = 1                                    // the seed's count: one idempotency write
	SeedPutEventsBatch    = awslimits.PutEventsMaxEntriesClassic // the seed's count: 10-entry batches on a classic bus
	secondsPerDay         = 86400
	minutesPerDay         = 1440
	daysPerMonth          = 30
	defaultFanOutItems    = 1
	maxReportedMultiple   = 1e12 // headroom past this is reported as unbounded
	durationUnknown       = time.Duration(0)
)
