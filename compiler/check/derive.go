package check

import (
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/spec"
)

// rulesPerBus is the EventBridge rules-per-bus quota.
func rulesPerBus(region string) int {
	if region == "af-south-1" || region == "eu-south-1" {
		return 100
	}
	return 300
}

const (
	sqsMaxMessage        = 1 << 20 // 1 MiB
	putEventsMaxBytes    = 1 << 20 // PutEvents request < 1 MB (1,048,576 bytes)
	sfnMaxPayload        = 256 << 10
	sfnMaxHistory        = 25_000
	expressMax           = 300 * time.Second
	agentCorePayload     = wire.AgentCoreMaxPayload // 100 MB, shared with the runtime
	agentCoreSyncRequest = 15 * time.Minute         // InvokeAgentRuntime's synchronous request timeout
	syncToolP95          = 10 * time.Second
	kedaPollInterval     = 30 * time.Second // KEDA's default pollingInterval

	// Limits the rules compare against, each from the seeds; the boundary table
	// (boundary_test.go) holds every rule to its constant.
	maxTargetsPerRule   = 5                   // EventBridge targets per rule
	maxPatternChars     = 2048                // EventBridge event pattern
	maxWildcardRules    = 30                  // rules with wildcards per bus, not adjustable
	maxDeliveryAttempts = 185                 // EventBridge target retry attempts (0–185)
	minEventAge         = time.Minute         // EventBridge maximum event age: 60 s …
	maxEventAge         = 24 * time.Hour      // … 86,400 s
	minRetention        = time.Minute         // SQS message retention: 1 min …
	maxRetention        = 14 * 24 * time.Hour // … 14 days
	ageAlarmReceives    = 3                   // Q005: above this, standard queues reorder retries
	maxLongPoll         = 20 * time.Second    // SQS ReceiveMessage WaitTimeSeconds
	maxGroupKey         = 128                 // SQS MessageGroupId characters
	maxQueueDelay       = 15 * time.Minute    // SQS DelaySeconds
	maxBatchingWindow   = 300 * time.Second   // Lambda event source mapping
	maxUnwindowedBatch  = 10                  // records per batch on FIFO, or without a ≥ 1 s window
	minBatchWindowAbove = time.Second         // the window AWS requires above maxUnwindowedBatch
	minESMConcurrency   = 2                   // event source mapping MaximumConcurrency 2 …
	maxESMConcurrency   = 1000                // … 1,000
	lambdaVisibility    = 6                   // AWS: visibility ≥ 6 × function timeout (+ batching window)
	agentCoreMicroVM    = 8 * time.Hour       // AgentCore session lifecycle, microVM
	agentCoreInstances  = 14 * 24 * time.Hour // … and with instances
	maxInGroupRetries   = 3                   // M002: router retries within a group
	maxToleratedPercent = 100                 // Distributed Map ToleratedFailurePercentage

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
