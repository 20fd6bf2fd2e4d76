package check

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// A bound is one numeric comparison of a rule: the value at the limit passes and the
// value one unit past it (above for an upper bound, below for a lower one) fires. The
// limit is the rule's own constant (or the quantity it derives), never a retyped number,
// so moving a threshold by one, flipping > into >=, or dropping one side of a range fails
// here. "Every report call reached" (TestEveryReportReached) is not "every boundary
// asserted": Q005's fixture used 5 against a limit of 3.
type bound struct {
	rule  string
	what  string
	upper bool // fires above the limit; else below it
	// errorsOnly counts only error findings (the rule also warns inside the range).
	errorsOnly bool
	src        string                               // the fleet; "" = fleetWith(1)
	prep       func(f *ir.Fleet, a *ir.Agent)       // makes the comparison reachable
	limit      func(f *ir.Fleet, a *ir.Agent) int64 // the rule's limit for this fleet
	set        func(f *ir.Fleet, a *ir.Agent, v int64)
}

func fixed(v int64) func(*ir.Fleet, *ir.Agent) int64 {
	return func(*ir.Fleet, *ir.Agent) int64 { return v }
}

func dset(p func(a *ir.Agent) *time.Duration) func(*ir.Fleet, *ir.Agent, int64) {
	return func(_ *ir.Fleet, a *ir.Agent, v int64) { *p(a) = time.Duration(v) }
}

func iset(p func(a *ir.Agent) *int) func(*ir.Fleet, *ir.Agent, int64) {
	return func(_ *ir.Fleet, a *ir.Agent, v int64) { *p(a) = int(v) }
}

// agentCoreClass turns a lambda class into an agentcore one with an 8h microVM session.
func agentCoreClass(_ *ir.Fleet, a *ir.Agent) {
	a.Runtime, a.Lambda = "agentcore", nil
	a.AgentCore = &ir.AgentCore{RuntimeName: "fx_a000", Session: agentCoreMicroVM}
}

// eksClass turns a lambda class into an eks one with a sane scaling block.
func eksClass(_ *ir.Fleet, a *ir.Agent) {
	a.Runtime, a.Lambda = "eks", nil
	a.Scaling = ir.Scaling{Min: 0, Max: 4, PerReplica: 1, Cooldown: 5 * time.Minute, ScaleOnInFlight: true}
}

const fanOutSrc = "\nworkflows:\n  w:\n    steps:\n      - fan_out: { items: $.items, agent: a000 }\n"

const twoStepSrc = "\nworkflows:\n  w:\n    steps:\n      - agent: a000\n      - agent: a001\n"

// statePrep lets both classes inline up to Step Functions' state limit and gives the first
// one a declared payload.max of first bytes (0: none).
func statePrep(f *ir.Fleet, first int64) {
	for _, a := range f.Agents {
		a.ClaimCheckOver = sfnMaxPayload
	}
	f.Agents[0].MaxPayload = first
}

func fanOut(f *ir.Fleet) *ir.FanOut { return f.Workflows[0].Steps[0].FanOut }

// patternOf is an event pattern of exactly n characters as EventBridge counts them.
func patternOf(n int64) map[string]any {
	empty, _ := json.Marshal(map[string]any{"detail": map[string]any{"kind": []any{""}}})
	return map[string]any{"detail": map[string]any{"kind": []any{strings.Repeat("x", int(n)-len(empty))}}}
}

// approvalSrc is an agent step then an approval step (Steps[1]).
const approvalSrc = "\nworkflows:\n  w:\n    steps:\n      - agent: a000\n      - name: Ok\n        approval: { notify: task.requested, timeout: 1h }\n"

func approvalTimeout(f *ir.Fleet, _ *ir.Agent, v int64) {
	f.Workflows[0].Steps[1].Timeout = time.Duration(v)
}

