package check

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// Region-dependent quotas, as the seeds state them. Where a seed gives a range for "other
// regions", the conservative end is used.
func big3(region string) bool {
	switch region {
	case "us-east-1", "us-west-2", "eu-west-1":
		return true
	}
	return false
}

// putEventsRPS is the PutEvents requests/s quota.
func putEventsRPS(region string) float64 {
	switch {
	case big3(region):
		return 10000
	case region == "us-east-2" || region == "eu-central-1" || region == "eu-south-2":
		return 2400
	}
	return 400 // "400–1,200 rps" in most other regions
}

// fifoHighThroughputTPS is the per-action FIFO high-throughput ceiling.
func fifoHighThroughputTPS(region string) float64 {
	if big3(region) {
		return 70000
	}
	return 2400 // "19,000–2,400 TPS in other regions"
}

// rulesPerBus is the EventBridge rules-per-bus quota.
func rulesPerBus(region string) int {
	if region == "af-south-1" || region == "eu-south-1" {
		return 100
	}
	return 300
}

// callbackRefill is the SendTask* token bucket: refill per second and bucket size.
func callbackRefill(region string) (refill, bucket float64) {
	if big3(region) {
		return 500, 3000
	}
	return 300, 1500
}

// agentCoreSessions is the active-session quota per account.
func agentCoreSessions(region string) int {
	if big3(region) {
		return 5000
	}
	return 2500
}

const (
	fifoTPS              = 300     // FIFO without high-throughput mode, per API action
	inFlightCap          = 120_000 // received-but-not-deleted per standard queue
	sqsMaxMessage        = 1 << 20 // 1 MiB
	putEventsMaxBytes    = 1 << 20 // PutEvents request < 1 MB (1,048,576 bytes)
	sfnMaxPayload        = 256 << 10
	sfnMaxHistory        = 25_000
	expressMax           = 300 * time.Second
	invocationsPerSec    = 18_750
	transitionsPerSec    = 5000
	expressStartPerSec   = 6000
	mapMaxConcurrency    = 10_000
	openMapRuns          = 1000
	agentCorePayload     = 100 * 1000 * 1000 // 100 MB
	agentCoreSyncRequest = 15 * time.Minute  // InvokeAgentRuntime's synchronous request timeout
	syncToolP95          = 10 * time.Second
	kedaPollInterval     = 30 * time.Second // KEDA's default pollingInterval
	visibilityMargin     = 1.5              // the margin ir.Lower applies to step.max
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

// Traffic model. Traffic states fleet-wide steps; with no per-class numbers, each agent
// class is assumed to take an equal share (every class has its own queue).
func stepsPerSec(f *ir.Fleet) float64 {
	if f.Traffic == nil {
		return 0
	}
	return f.Traffic.StepsPerSecond()
}

func classStepsPerSec(f *ir.Fleet) float64 {
	if f.Traffic == nil || len(f.Agents) == 0 {
		return 0
	}
	return stepsPerSec(f) / float64(len(f.Agents))
}

// stepDuration is the duration Little's law uses for a class: traffic.step_duration when
// given, else the class's p95 — and where that number was written.
func stepDuration(f *ir.Fleet, a *ir.Agent) (time.Duration, string) {
	if f.Traffic != nil && f.Traffic.StepDuration > 0 {
		return f.Traffic.StepDuration, "/traffic/step_duration"
	}
	return a.StepP95, a.Path + "/step/p95"
}

// inFlight is Little's law for one class queue: arrival rate × step duration.
func inFlight(f *ir.Fleet, a *ir.Agent) float64 {
	d, _ := stepDuration(f, a)
	return classStepsPerSec(f) * d.Seconds()
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

// num writes a number with thousands separators and at most one decimal.
func num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "∞"
	}
	neg := v < 0
	v = math.Abs(v)
	r := math.Round(v*10) / 10
	whole := int64(r)
	frac := ""
	if d := int64(math.Round((r - float64(whole)) * 10)); d != 0 {
		frac = "." + strconv.FormatInt(d, 10)
	}
	s := strconv.FormatInt(whole, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String() + frac
	}
	return b.String() + frac
}

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
