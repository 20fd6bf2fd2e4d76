// Package awslimits is the one table of the AWS service limits and quotas fleetc holds fleets
// to: the compiler's rules, capacity report and backends and the worker import these
// constants; none writes its own copy (internal/onefact compares constant values across the
// module and fails on one). Each constant names the AWS page it comes from. Where the seeds
// (event-driven-agent-fleets.txt) give a range for "other regions", the conservative end is
// used. The package imports nothing of fleetc, so both the compiler and the worker can use it.
package awslimits

import "time"

// Amazon SQS. Quotas related to messages:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
// and quotas related to queues:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html
const (
	// SQSMaxVisibility is the visibility ceiling: how long after a receive a message stays
	// hidden at most (43,200 s), however often it is extended.
	SQSMaxVisibility = 12 * time.Hour
	// SQSMaxMessageBytes is the message size ceiling, 1 MiB (1,048,576 bytes). AWS raised it
	// from 256 KiB in August 2025 ("Amazon SQS increases maximum message payload size to
	// 1 MiB", What's New; confirmed by the AWS Compute Blog post of 29 January 2026, "More
	// room to build: serverless services now support payloads up to 1 MB"); older pages
	// still say 262,144 bytes.
	SQSMaxMessageBytes = 1 << 20
	// SQSMinRetention and SQSMaxRetention bound MessageRetentionPeriod: 60 s to 1,209,600 s.
	SQSMinRetention = time.Minute
	SQSMaxRetention = 14 * 24 * time.Hour
	// SQSMaxDelay is the DelaySeconds ceiling (message timer): 900 s.
	SQSMaxDelay = 15 * time.Minute
	// SQSMaxLongPoll is ReceiveMessage's WaitTimeSeconds ceiling.
	SQSMaxLongPoll = 20 * time.Second
	// SQSMaxBatch is the entries of one batch request (SendMessageBatch, DeleteMessageBatch,
	// ChangeMessageVisibilityBatch) and ReceiveMessage's MaxNumberOfMessages ceiling.
	SQSMaxBatch = 10
	// SQSMaxMessageAttributes is the metadata attributes one message can carry.
	SQSMaxMessageAttributes = 10
	// SQSMaxGroupIDChars is MessageGroupId's length ceiling.
	SQSMaxGroupIDChars = 128
	// SQSMaxInFlight is the in-flight (received, not deleted) messages of a standard queue.
	SQSMaxInFlight = 120_000
	// SQSFIFOTPS is a FIFO queue's per-action rate without high throughput mode.
	SQSFIFOTPS = 300
	// SQSFIFOHighThroughputTPS is the per-action high-throughput FIFO ceiling in the big-3
	// regions, and SQSFIFOHighThroughputTPSOther elsewhere (the low end of "2,400–19,000").
	SQSFIFOHighThroughputTPS      = 70_000
	SQSFIFOHighThroughputTPSOther = 2400
)

