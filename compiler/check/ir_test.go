package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// irFixtures test the rules that fleet.yaml cannot violate by construction (ir.Lower makes
// one target per rule, literal patterns, and one standard delivery DLQ per fleet). Each
// lowers a valid fleet, asserts the rule is silent, then breaks the IR the way a future
// lowering or a hand-built IR could and asserts the rule fires.
var irFixtures = map[string]func(t *testing.T){
	"E001": func(t *testing.T) {
		f := lowerSrc(t, fleetWith(6))
		expectNone(t, f, "E001")
		for _, a := range f.Agents {
			a.Rule.Name = "fx-shared" // six classes behind one rule: six targets
		}
		expectOnly(t, f, "E001", "rule fx-shared has 6 targets (a000, a001, a002, a003, a004, a005); EventBridge allows 5 per rule")
	},
	"E004": func(t *testing.T) {
		f := lowerSrc(t, fleetWith(31))
		wild := func(n int) {
			for i, a := range f.Agents {
				if i < n {
					a.Rule.Pattern["detail"] = map[string]any{"kind": []any{map[string]any{"wildcard": "a*"}}}
				}
			}
		}
		wild(30)
		expectNone(t, f, "E004")
		wild(31)
		expectOnly(t, f, "E004", "bus fx has 31 rules with wildcards; EventBridge allows 30 (not adjustable)")
	},
	"E007": func(t *testing.T) {
		f := lowerSrc(t, fleetWith(1))
		expectNone(t, f, "E007")
		f.TargetDLQ = ir.Queue{}
		expectOnly(t, f, "E007", "rule fx-a000's target has no dead-letter queue: events that exhaust retries are dropped")
	},
	"E008": func(t *testing.T) {
		f := lowerSrc(t, fleetWith(1))
		expectNone(t, f, "E008")
		// Either mark makes it FIFO: the attribute, or the name SQS requires of a FIFO queue.
		f.TargetDLQ.FIFO = true
		expectOnly(t, f, "E008", "target dead-letter queue fx-delivery-dlq is FIFO; EventBridge accepts only standard queues as rule-target DLQs")
		f.TargetDLQ.Name += ".fifo"
		expectOnly(t, f, "E008", "target dead-letter queue fx-delivery-dlq.fifo is FIFO; EventBridge accepts only standard queues as rule-target DLQs")
		f.TargetDLQ.FIFO = false
		expectOnly(t, f, "E008", "target dead-letter queue fx-delivery-dlq.fifo is FIFO; EventBridge accepts only standard queues as rule-target DLQs")
	},
}

func TestIRFixtures(t *testing.T) {
	for id, fn := range irFixtures {
		if _, ok := Lookup(id); !ok {
			t.Errorf("IR fixture for unknown rule %s", id)
			continue
		}
		t.Run(id, fn)
	}
}

// Parts of YAML-reachable rules that only a hand-built IR can break.

func TestE010BatchLimit(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	expectNone(t, f, "E010")
	f.Bus.MaxEntries = 11
	expectOnly(t, f, "E010", "PutEvents batches of 11 entries on a classic bus; EventBridge allows 1–10")
	f.Bus.MaxEntries = 100 // what an EventsV2 bus would take; fleetc creates only classic buses (E017)
	expectOnly(t, f, "E010", "PutEvents batches of 100 entries on a classic bus; EventBridge allows 1–10")
}

func TestS010ExecutionType(t *testing.T) {
	f := lowerSrc(t, fleetWith(1)+"\nworkflows:\n  w:\n    steps:\n      - fan_out: { items: $.items, agent: a000 }\n")
	expectNone(t, f, "S010")
	f.Workflows[0].Steps[0].FanOut.ExecutionType = ""
	expectOnly(t, f, "S010", `fan-out A000FanOut has ExecutionType ""; a DISTRIBUTED ItemProcessor needs STANDARD or EXPRESS`)
}

// TestS010Tolerance: fleet.yaml's schema keeps tolerated_failure_percent within 0–100; the
// rule guards IRs built in code.
func TestS010Tolerance(t *testing.T) {
	f := lowerSrc(t, fleetWith(1)+"\nworkflows:\n  w:\n    steps:\n      - fan_out: { items: $.items, agent: a000, tolerated_failure_percent: 100 }\n")
	expectNone(t, f, "S010")
	f.Workflows[0].Steps[0].FanOut.ToleratedFailurePercent = 150
	expectOnly(t, f, "S010", "fan-out A000FanOut: tolerated_failure_percent 150 is outside 0–100")
}

