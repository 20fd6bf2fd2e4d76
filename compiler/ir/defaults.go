package ir

import (
	"time"

	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/spec"
)

// Defaults holds every fixed value lowering uses when the spec leaves a setting out; it is
// the one place these values are written. Each field's `schema` tag lists the properties of
// schemas/fleet.schema.json whose description quotes it (as "default 4d", or as its
// `phrase` tag says), and `readme` the words of the defaults paragraph of docs/spec-reference.md that quote
// it (read without backticks and line breaks); TestDefaultsAreDocumented holds both to the
// values here. The numbers come from the seeds: four strikes to the DLQ, a DLQ that
// outlives its source, bounded EventBridge retries (24 attempts / 1h) rather than the
// classic 185 / 24h, long polling always on. Defaults computed from other settings
// (visibility, heartbeat, idempotency window, task timeout) are formulas in lowering.
var Defaults = defaults{
	BusModel:          "classic",
	Image:             DefaultImage,
	Namespace:         "agents",
	ClaimCheckExpiry:  awslimits.SQSMaxRetention, // outlives any message that references it
	QueueRetention:    4 * 24 * time.Hour,
	LongPoll:          DefaultLongPoll,
	QueueDelay:        0,
	MaxReceives:       3,
	DLQRetention:      awslimits.SQSMaxRetention,
	DeliveryAttempts:  24,
	DeliveryMaxAge:    time.Hour,
	ModelRetries:      2,
	ModelSDKRetries:   0,
	ModelTimeout:      2 * time.Minute,
	ModelAllowedFails: 2,
	ModelCooldown:     time.Minute,
	SideEffects:       "idempotent",
	ClaimCheckOver:    200 * 1024,
	StatusPollAfter:   15 * time.Second,
	LambdaBatchSize:   1,
	LambdaMemory:      1024,
	AgentCoreSession:  awslimits.AgentCoreMaxLifetime,
	ScalingMin:        1,
	ScalingMax:        10,
	PerReplica:        4,
	ScalingCooldown:   5 * time.Minute,
	ScalingActivation: 0,
	ScaleOnInFlight:   true,
	WorkflowType:      "standard",
	StepRetries:       0,
	FanOutConcurrency: 40,
	FanOutExecution:   "STANDARD",
	ApprovalOnTimeout: string(spec.OnTimeoutFail),
	// CodeDeploy's own Lambda canary preset: 10 percent for 5 minutes.
	RolloutPercent:  10,
	RolloutInterval: 5 * time.Minute,
}