// Amazon EventBridge. Quotas: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html,
// PutEvents: https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html,
// entry size: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html.
const (
	// PutEventsMaxRequestBytes is the PutEvents request size limit, 1 MB (1,048,576 bytes):
	// the entries of one request total less than this, and a single entry may use all of it.
	// AWS raised the event size from 256 KB to 1 MB (AWS Compute Blog, 29 January 2026,
	// "More room to build: serverless services now support payloads up to 1 MB",
	// https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-payloads-up-to-1-mb);
	// the API reference's "256 KB" predates it. The seed says 1 MB as well.
	PutEventsMaxRequestBytes = 1_048_576
	// EventBridgeEventOverheadBytes bounds what EventBridge adds around an entry when it
	// delivers the event (version, id, account, time, region and the JSON keys: "the event in
	// EventBridge is always larger than the entry size", eb-putevent-size.html). An SQS target
	// receives that whole event as its message body.
	EventBridgeEventOverheadBytes = 1024
	// EventBridgeMaxEntryToQueueBytes is the largest entry whose event still fits one SQS message:
	// a larger one passes PutEvents and then fails delivery to the class queue.
	EventBridgeMaxEntryToQueueBytes = min(PutEventsMaxRequestBytes, SQSMaxMessageBytes) - EventBridgeEventOverheadBytes
	// PutEventsMaxEntriesClassic is the entries of one PutEvents request on a classic bus.
	PutEventsMaxEntriesClassic = 10
	// PutEventsMaxEntriesV2 is the entries of one request on an EventsV2 bus (the seed).
	PutEventsMaxEntriesV2 = 100
	// PutEventsTimeBytes is what a set Time parameter costs in the entry-size arithmetic.
	PutEventsTimeBytes = 14
	// EventBridgeRulesPerBus is the rules-per-bus quota, EventBridgeRulesPerBusSmall in
	// af-south-1 and eu-south-1.
	EventBridgeRulesPerBus      = 300
	EventBridgeRulesPerBusSmall = 100
	// EventBridgeTargetsPerRule is the targets of one rule.
	EventBridgeTargetsPerRule = 5
	// EventBridgeMaxPatternChars is an event pattern's length ceiling.
	EventBridgeMaxPatternChars = 2048
	// EventBridgeMaxWildcardRules is the rules with wildcards per bus (not adjustable).
	EventBridgeMaxWildcardRules = 30
	// EventBridgeMaxRetryAttempts bounds a target's RetryPolicy MaximumRetryAttempts (0–185).
	EventBridgeMaxRetryAttempts = 185
	// EventBridgeMinEventAge and EventBridgeMaxEventAge bound MaximumEventAgeInSeconds
	// (60–86,400 s).
	EventBridgeMinEventAge = time.Minute
	EventBridgeMaxEventAge = 24 * time.Hour
	// EventBridgeInvocationsPerSec is the target invocations throttle (us-east-1).
	EventBridgeInvocationsPerSec = 18_750
	// PutEventsRPS is the PutEvents requests/s quota in the big-3 regions,
	// PutEventsRPSMid in us-east-2, eu-central-1 and eu-south-2, PutEventsRPSOther elsewhere
	// (the low end of "400–1,200").
	PutEventsRPS      = 10_000
	PutEventsRPSMid   = 2400
	PutEventsRPSOther = 400
)

// PutEventsEntrySize is an entry's size as AWS computes it for the request limit: 14 bytes when its
// Time is set (timed), plus the UTF-8 byte lengths of Source, DetailType, Detail and each
// Resources entry. TraceHeader and EventBusName do not count. (Go strings are UTF-8, so len
// is the byte length.)
func PutEventsEntrySize(source, detailType string, detail []byte, resources []string, timed bool) int {
	n := len(source) + len(detailType) + len(detail)
	if timed {
		n += PutEventsTimeBytes
	}
	for _, r := range resources {
		n += len(r)
	}
	return n
}

// AWS Step Functions. Quotas: https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html,
// Distributed Map: https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html,
// ItemBatcher: https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itembatcher.html.
const (
	// SFNMaxPayloadBytes caps every state's input and output, and a task's SendTaskSuccess
	// output: 256 KiB (262,144 bytes).
	SFNMaxPayloadBytes = 256 << 10
	// SFNMaxHistoryEvents is a Standard execution's event history ceiling.
	SFNMaxHistoryEvents = 25_000
	// SFNExpressMaxDuration is an Express execution's duration ceiling.
	SFNExpressMaxDuration = 5 * time.Minute
	// SFNMaxBatchInputBytes is ItemBatcher's MaxInputBytesPerBatch ceiling.
	SFNMaxBatchInputBytes = 256 << 10
	// SFNMaxToleratedFailurePercent is Distributed Map's ToleratedFailurePercentage ceiling.
	SFNMaxToleratedFailurePercent = 100
	// SFNMapMaxConcurrency is the child executions of one Map Run (not adjustable).
	SFNMapMaxConcurrency = 10_000
	// SFNOpenMapRuns is the open Map Runs per account (not adjustable).
	SFNOpenMapRuns = 1000
	// SFNTransitionsPerSec is Standard's state transitions per second (big-3 regions).
	SFNTransitionsPerSec = 5000
	// SFNExpressStartPerSec is Express StartExecution per second.
	SFNExpressStartPerSec = 6000
	// SFNTaskFailureErrorChars and SFNTaskFailureCauseChars cap SendTaskFailure's fields
	// (https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskFailure.html).
	SFNTaskFailureErrorChars = 256
	SFNTaskFailureCauseChars = 32_768
	// SFNCallbackRefill and SFNCallbackBucket are the SendTask* token bucket in the big-3
	// regions; the Other pair elsewhere.
	SFNCallbackRefill      = 500
	SFNCallbackBucket      = 3000
	SFNCallbackRefillOther = 300
	SFNCallbackBucketOther = 1500
)