var bounds = []bound{
	// approvals
	{rule: "S012", what: "approval timeout ≤ 1 year", upper: true, errorsOnly: true, limit: fixed(int64(ir.TaskTokenMax)),
		src: fleetWith(1) + approvalSrc, set: approvalTimeout},
	{rule: "S012", what: "approval timeout ≥ 1 s", upper: false, limit: fixed(int64(time.Second)),
		src: fleetWith(1) + approvalSrc, set: approvalTimeout},
	{rule: "S012", what: "approval + other steps' timeouts within the 1-year execution", upper: true,
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 { return int64(ir.TaskTokenMax - f.Workflows[0].Steps[0].Timeout) },
		src:   fleetWith(1) + approvalSrc, set: approvalTimeout},

	// queues
	{rule: "Q001", what: "visibility ≥ margin × step.max without heartbeat", upper: false,
		prep:  func(_ *ir.Fleet, a *ir.Agent) { a.Heartbeat = 0 },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(ir.VisibilityFor(a.StepMax)) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Visibility })},
	{rule: "Q001", what: "heartbeat below half the visibility", upper: true,
		prep:  func(_ *ir.Fleet, a *ir.Agent) { a.Queue.Visibility = time.Minute },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64((a.Queue.Visibility - 1) / 2) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Heartbeat })},
	{rule: "Q001", what: "step.p95 ≤ step.max", upper: true,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.StepMax) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.StepP95 })},
	{rule: "Q001", what: "step.max > 0", upper: false,
		prep:  func(_ *ir.Fleet, a *ir.Agent) { a.StepP95 = 0 },
		limit: fixed(1),
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "Q002", what: "visibility ≤ SQS maximum", upper: true, limit: fixed(int64(ir.MaxVisibility)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Visibility })},
	{rule: "Q002", what: "DLQ visibility ≤ SQS maximum", upper: true, limit: fixed(int64(ir.MaxVisibility)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.DLQ.Visibility })},
	{rule: "Q003", what: "retention ≥ 1 min", upper: false, limit: fixed(int64(minRetention)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Retention })},
	{rule: "Q003", what: "retention ≤ 14 d", upper: true, limit: fixed(int64(maxRetention)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Retention })},
	{rule: "Q003", what: "DLQ retention ≥ 1 min", upper: false, limit: fixed(int64(minRetention)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.DLQ.Retention })},
	{rule: "Q003", what: "DLQ retention ≤ 14 d", upper: true, limit: fixed(int64(maxRetention)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.DLQ.Retention })},
	{rule: "Q004", what: "DLQ retention > source retention", upper: false,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.Queue.Retention) + 1 },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.DLQ.Retention })},
	{rule: "Q005", what: "max_receives on a standard queue", upper: true, limit: fixed(ageAlarmReceives),
		set: iset(func(a *ir.Agent) *int { return &a.Queue.MaxReceives })},
	{rule: "Q006", what: "long_poll ≤ 20 s", upper: true, limit: fixed(int64(maxLongPoll)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.LongPoll })},
	{rule: "Q006", what: "long_poll > 0", upper: false, limit: fixed(1),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.LongPoll })},
	{rule: "Q007", what: "group key maxLength ≤ 128", upper: true, limit: fixed(maxGroupKey),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.FIFO, a.Queue.FIFO, a.GroupBy = true, true, "kind" },
		set: func(_ *ir.Fleet, a *ir.Agent, v int64) {
			a.Consumes.Event.Detail["properties"].(map[string]any)["kind"] = map[string]any{"type": "string", "maxLength": float64(v)}
		}},
	{rule: "Q007", what: "group key maxLength under an item fan-out", upper: true, limit: fixed(fanOutGroupKey), src: fleetWith(1) + fanOutSrc,
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.FIFO, a.Queue.FIFO, a.GroupBy = true, true, "kind" },
		set: func(_ *ir.Fleet, a *ir.Agent, v int64) {
			a.Consumes.Event.Detail["properties"].(map[string]any)["kind"] = map[string]any{"type": "string", "maxLength": float64(v)}
		}},
	{rule: "Q009", what: "inline payload ≤ SQS message", upper: true, limit: fixed(sqsMaxMessage),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.MaxPayload = 0 },
		set:  func(_ *ir.Fleet, a *ir.Agent, v int64) { a.ClaimCheckOver = v }},
	{rule: "Q011", what: "delay ≤ 15 min", upper: true, limit: fixed(int64(maxQueueDelay)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Delay })},
	{rule: "Q011", what: "delay ≥ 0", upper: false, limit: fixed(0),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Delay })},
	{rule: "Q012", what: "queue-fed step.max ≤ 12 h", upper: true, limit: fixed(int64(ir.MaxVisibility)),
		prep: eksClass,
		set:  dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "Q012", what: "a workflow step's run ≤ 12 h", upper: true, limit: fixed(int64(ir.MaxVisibility)),
		src: fleetWith(1) + "\nworkflows:\n  w:\n    steps:\n      - agent: a000\n",
		// a class only the workflow reaches, whose step.max the step's timeout cuts
		prep: func(f *ir.Fleet, a *ir.Agent) { eksClass(f, a); a.Rule, a.StepMax = nil, 2*ir.MaxVisibility },
		set:  func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Workflows[0].Steps[0].Timeout = time.Duration(v) }},

	// Q013: the survivable outage, hold − p95, against typicalOutage (fleetWith: 2 windows of 30s, p95 2s).
	{rule: "Q013", what: "p95 leaves the typical outage in RetryLimit windows", upper: true,
		// one 40s window: p95 above step.max would be Q001's, not Q013's
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Queue.MaxReceives, a.StepMax = 2, 40*time.Second },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 {
			return int64(time.Duration(a.RetryLimit())*a.StepMax - typicalOutage)
		},
		set: dset(func(a *ir.Agent) *time.Duration { return &a.StepP95 })},
	{rule: "Q013", what: "max_receives leaves the typical outage", upper: false,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(ceilDiv(typicalOutage+a.StepP95, a.StepMax) + 1) },
		set:   iset(func(a *ir.Agent) *int { return &a.Queue.MaxReceives })},
	{rule: "Q013", what: "step.deadline leaves the typical outage", upper: false,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(typicalOutage + a.StepP95) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Deadline })},
	{rule: "Q013", what: "a workflow task's timeout leaves the typical outage", upper: false,
		src:   fleetWith(1) + "\nworkflows:\n  w:\n    steps:\n      - agent: a000\n",
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(typicalOutage + a.StepP95) },
		set:   func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Workflows[0].Steps[0].Timeout = time.Duration(v) }},
	{rule: "Q013", what: "step.deadline leaves one model cooldown", upper: false,
		// 2 windows of 1m hold 2m: the outage half stays silent above the cooldown's limit.
		prep: func(_ *ir.Fleet, a *ir.Agent) {
			a.StepMax = time.Minute
			a.Models = []*ir.Model{{Name: "m", Path: "/models/m", Cooldown: time.Minute}}
		},
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.Models[0].Cooldown + a.StepP95) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Deadline })},
	// bus
	{rule: "E001", what: "targets per rule", upper: true, limit: fixed(maxTargetsPerRule), src: fleetWith(maxTargetsPerRule + 1),
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) {
			for i, a := range f.Agents {
				if int64(i) < v {
					a.Rule.Name = "fx-shared"
				}
			}
		}},
	{rule: "E002", what: "rules per bus", upper: true,
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 { return int64(rulesPerBus(f.Region)) },
		set: func(f *ir.Fleet, a *ir.Agent, v int64) {
			f.Bus.Archive = nil
			f.Agents = nil
			for i := range v {
				c, r := *a, *a.Rule
				r.Name = fmt.Sprintf("fx-r%d", i)
				c.Rule = &r
				f.Agents = append(f.Agents, &c)
			}
		}},
	{rule: "E002", what: "rules per bus in a smaller region", upper: true,
		prep:  func(f *ir.Fleet, _ *ir.Agent) { f.Region = "af-south-1" },
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 { return int64(rulesPerBus(f.Region)) },
		set: func(f *ir.Fleet, a *ir.Agent, v int64) {
			f.Bus.Archive = nil
			f.Agents = nil
			for i := range v {
				c, r := *a, *a.Rule
				r.Name = fmt.Sprintf("fx-r%d", i)
				c.Rule = &r
				f.Agents = append(f.Agents, &c)
			}
		}},
	{rule: "E003", what: "event pattern characters", upper: true, limit: fixed(maxPatternChars),
		set: func(_ *ir.Fleet, a *ir.Agent, v int64) { a.Rule.Pattern = patternOf(v) }},
	{rule: "E004", what: "rules with wildcards", upper: true, limit: fixed(maxWildcardRules), src: fleetWith(maxWildcardRules + 1),
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) {
			for i, a := range f.Agents {
				if int64(i) < v {
					a.Rule.Pattern["detail"] = map[string]any{"kind": []any{map[string]any{"wildcard": "a*"}}}
				}
			}
		}},
	{rule: "E005", what: "delivery attempts ≤ 185", upper: true, limit: fixed(maxDeliveryAttempts),
		set: iset(func(a *ir.Agent) *int { return &a.Delivery.Attempts })},
	{rule: "E005", what: "delivery attempts ≥ 0", upper: false, limit: fixed(0),
		set: iset(func(a *ir.Agent) *int { return &a.Delivery.Attempts })},
	{rule: "E005", what: "max event age ≥ 60 s", upper: false, limit: fixed(int64(minEventAge)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Delivery.MaxAge })},
	{rule: "E005", what: "max event age ≤ 24 h", upper: true, limit: fixed(int64(maxEventAge)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Delivery.MaxAge })},
	// E006 warns only where both reach EventBridge's maximum: 185 attempts and a day.
	{rule: "E006", what: "attempts at the maximum with a day's max age", upper: true, limit: fixed(maxDeliveryAttempts - 1),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Delivery.MaxAge = maxEventAge },
		set:  iset(func(a *ir.Agent) *int { return &a.Delivery.Attempts })},
	{rule: "E006", what: "max age at a day with maximum attempts", upper: true, limit: fixed(int64(maxEventAge) - 1),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Delivery.Attempts = maxDeliveryAttempts },
		set:  dset(func(a *ir.Agent) *time.Duration { return &a.Delivery.MaxAge })},
	{rule: "E011", what: "PutEvents requests/s ≤ the region's quota", upper: false, errorsOnly: true,
		// 24,000 conversations/min × 10 steps = 4,000 steps/s, one event each: at 10 entries a
		// batch that is exactly af-south-1's quota; one entry fewer a batch goes over it.
		prep: func(f *ir.Fleet, a *ir.Agent) {
			f.Region = "af-south-1"
			f.Traffic = &ir.Traffic{ConversationsPerMinute: 24000, StepsPerConversation: 10}
			a.Emits = f.Events[:1]
		},
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 {
			return int64(capacity.Of(f).EmittedPerSec() / capacity.PutEventsRPS(f.Region))
		},
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Bus.MaxEntries = int(v) }},
	{rule: "E010", what: "inline payload ≤ a PutEvents entry's detail", upper: true,
		prep:  func(f *ir.Fleet, a *ir.Agent) { a.Emits, a.MaxPayload = f.Events[:1], 0 },
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 { return putEventsMaxBytes - envelope(f.Events[0]) },
		set:   func(_ *ir.Fleet, a *ir.Agent, v int64) { a.ClaimCheckOver = v }},
	{rule: "E010", what: "PutEvents entries ≤ classic limit", upper: true, limit: fixed(ir.ClassicBusMaxEntries),
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Bus.MaxEntries = int(v) }},
	{rule: "E010", what: "PutEvents entries ≥ 1", upper: false, limit: fixed(1),
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Bus.MaxEntries = int(v) }},

	// idempotency
	{rule: "I001", what: "window ≥ max age + retention", upper: false,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.Delivery.MaxAge + a.Queue.Retention) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Idempotency.Window })},
	{rule: "T001", what: "synchronous tool p95", upper: true, limit: fixed(int64(syncToolP95)),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Tool, a.StepMax = &ir.Tool{}, time.Minute },
		set:  dset(func(a *ir.Agent) *time.Duration { return &a.StepP95 })},

	// models
	{rule: "M002", what: "in-group retries", upper: true, errorsOnly: false, limit: fixed(maxInGroupRetries),
		prep: func(f *ir.Fleet, _ *ir.Agent) { f.Models = append(f.Models, &ir.Model{Name: "m", Path: "/models/m"}) },
		set:  func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Models[len(f.Models)-1].Retries = int(v) }},
	{rule: "M002", what: "SDK retries under router retries", upper: true, limit: fixed(0),
		prep: func(f *ir.Fleet, _ *ir.Agent) {
			f.Models = append(f.Models, &ir.Model{Name: "m", Path: "/models/m", Retries: 1})
		},
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Models[len(f.Models)-1].SDKRetries = int(v) }},
	{rule: "M002", what: "router retries over SDK retries", upper: true, limit: fixed(0),
		prep: func(f *ir.Fleet, _ *ir.Agent) {
			f.Models = append(f.Models, &ir.Model{Name: "m", Path: "/models/m", SDKRetries: 1})
		},
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Models[len(f.Models)-1].Retries = int(v) }},
	{rule: "M003", what: "model timeout ≤ step.max", upper: true,
		prep:  func(_ *ir.Fleet, a *ir.Agent) { a.Model = &ir.Model{Name: "m", Path: "/models/m"} },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.StepMax) },
		set:   func(_ *ir.Fleet, a *ir.Agent, v int64) { a.Model.Timeout = time.Duration(v) }},
	{rule: "M003", what: "visibility above the model call when heartbeating", upper: false,
		prep: func(_ *ir.Fleet, a *ir.Agent) {
			a.Model = &ir.Model{Name: "m", Path: "/models/m", Timeout: 10 * time.Second}
			a.Heartbeat = time.Second
		},
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.Model.Timeout) + 1 },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Visibility })},

	// workers
	{rule: "W001", what: "lambda step.max ≤ 15 min", upper: true, limit: fixed(int64(ir.LambdaMaxTimeout)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "W002", what: "batching window ≤ 300 s", upper: true, errorsOnly: true, limit: fixed(int64(maxBatchingWindow)),
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Lambda.BatchingWindow })},
	{rule: "W002", what: "FIFO batch size", upper: true, limit: fixed(maxUnwindowedBatch),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.FIFO, a.Queue.FIFO, a.Lambda.BatchingWindow = true, true, 0 },
		set:  iset(func(a *ir.Agent) *int { return &a.Lambda.BatchSize })},
	{rule: "W002", what: "standard batch size without a window", upper: true, limit: fixed(maxUnwindowedBatch),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Lambda.BatchingWindow = 0 },
		set:  iset(func(a *ir.Agent) *int { return &a.Lambda.BatchSize })},
	{rule: "W002", what: "window above the unwindowed batch size", upper: false, errorsOnly: true, limit: fixed(int64(minBatchWindowAbove)),
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Lambda.BatchSize = maxUnwindowedBatch + 1 },
		set:  dset(func(a *ir.Agent) *time.Duration { return &a.Lambda.BatchingWindow })},
	{rule: "W002", what: "event source mapping concurrency ≥ 2", upper: false, limit: fixed(minESMConcurrency),
		set: iset(func(a *ir.Agent) *int { return &a.Scaling.Max })},
	{rule: "W002", what: "event source mapping concurrency ≤ 1,000", upper: true, limit: fixed(maxESMConcurrency),
		set: iset(func(a *ir.Agent) *int { return &a.Scaling.Max })},
	{rule: "W003", what: "visibility ≥ 6 × timeout + window", upper: false,
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.Lambda.BatchingWindow = 3 * time.Second },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 {
			return int64(lambdaVisibility*a.Lambda.Timeout + a.Lambda.BatchingWindow)
		},
		set: dset(func(a *ir.Agent) *time.Duration { return &a.Queue.Visibility })},
	{rule: "W003", what: "function timeout ≥ step.max", upper: false,
		prep:  func(_ *ir.Fleet, a *ir.Agent) { a.Queue.Visibility = ir.MaxVisibility },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.StepMax) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Lambda.Timeout })},
	{rule: "W003", what: "FIFO batch of one group within the timeout", upper: false,
		prep: func(_ *ir.Fleet, a *ir.Agent) {
			a.FIFO, a.Queue.FIFO, a.Lambda.BatchSize, a.Queue.Visibility = true, true, 4, ir.MaxVisibility
		},
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(4 * a.StepMax) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Lambda.Timeout })},
	{rule: "W004", what: "microVM session ≤ 8 h", upper: true, limit: fixed(int64(agentCoreMicroVM)), prep: agentCoreClass,
		set: func(_ *ir.Fleet, a *ir.Agent, v int64) { a.AgentCore.Session = time.Duration(v) }},
	{rule: "W004", what: "instances session ≤ 14 d", upper: true, limit: fixed(int64(agentCoreInstances)),
		prep: func(f *ir.Fleet, a *ir.Agent) { agentCoreClass(f, a); a.AgentCore.Instances = true },
		set:  func(_ *ir.Fleet, a *ir.Agent, v int64) { a.AgentCore.Session = time.Duration(v) }},
	{rule: "W004", what: "step.max ≤ the sync request", upper: true, limit: fixed(int64(agentCoreSyncRequest)), prep: agentCoreClass,
		set: dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "W004", what: "step.max ≤ the session", upper: true,
		prep:  func(f *ir.Fleet, a *ir.Agent) { agentCoreClass(f, a); a.AgentCore.Session = 5 * time.Minute },
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.AgentCore.Session) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "W004", what: "inline payload ≤ the invocation limit", upper: true, limit: fixed(agentCorePayload), prep: agentCoreClass,
		set: func(_ *ir.Fleet, a *ir.Agent, v int64) { a.MaxPayload, a.ClaimCheckOver = 0, v }},
	{rule: "W004", what: "active sessions ≤ the region's quota", upper: true,
		prep:  func(f *ir.Fleet, a *ir.Agent) { agentCoreClass(f, a); f.Traffic = &ir.Traffic{} },
		limit: func(f *ir.Fleet, _ *ir.Agent) int64 { return int64(capacity.AgentCoreSessions(f.Region)) },
		set:   func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Traffic.ConcurrentConversations = int(v) }},
	{rule: "W005", what: "scaling.max × per_replica ≤ max_in_flight", upper: true, limit: fixed(12),
		prep: func(f *ir.Fleet, a *ir.Agent) {
			eksClass(f, a)
			a.Scaling.PerReplica = 3
			a.Model = &ir.Model{Name: "m", Path: "/models/m", MaxInFlight: 36}
		},
		set: iset(func(a *ir.Agent) *int { return &a.Scaling.Max })},
	{rule: "W006", what: "scaling.min ≤ max", upper: true, prep: eksClass,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.Scaling.Max) },
		set:   iset(func(a *ir.Agent) *int { return &a.Scaling.Min })},
	{rule: "W006", what: "cooldown ≥ step.p95", upper: false, prep: eksClass,
		limit: func(_ *ir.Fleet, a *ir.Agent) int64 { return int64(a.StepP95) },
		set:   dset(func(a *ir.Agent) *time.Duration { return &a.Scaling.Cooldown })},
	{rule: "W006", what: "step.p95 within KEDA's poll without in-flight scaling", upper: true, limit: fixed(int64(kedaPollInterval)),
		prep: func(f *ir.Fleet, a *ir.Agent) {
			eksClass(f, a)
			a.Scaling.ScaleOnInFlight = false
			a.StepMax = time.Hour
		},
		set: dset(func(a *ir.Agent) *time.Duration { return &a.StepP95 })},

	// workflows
	{rule: "S006", what: "fan-out max_concurrency", upper: true, limit: fixed(capacity.MapMaxConcurrency), src: fleetWith(1) + fanOutSrc,
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { fanOut(f).MaxConcurrency = int(v) }},
	{rule: "S010", what: "fan-out batch input", upper: true, limit: fixed(sfnMaxPayload), src: fleetWith(1) + fanOutSrc,
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { fanOut(f).BatchInputBytes = v }},
	{rule: "S010", what: "tolerated failure ≤ 100 %", upper: true, limit: fixed(maxToleratedPercent), src: fleetWith(1) + fanOutSrc,
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { fanOut(f).ToleratedFailurePercent = int(v) }},
	{rule: "S010", what: "tolerated failure ≥ 0", upper: false, limit: fixed(0), src: fleetWith(1) + fanOutSrc,
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { fanOut(f).ToleratedFailurePercent = int(v) }},
	// S004 sums the state a workflow keeps: its input (the first class's inline payload
	// when it declares payload.max, else ~1 KiB of ids) and every declared step result.
	{rule: "S004", what: "Σ state with ~1 KiB of input", upper: true, limit: fixed(sfnMaxPayload), src: fleetWith(2) + twoStepSrc,
		prep: func(f *ir.Fleet, _ *ir.Agent) { statePrep(f, 0) },
		set:  func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Agents[1].MaxPayload = v - controlInput }},
	{rule: "S004", what: "Σ state with the first class's inline payload as input", upper: true, limit: fixed(sfnMaxPayload), src: fleetWith(2) + twoStepSrc,
		prep: func(f *ir.Fleet, _ *ir.Agent) { statePrep(f, 1) },
		// one byte of input, one of the first step's result
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Agents[1].MaxPayload = v - 2 }},
	{rule: "S008", what: "state transitions/s at one execution/s", upper: true, limit: fixed(capacity.TransitionsPerSec),
		src: fleetWith(1) + "\nworkflows:\n  w:\n    steps:\n      - agent: a000\n",
		prep: func(f *ir.Fleet, _ *ir.Agent) {
			f.Traffic = &ir.Traffic{ConversationsPerMinute: 60, StepsPerConversation: 1}
		},
		// one transition to start, then 1 + retries for the step
		set: func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Workflows[0].Steps[0].Retries = int(v) - 2 }},
	{rule: "S008", what: "express StartExecution/s", upper: true, limit: fixed(capacity.ExpressStartPerSec),
		src:  fleetWith(1) + "\nworkflows:\n  w:\n    type: express\n    steps:\n      - agent: a000\n",
		prep: func(f *ir.Fleet, _ *ir.Agent) { f.Traffic = &ir.Traffic{StepsPerConversation: 1} },
		set:  func(f *ir.Fleet, _ *ir.Agent, v int64) { f.Traffic.ConversationsPerMinute = float64(v * 60) }},
	{rule: "S009", what: "synchronous express step.max ≤ 300 s", upper: true, limit: fixed(int64(expressMax)),
		src:  fleetWith(1) + "\nworkflows:\n  w:\n    type: express\n    steps:\n      - agent: a000\n",
		prep: func(_ *ir.Fleet, a *ir.Agent) { a.StepP95 = time.Second },
		set:  dset(func(a *ir.Agent) *time.Duration { return &a.StepMax })},
	{rule: "S001", what: "express Σ p95 × (1 + retries) ≤ 300 s", upper: true, limit: fixed(int64(expressMax)),
		src: fleetWith(1) + "\nworkflows:\n  w:\n    type: express\n    steps:\n      - agent: a000\n",
		set: expressBudget},
	{rule: "S001", what: "express Σ p95 × (1 + retries) ≤ 300 s, two retries", upper: true, limit: fixed(int64(expressMax)),
		src:  fleetWith(1) + "\nworkflows:\n  w:\n    type: express\n    steps:\n      - agent: a000\n",
		prep: func(f *ir.Fleet, _ *ir.Agent) { f.Workflows[0].Steps[0].Retries = 2 },
		set:  expressBudget},
}