type defaults struct {
	BusModel          string        `schema:"/properties/bus/properties/model"`
	Image             string        `schema:"/properties/worker/properties/image"`
	Namespace         string        `schema:"/properties/worker/properties/namespace"`
	ClaimCheckExpiry  time.Duration `schema:"/properties/state/properties/claim_check_expiry"`
	QueueRetention    time.Duration `schema:"/properties/defaults/properties/queue/properties/retention /definitions/agent/properties/queue/properties/retention" readme:"queue retention %s"`
	LongPoll          time.Duration `schema:"/properties/defaults/properties/queue/properties/long_poll /definitions/agent/properties/queue/properties/long_poll" readme:"long poll %s"`
	QueueDelay        time.Duration `schema:"/properties/defaults/properties/queue/properties/delay /definitions/agent/properties/queue/properties/delay"`
	MaxReceives       int           `schema:"/properties/defaults/properties/queue/properties/max_receives /definitions/agent/properties/queue/properties/max_receives" readme:"max_receives %s"`
	DLQRetention      time.Duration `schema:"/properties/defaults/properties/queue/properties/dlq_retention /definitions/agent/properties/queue/properties/dlq_retention" readme:"DLQ retention %s"`
	DeliveryAttempts  int           `schema:"/properties/defaults/properties/delivery/properties/attempts /definitions/agent/properties/delivery/properties/attempts" readme:"EventBridge target retries %s attempts"`
	DeliveryMaxAge    time.Duration `schema:"/properties/defaults/properties/delivery/properties/max_age /definitions/agent/properties/delivery/properties/max_age" readme:"attempts / %s"`
	ModelRetries      int           `schema:"/properties/models/additionalProperties/properties/retries" readme:"retried %s times"`
	ModelSDKRetries   int           `schema:"/properties/models/additionalProperties/properties/sdk_retries"`
	ModelTimeout      time.Duration `schema:"/properties/models/additionalProperties/properties/timeout" readme:"with a %s timeout"`
	ModelAllowedFails int           `schema:"/properties/models/additionalProperties/properties/allowed_fails"`
	ModelCooldown     time.Duration `schema:"/properties/models/additionalProperties/properties/cooldown"`
	SideEffects       string        `schema:"/definitions/agent/properties/side_effects"`
	ClaimCheckOver    spec.Size     `schema:"/definitions/agent/properties/payload/properties/claim_check_over" readme:"claim-check above %s"`
	StatusPollAfter   time.Duration `schema:"/definitions/agent/properties/tool/properties/status_poll_after"`
	LambdaBatchSize   int           `schema:"/definitions/agent/properties/lambda/properties/batch_size"`
	LambdaMemory      int           `schema:"/definitions/agent/properties/lambda/properties/memory"`
	AgentCoreSession  time.Duration `schema:"/definitions/agent/properties/agentcore/properties/session"`
	// ScalingMin and ScalingMax apply when a class has no scaling block (which then needs both).
	ScalingMin        int           `schema:"/definitions/agent/properties/scaling" phrase:"min %s" readme:"scaling between %s and"`
	ScalingMax        int           `schema:"/definitions/agent/properties/scaling" phrase:"max %s" readme:"and %s workers"`
	PerReplica        int           `schema:"/definitions/agent/properties/scaling/properties/per_replica" readme:"with %s steps each"`
	ScalingCooldown   time.Duration `schema:"/definitions/agent/properties/scaling/properties/cooldown"`
	ScalingActivation int           `schema:"/definitions/agent/properties/scaling/properties/activation"`
	ScaleOnInFlight   bool          `schema:"/definitions/agent/properties/scaling/properties/scale_on_in_flight"`
	WorkflowType      string        `schema:"/properties/workflows/additionalProperties/properties/type"`
	StepRetries       int           `schema:"/definitions/workflow_step/properties/retries"`
	FanOutConcurrency int           `schema:"/definitions/workflow_step/properties/fan_out/properties/max_concurrency"`
	FanOutExecution   string        `schema:"/definitions/workflow_step/properties/fan_out/properties/execution_type"`
	ApprovalOnTimeout string        `schema:"/definitions/workflow_step/properties/approval/properties/on_timeout"`
	RolloutPercent    int           `schema:"/definitions/rollout/properties/percent"`
	RolloutInterval   time.Duration `schema:"/definitions/rollout/properties/interval"`
}

const (
	// DefaultImage is the stock fleet-worker image (Defaults.Image; a constant because rules
	// compare against it).
	DefaultImage = "ghcr.io/fleetc/fleet-worker:latest"
	// DefaultLongPoll is Defaults.LongPoll, the longest ReceiveMessage wait SQS allows.
	DefaultLongPoll = awslimits.SQSMaxLongPoll

	// LambdaMaxTimeout is Lambda's hard stop.
	LambdaMaxTimeout = awslimits.LambdaMaxTimeout
	// MaxVisibility is SQS's visibility ceiling.
	MaxVisibility = awslimits.SQSMaxVisibility
)

// VisibilityFor is the visibility a step of at most stepMax needs when its worker does not
// heartbeat: 1.5 × step.max, so a slow step finishes before its message reappears. Lower
// applies it by default and rule Q001 holds written values to it.
func VisibilityFor(stepMax time.Duration) time.Duration { return stepMax * 3 / 2 }