// AWS Lambda. Quotas: https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
// SQS event source mappings: https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html
// and https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html.
const (
	// LambdaMaxTimeout is a function's hard stop: 900 s.
	LambdaMaxTimeout = 15 * time.Minute
	// LambdaEnvBytes caps all environment variables together (4 KB), measured as the JSON
	// object of names and values ("String measured: {...}" in its error).
	LambdaEnvBytes = 4096
	// LambdaSyncResponseBytes is a synchronous invocation's response ceiling (6 MB).
	LambdaSyncResponseBytes = 6 << 20
	// LambdaConcurrency is the default concurrent executions per account and region
	// (adjustable): the ceiling a fleet meets first.
	LambdaConcurrency = 1000
	// ESMMaxBatchingWindow is an event source mapping's MaximumBatchingWindowInSeconds ceiling.
	ESMMaxBatchingWindow = 300 * time.Second
	// ESMUnwindowedMaxBatch is the largest batch allowed on FIFO queues, or without a batching
	// window of at least ESMMinWindowAboveUnwindowed.
	ESMUnwindowedMaxBatch       = 10
	ESMMinWindowAboveUnwindowed = time.Second
	// ESMMinConcurrency and ESMMaxConcurrency bound ScalingConfig MaximumConcurrency (2–1,000).
	ESMMinConcurrency = 2
	ESMMaxConcurrency = 1000
	// ESMVisibilityFactor: AWS asks for a queue visibility of at least six times the function
	// timeout (plus the batching window).
	ESMVisibilityFactor = 6
)

// Amazon DynamoDB item size: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html.
const (
	// DynamoDBMaxItemBytes is an item's size ceiling (400 KB, names and values together).
	DynamoDBMaxItemBytes = 400 << 10
)

// Amazon Bedrock AgentCore Runtime. Quotas:
// https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/bedrock-agentcore-limits.html,
// session lifecycle: https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/runtime-sessions.html.
const (
	// AgentCoreMaxPayload is the largest invocation body: "100 MB" read as decimal megabytes
	// (100,000,000 bytes), the smaller of the two readings, so nothing fleetc accepts is
	// refused.
	AgentCoreMaxPayload = 100 * 1000 * 1000
	// AgentCoreSyncRequestTimeout is InvokeAgentRuntime's synchronous request timeout.
	AgentCoreSyncRequestTimeout = 15 * time.Minute
	// AgentCoreMaxLifetime is a microVM session's lifetime ceiling, and AgentCore's default
	// maxLifetime.
	AgentCoreMaxLifetime = 8 * time.Hour
	// AgentCoreMaxLifetimeInstances is the lifetime ceiling with instances.
	AgentCoreMaxLifetimeInstances = 14 * 24 * time.Hour
	// AgentCoreIdleTimeout is the default idle stop of a session.
	AgentCoreIdleTimeout = 15 * time.Minute
	// AgentCoreSessions is the active session workloads per account in US East (N. Virginia)
	// and US West (Oregon), AgentCoreSessionsOther in every other Region (the quotas page
	// since AWS raised them in July 2026). The seed says "big-3 regions"; the page names two,
	// so Europe (Ireland) gets 2,500: the smaller reading, so W004 never promises headroom
	// AWS does not give.
	AgentCoreSessions      = 5000
	AgentCoreSessionsOther = 2500
)

// AgentCoreSessionsRegions are the Regions with AgentCoreSessions.
var AgentCoreSessionsRegions = []string{"us-east-1", "us-west-2"}

// Amazon CloudWatch alarms: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html.
const (
	// CloudWatchMaxAlarmWindow bounds Period × EvaluationPeriods: one day.
	CloudWatchMaxAlarmWindow = 24 * time.Hour
)

// AWS CodeDeploy for Lambda. Quotas: https://docs.aws.amazon.com/codedeploy/latest/userguide/limits.html;
// deployment configurations: https://docs.aws.amazon.com/codedeploy/latest/APIReference/API_TimeBasedCanary.html.
const (
	// CodeDeployLambdaMaxShift is the longest time between a Lambda deployment's first and
	// last traffic shift ("48 hours for the maximum time between the first and last traffic
	// shift" of the 50-hour deployment run limit).
	CodeDeployLambdaMaxShift = 48 * time.Hour
	// CodeDeployIntervalUnit is the unit of canaryInterval and linearInterval: whole minutes,
	// at least one.
	CodeDeployIntervalUnit = time.Minute
)