// expressBudget sets the one step's p95 so that p95 × (1 + retries) is v, rounded up.
func expressBudget(f *ir.Fleet, a *ir.Agent, v int64) {
	st := f.Workflows[0].Steps[0]
	a.StepP95 = time.Duration(v) / time.Duration(1+st.Retries)
	if time.Duration(v)%time.Duration(1+st.Retries) != 0 {
		a.StepP95++ // rounds the sum up past the limit
	}
}

func (b bound) fires(t *testing.T, v int64) []string {
	t.Helper()
	src := b.src
	if src == "" {
		src = fleetWith(1)
	}
	f := lowerSrc(t, src)
	a := f.Agents[0]
	if b.prep != nil {
		b.prep(f, a)
	}
	b.set(f, a, v)
	var out []string
	for _, d := range findings(f, b.rule) {
		if b.errorsOnly && d.Severity != diag.Error {
			continue
		}
		if strings.HasPrefix(d.Summary, "internal error") {
			t.Fatalf("%s crashed: %s", b.rule, d.Summary)
		}
		out = append(out, d.Summary)
	}
	return out
}

func TestBoundaries(t *testing.T) {
	covered := map[string]bool{}
	for _, b := range bounds {
		covered[b.rule] = true
		name := fmt.Sprintf("%s/%s", b.rule, b.what)
		t.Run(name, func(t *testing.T) {
			src := b.src
			if src == "" {
				src = fleetWith(1)
			}
			f := lowerSrc(t, src)
			if b.prep != nil {
				b.prep(f, f.Agents[0])
			}
			lim := b.limit(f, f.Agents[0])
			past := lim + 1
			if !b.upper {
				past = lim - 1
			}
			if got := b.fires(t, lim); len(got) != 0 {
				t.Errorf("at the limit %d: %s fires: %q", lim, b.rule, got)
			}
			if got := b.fires(t, past); len(got) == 0 {
				t.Errorf("one past the limit (%d): %s is silent", past, b.rule)
			}
		})
	}
}

