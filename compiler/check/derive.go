package check

import (
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/spec"
)

// rulesPerBus is the EventBridge rules-per-bus quota.
func rulesPerBus(region string) int {
	if region == "af-south-1" || region == "eu-south-1" {
		return awslimits.EventBridgeRulesPerBusSmall
	}
	return awslimits.EventBridgeRulesPerBus
}

const (
	sqsMaxMessage        = awslimits.SQSMaxMessageBytes
	putEventsMaxBytes    = awslimits.PutEventsMaxRequestBytes
	sfnMaxPayload        = awslimits.SFNMaxPayloadBytes
	sfnMaxHistory        = awslimits.SFNMaxHistoryEvents
	expressMax           = awslimits.SFNExpressMaxDuration
	agentCorePayload     = awslimits.AgentCoreMaxPayload
	agentCoreSyncRequest = awslimits.AgentCoreSyncRequestTimeout
	syncToolP95          = 10 * time.Second
	kedaPollInterval     = 30 * time.Second // KEDA's default pollingInterval

	// Limits the rules compare against (schemas/awslimits); the boundary table
	// (boundary_test.go) holds every rule to its constant.
	maxTargetsPerRule   = awslimits.EventBridgeTargetsPerRule
	maxPatternChars     = awslimits.EventBridgeMaxPatternChars
	maxWildcardRules    = awslimits.EventBridgeMaxWildcardRules
	maxDeliveryAttempts = awslimits.EventBridgeMaxRetryAttempts
	minEventAge         = awslimits.EventBridgeMinEventAge
	maxEventAge         = awslimits.EventBridgeMaxEventAge
	minRetention        = awslimits.SQSMinRetention
	maxRetention        = awslimits.SQSMaxRetention
	ageAlarmReceives    = 3 // Q005: above this, standard queues reorder retries
	maxLongPoll         = awslimits.SQSMaxLongPoll
	maxGroupKey         = awslimits.SQSMaxGroupIDChars
	maxQueueDelay       = awslimits.SQSMaxDelay
	maxBatchingWindow   = awslimits.ESMMaxBatchingWindow
	maxUnwindowedBatch  = awslimits.ESMUnwindowedMaxBatch
	minBatchWindowAbove = awslimits.ESMMinWindowAboveUnwindowed
	minESMConcurrency   = awslimits.ESMMinConcurrency
	maxESMConcurrency   = awslimits.ESMMaxConcurrency
	lambdaVisibility    = awslimits.ESMVisibilityFactor
	agentCoreMicroVM    = awslimits.AgentCoreMaxLifetime
	agentCoreInstances  = awslimits.AgentCoreMaxLifetimeInstances
	maxInGroupRetries   = 3 // M002: router retries within a group
	maxToleratedPercent = awslimits.SFNMaxToleratedFailurePercent

	// typicalOutage is the retryable fault Q013 sizes every class's retry budget for: the
	// 25–30 s 429 wave and the 30 s handler failure issue 31 measured dead-lettering work,
	// half of the seed router's 60 s deployment cooldown (cooldown_time: 60).
	typicalOutage = 30 * time.Second
)

// at returns the first candidate pointer written in the spec, else the first candidate:
// Locate then falls back to its nearest written ancestor (the class, usually).
func at(f *ir.Fleet, candidates ...string) string {
	if f.Index != nil {
		for _, c := range candidates {
			if f.Index.Has(c) {
				return c
			}
		}
	}
	return candidates[0]
}

// queueField is where a class queue setting comes from: the class, else defaults.
func queueField(f *ir.Fleet, a *ir.Agent, field string) string {
	return at(f, a.Path+"/queue/"+field, "/defaults/queue/"+field)
}

func deliveryField(f *ir.Fleet, a *ir.Agent, field string) string {
	return at(f, a.Path+"/delivery/"+field, "/defaults/delivery/"+field)
}

func idempotencyField(f *ir.Fleet, a *ir.Agent, field string) string {
	return at(f, a.Path+"/idempotency/"+field, "/defaults/idempotency/"+field)
}

// inline is the largest payload a class moves inline: bounded by its claim-check
// threshold and by its declared maximum (0 = not declared).
func inline(a *ir.Agent) int64 {
	if a.MaxPayload > 0 && a.MaxPayload < a.ClaimCheckOver {
		return a.MaxPayload
	}
	return a.ClaimCheckOver
}

// chain is a model policy and every fallback reachable from it, each once, in order.
func chain(m *ir.Model) []*ir.Model {
	var out []*ir.Model
	seen := map[*ir.Model]bool{}
	var walk func(*ir.Model)
	walk = func(m *ir.Model) {
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		out = append(out, m)
		for _, fb := range m.Fallbacks {
			walk(fb)
		}
	}
	walk(m)
	return out
}

// longestModelCall is the longest single model call a class can make within limit, its
// step's deadline: a defaulted timeout longer than that is cut to it, as fleet-worker
// cuts every call at the step's deadline.
func longestModelCall(a *ir.Agent, limit time.Duration) (time.Duration, *ir.Model) {
	var max time.Duration
	var which *ir.Model
	for _, m := range chain(a.Model) {
		t := m.Timeout
		if m.TimeoutDefaulted && t > limit {
			t = limit
		}
		if t > max {
			max, which = t, m
		}
	}
	return max, which
}

// stepDeadline is how long one step of a may run: step.deadline, else step.max.
func stepDeadline(a *ir.Agent) time.Duration {
	if a.Deadline > 0 {
		return a.Deadline
	}
	return a.StepMax
}

// usesModel says a class makes model calls (a policy or an llm handler).
func usesModel(a *ir.Agent) bool {
	return a.Model != nil || a.Handler.Kind == "llm"
}

// Formatting.

// num writes a number as every report of fleetc does.
func num(v float64) string { return capacity.Num(v) }

func inum(v int) string      { return num(float64(v)) }
func bytesOf(n int64) string { return num(float64(n)) + " bytes" }

// dur writes a duration as the spec does ("90s", "15m", "4d"); spans over a day that are
// not whole days get a compound form ("4d1h") rather than an unreadable "97h".
func dur(d time.Duration) string {
	const day = 24 * time.Hour
	switch d {
	case 0:
		return "0s"
	case day:
		return "24h" // how AWS and the seeds state it (EventBridge's 24 h maximum age)
	}
	if d > day && d%day != 0 && d%time.Second == 0 {
		return spec.FormatDuration(d/day*day) + spec.FormatDuration(d%day)
	}
	return spec.FormatDuration(d)
}

// secs writes a duration in whole seconds, as AWS APIs take it.
func secs(d time.Duration) string { return num(float64(ir.Seconds(d))) + " s" }

func pct(part, whole float64) string {
	if whole == 0 {
		return "∞"
	}
	return num(100*part/whole) + " %"
}