// TestRunSurvivesSparseIR: a hand-built IR with nothing filled in must not crash the catalog.
func TestRunSurvivesSparseIR(t *testing.T) {
	if ds := Run(nil); ds != nil {
		t.Errorf("Run(nil) = %v", ds)
	}
	f := &ir.Fleet{
		Agents:    []*ir.Agent{{Name: "x", Runtime: "lambda"}, {Name: "y", Runtime: "agentcore"}, {Name: "z", Runtime: "eks", FIFO: true}},
		Models:    []*ir.Model{{Name: "m"}},
		Workflows: []*ir.Workflow{{Name: "w", Steps: []*ir.Step{{Name: "s"}, {Name: "t", FanOut: &ir.FanOut{}}}}},
		Events:    []*ir.Event{{DetailType: "e"}},
		Traffic:   &ir.Traffic{ConversationsPerMinute: 60, StepsPerConversation: 1},
	}
	for _, d := range Run(f) {
		if strings.Contains(d.Summary, "internal error") {
			t.Errorf("rule crashed on a sparse IR: %v", d)
		}
	}
}

// TestRunDeduplicatesInheritedValues: a bad default inherited by two classes is one finding.
func TestRunDeduplicatesInheritedValues(t *testing.T) {
	src := strings.Replace(fleetWith(2), "defaults:\n  queue: { max_receives: 3 }", "defaults:\n  queue: { max_receives: 3, delay: 20m }", 1)
	f := lowerSrc(t, src)
	var got []string
	for _, d := range Run(f) {
		if d.Code == "Q011" {
			got = append(got, d.Path)
		}
	}
	if len(got) != 1 || got[0] != "/defaults/queue/delay" {
		t.Errorf("Q011 findings at %v, want one at /defaults/queue/delay", got)
	}
}

// TestRegionNumbers pins the seeds' regional quotas. AgentCore sessions follow the quotas
// page, which names two Regions where the seed says big-3 (awslimits.AgentCoreSessions).
func TestRegionNumbers(t *testing.T) {
	cases := []struct {
		region                string
		putEvents, fifoHT, cb float64
		rules, sessions       int
	}{
		{"us-east-1", 10000, 70000, 500, 300, 5000},
		{"us-west-2", 10000, 70000, 500, 300, 5000},
		{"eu-west-1", 10000, 70000, 500, 300, 2500},
		{"us-east-2", 2400, 2400, 300, 300, 2500},
		{"eu-south-2", 2400, 2400, 300, 300, 2500},
		{"ap-southeast-2", 400, 2400, 300, 300, 2500},
		{"af-south-1", 400, 2400, 300, 100, 2500},
		{"eu-south-1", 400, 2400, 300, 100, 2500},
	}
	for _, c := range cases {
		cb, _ := capacity.CallbackRefill(c.region)
		got := fmt.Sprint(capacity.PutEventsRPS(c.region), capacity.FIFOHighThroughputTPS(c.region), cb, rulesPerBus(c.region), capacity.AgentCoreSessions(c.region))
		want := fmt.Sprint(c.putEvents, c.fifoHT, c.cb, c.rules, c.sessions)
		if got != want {
			t.Errorf("%s: got %s, want %s", c.region, got, want)
		}
	}
}

func TestNum(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 62.5: "62.5", 11250: "11,250", 1048576: "1,048,576", 120000.04: "120,000", -1500: "-1,500", -0.5: "-0.5", 2.16e16: "2.16e+16"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}

// fleetWith is a valid fleet of n lambda classes, each consuming task.requested.
func fleetWith(n int) string {
	var b strings.Builder
	b.WriteString(`version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
defaults:
  queue: { max_receives: 3 }
events:
  task.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, kind]
      properties:
        trace_id: { type: string }
        kind: { type: string }
agents:
`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  a%03d:\n    runtime: lambda\n    consumes: { event: task.requested, match: { kind: [a%03d] } }\n    step: { p95: 2s, max: 30s }\n    handler: { exec: [/app/a] }\n", i, i)
	}
	return b.String()
}