// M003's visibility half applies only to a class that heartbeats: without a heartbeat the
// visibility is judged against step.max (Q001), and a model call as long as it is not news.
func TestModelCallVisibilityOnlyWhenHeartbeating(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	a := f.Agents[0]
	a.StepMax, a.Deadline = time.Minute, 0
	a.Model = &ir.Model{Name: "m", Path: "/models/m", Timeout: 10 * time.Second}
	a.Queue.Visibility = a.Model.Timeout
	a.Heartbeat = 0
	if got := findings(f, "M003"); len(got) != 0 {
		t.Errorf("no heartbeat: M003 fires: %v", got)
	}
	a.Heartbeat = time.Second
	if got := findings(f, "M003"); len(got) != 1 || !strings.Contains(got[0].Summary, "heartbeat cannot land") {
		t.Errorf("heartbeat: want the visibility finding, got %v", got)
	}
}

// Q012's class half judges every class a message reaches through its queue: one a rule
// feeds, also when workflows dispatch to it, and one nothing reaches yet. A class only
// workflows reach is judged per step (the step's timeout may bound it), not here.
func TestVisibilityCeilingClasses(t *testing.T) {
	classFinding := func(f *ir.Fleet) bool {
		for _, d := range findings(f, "Q012") {
			if strings.HasPrefix(d.Summary, "class a000: step.max 13h is above SQS's 12h visibility ceiling") {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name           string
		workflow, rule bool
		want           bool
	}{
		{"rule", false, true, true},
		{"rule and workflow", true, true, true},
		{"neither", false, false, true},
		{"workflow only", true, false, false},
	} {
		src := fleetWith(1)
		if c.workflow {
			src += "\nworkflows:\n  w:\n    steps:\n      - { agent: a000, timeout: 1h }\n"
		}
		f := lowerSrc(t, src)
		a := f.Agents[0]
		eksClass(f, a)
		a.StepMax = ir.MaxVisibility + time.Hour
		if !c.rule {
			a.Rule = nil
		}
		if got := classFinding(f); got != c.want {
			t.Errorf("%s: class finding %v, want %v (Q012: %v)", c.name, got, c.want, findings(f, "Q012"))
		}
	}
}

// W005 compares a class's model calls with its policy's max_in_flight only where the policy
// sets one (0: uncapped, the default), and its fix names the largest scaling.max that fits.
func TestKEDAvsModelCap(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	a := f.Agents[0]
	eksClass(f, a)
	a.Scaling.Max, a.Scaling.PerReplica = 10, 1
	a.Model = &ir.Model{Name: "m", Path: "/models/m"}
	expectNone(t, f, "W005")
	a.Model.MaxInFlight = 1 // the smallest cap is a cap
	if ds := findings(f, "W005"); len(ds) != 1 || ds[0].Detail != "Lower scaling.max to 1 or less, or per_replica." {
		t.Fatalf("W005 over a cap of 1: %v", ds)
	}
	a.Model.MaxInFlight = 4
	ds := findings(f, "W005")
	if len(ds) != 1 || ds[0].Detail != "Lower scaling.max to 4 or less, or per_replica." {
		t.Fatalf("W005 over the cap with per_replica 1: %v", ds)
	}
	if want := "class a000 scales to 10 concurrent model calls (10 × 1), above policy m's max_in_flight 4"; ds[0].Summary != want {
		t.Errorf("W005 summary %q, want %q", ds[0].Summary, want)
	}
}

// ReplaySafe is E013's reasoning, which fleetc replay also asks with the replay's reach
// (now − --from, to the nanosecond): a non_idempotent class is safe for any bounded reach
// up to its idempotency window, and never for an unbounded one (0, an archive kept forever).
func TestReplaySafe(t *testing.T) {
	const window = 24 * time.Hour
	a := &ir.Agent{SideEffects: "non_idempotent", Idempotency: ir.Idempotency{Window: window}}
	for reach, want := range map[time.Duration]bool{0: false, 1: true, time.Second: true, window: true, window + 1: false} {
		if got := ReplaySafe(a, reach); got != want {
			t.Errorf("non_idempotent, reach %v: safe %v, want %v", reach, got, want)
		}
	}
	a.SideEffects = "idempotent"
	if !ReplaySafe(a, 0) {
		t.Error("an idempotent class is unsafe to replay into")
	}
}

// A class whose own inline payload is over the state limit is reported once (S004's class
// half), not again in the sum of every workflow it is in: the sum waits for the class's fix.
func TestStatePayloadOversizedClassOnce(t *testing.T) {
	f := lowerSrc(t, fleetWith(2)+twoStepSrc)
	statePrep(f, 200<<10) // a000: 200 KiB input and result, under the limit alone
	f.Agents[1].ClaimCheckOver = sfnMaxPayload + 1
	ds := findings(f, "S004")
	if len(ds) != 1 || !strings.HasPrefix(ds[0].Summary, "class a001 (workflow w): payloads up to 262,145 bytes travel inline") {
		t.Errorf("S004: %v, want only class a001's finding", ds)
	}
	f.Agents[1].ClaimCheckOver = sfnMaxPayload // fixed: now the workflow's sum is over
	if ds := findings(f, "S004"); len(ds) != 1 || !strings.HasPrefix(ds[0].Summary, "workflow w keeps up to ") {
		t.Errorf("S004 after the class's fix: %v, want the workflow's sum", ds)
	}
}

// W003's batch half is FIFO's: records of one group run in order, so the function timeout
// must cover the batch. A standard queue's batch runs concurrently in fleet-worker, and a
// timeout covering one step is enough.
func TestLambdaBatchTimeoutFIFOOnly(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	a := f.Agents[0]
	a.Lambda.BatchSize, a.Lambda.Timeout, a.Queue.Visibility = 4, a.StepMax, ir.MaxVisibility
	expectNone(t, f, "W003")
	a.FIFO, a.Queue.FIFO = true, true
	if ds := findings(f, "W003"); len(ds) != 1 || !strings.Contains(ds[0].Summary, "a FIFO batch of 4 records of one group runs in order") {
		t.Errorf("FIFO batch of 4 past the timeout: W003 %v", ds)
	}
}

// Q001 for a zero visibility (SQS allows 0 s) without a heartbeat names the visibility: a
// zero heartbeat is "none", not one that misses half the visibility.
func TestZeroVisibilityNoHeartbeat(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	a := f.Agents[0]
	a.Queue.Visibility, a.Heartbeat = 0, 0
	ds := findings(f, "Q001")
	if len(ds) != 1 || !strings.HasPrefix(ds[0].Summary, "class a000: visibility 0s is below 1.5 × step.max") {
		t.Errorf("Q001: %v", ds)
	}
}

// W003's fix for a visibility the spec set below 6 × timeout + window, in the class or in
// defaults, is to raise it (fleetc's default includes the window).
func TestLambdaVisibilityFix(t *testing.T) {
	for _, c := range []struct{ old, new string }{
		{"\n    consumes:", "\n    queue: { visibility: 3m }\n    consumes:"},
		{"queue: { max_receives: 3 }", "queue: { max_receives: 3, visibility: 3m }"},
	} {
		src := strings.Replace(fleetWith(1), c.old, c.new, 1)
		f := lowerSrc(t, strings.Replace(src, "\n    consumes:", "\n    lambda: { batching_window: 30s }\n    consumes:", 1))
		ds := findings(f, "W003")
		if len(ds) != 1 || ds[0].Detail != "Set queue.visibility to at least 210s, or omit it for fleetc's default." {
			t.Errorf("%q: W003 %v", c.new, ds)
		}
	}
}