var lowerSrc = irtest.LoadSource

func findings(f *ir.Fleet, id string) []*diag.Diagnostic {
	var out []*diag.Diagnostic
	for _, d := range Run(f) {
		if d.Code == id {
			out = append(out, d)
		}
	}
	return out
}

func expectNone(t *testing.T, f *ir.Fleet, id string) {
	t.Helper()
	for _, d := range findings(f, id) {
		t.Errorf("unexpected %s: %s", id, d.Summary)
	}
}

func expectOnly(t *testing.T, f *ir.Fleet, id, summary string) {
	t.Helper()
	ds := findings(f, id)
	if len(ds) != 1 || ds[0].Summary != summary || ds[0].Detail == "" || ds[0].Path == "" {
		var got []string
		for _, d := range ds {
			got = append(got, fmt.Sprintf("%s @%s", d.Summary, d.Path))
		}
		t.Errorf("%s findings:\n  %s\nwant exactly:\n  %s", id, strings.Join(got, "\n  "), summary)
	}
}

// TestS007HeartbeatCadence: heartbeats are counted at the worker's cadence (the class's
// step.heartbeat), which fleet-worker uses for every task-token message whatever the step's
// HeartbeatSeconds; lambda classes send none.
func TestS007HeartbeatCadence(t *testing.T) {
	src := `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
defaults:
  queue: { max_receives: 3 }
events:
  task.requested:
    version: 1
    source: fx.app
    detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } }
agents:
  w:
    runtime: eks
    step: { p95: 30s, max: 1m }
    handler: { http: "http://127.0.0.1:8080/step" }
workflows:
  flow:
    steps:
      - { agent: w }
traffic:
  conversations_per_minute: 24000
  steps_per_conversation: 1
  step_duration: 10m
`
	f := lowerSrc(t, src)
	// 400 steps/s × 600 s = 240,000 in flight, each beating every 30 s (visibility 90 s / 3).
	if got := f.Agents[0].Heartbeat; got.Seconds() != 30 {
		t.Fatalf("cadence %v, want 30s", got)
	}
	expectOnly(t, f, "S007", "projected 8,400 SendTask* calls/s (400 SendTaskSuccess/Failure + 8,000 SendTaskHeartbeat) exceed the 500/s refill in us-east-1")
	f.Agents[0].Heartbeat = 0 // a lambda worker sends no task heartbeats: 400 answers/s fit
	expectNone(t, f, "S007")
	// Answers and heartbeats share one bucket: 400 + 240,000 / 2,400 s = 500/s is the limit,
	// one second less of cadence is over it.
	f.Agents[0].Heartbeat = 40 * time.Minute
	expectNone(t, f, "S007")
	f.Agents[0].Heartbeat = 40*time.Minute - time.Second
	expectOnly(t, f, "S007", "projected 500 SendTask* calls/s (400 SendTaskSuccess/Failure + 100 SendTaskHeartbeat) exceed the 500/s refill in us-east-1")
}

// TestW002ConcurrencyQuota: above 1,000 the event source mapping needs a quota increase.
func TestW002ConcurrencyQuota(t *testing.T) {
	f := lowerSrc(t, fleetWith(1))
	expectNone(t, f, "W002")
	f.Agents[0].Scaling.Max = 1001
	expectOnly(t, f, "W002", "lambda class a000: scaling.max 1,001 is above the event source mapping's 1,000 maximum concurrency")
	if ds := findings(f, "W002"); len(ds) == 1 && ds[0].Severity != diag.Warning {
		t.Errorf("W002 above 1,000 is %v, want a warning", ds[0].Severity)
	}
}

// A default never produces an error: a policy without a timeout (default 2m) on a class
// whose step.max is 30s is cut to the step, not reported; the same timeout written is M003.
func TestM003DefaultTimeoutIsNotAnError(t *testing.T) {
	src := fleetWith(1) + "    model: fast\nmodels:\n  fast:\n    targets: [bedrock/us.anthropic.claude-haiku-4-5]\n"
	expectNone(t, lowerSrc(t, src), "M003")
	written := strings.Replace(src, "  fast:\n", "  fast:\n    timeout: 2m\n", 1)
	expectOnly(t, lowerSrc(t, written), "M003", "class a000: model call timeout 2m (policy fast) exceeds its step.max 30s")
}
