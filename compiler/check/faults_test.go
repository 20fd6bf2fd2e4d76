package check

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
)

// q013Fleet is one lambda class with the given step block, queue block and model policy
// ("" for none), behind an optional workflow step timeout ("" for none: the class is
// event-fed).
func q013Fleet(step, queue, model, taskTimeout string) string {
	var b strings.Builder
	b.WriteString(`version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
events:
  task.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id]
      properties:
        trace_id: { type: string }
`)
	if model != "" {
		b.WriteString("models:\n  m:\n    targets: [bedrock/us.anthropic.claude-haiku-4-5]\n    " + model + "\n")
	}
	b.WriteString("agents:\n  w:\n    runtime: lambda\n")
	if taskTimeout == "" {
		b.WriteString("    consumes: { event: task.requested }\n")
	}
	fmt.Fprintf(&b, "    step: { %s }\n    handler: { exec: [/app/w] }\n", step)
	if queue != "" {
		fmt.Fprintf(&b, "    queue: { %s }\n", queue)
	}
	if model != "" {
		b.WriteString("    model: m\n")
	}
	if taskTimeout != "" {
		fmt.Fprintf(&b, "workflows:\n  wf:\n    steps:\n      - { agent: w, timeout: %s }\n", taskTimeout)
	}
	return b.String()
}

// TestRetryBudgetEdges holds Q013's arithmetic one second either side of each comparison,
// from the spec: the survivable outage is (max_receives − 1) × step.max − p95, cut by
// step.deadline and a workflow task's timeout, against the 30 s typical outage; a deadline
// must leave a model policy's cooldown after p95. Each case's numbers are worked by hand
// from that formula; want is the number the summary must report ("" = silent).
func TestRetryBudgetEdges(t *testing.T) {
	if typicalOutage != 30*time.Second {
		t.Fatalf("the cases below are worked for a 30s typical outage, not %s", typicalOutage)
	}
	cases := []struct {
		name                            string
		step, queue, model, taskTimeout string
		want                            string // the summary's fragment; "" = no finding
	}{
		// 2 windows × 25s − p95: 50s − 21s = 29s fires, 50 − 20 = 30s and 50 − 19 = 31s do not.
		{"budget p95 +1s", "p95: 21s, max: 25s", "max_receives: 3", "", "", "longer than 29s (2 × 25s − 21s)"},
		{"budget p95 at", "p95: 20s, max: 25s", "max_receives: 3", "", "", ""},
		{"budget p95 −1s", "p95: 19s, max: 25s", "max_receives: 3", "", "", ""},
		// step.max: 1 receive × 44s − 15s = 29s fires; 45s and 46s do not.
		{"budget step.max −1s", "p95: 15s, max: 44s", "max_receives: 2", "", "", "longer than 29s (1 × 44s − 15s)"},
		{"budget step.max at", "p95: 15s, max: 45s", "max_receives: 2", "", "", ""},
		{"budget step.max +1s", "p95: 15s, max: 46s", "max_receives: 2", "", "", ""},
		// max_receives 2 is one window (the last receive is left for a crash): 20 − 15 = 5s.
		{"budget one window", "p95: 15s, max: 20s", "max_receives: 2", "", "", "longer than 5s (1 × 20s − 15s)"},
		{"budget two windows", "p95: 10s, max: 20s", "max_receives: 3", "", "", ""},
		// step.deadline cuts 2 × 30s: 44s − 15s = 29s fires; 45s, 46s do not.
		{"deadline −1s", "p95: 15s, max: 30s, deadline: 44s", "", "", "", "step.deadline 44s, p95 15s: a retryable outage longer than 29s dead-letters work (DeadlineExceeded)"},
		{"deadline at", "p95: 15s, max: 30s, deadline: 45s", "", "", "", ""},
		{"deadline +1s", "p95: 15s, max: 30s, deadline: 46s", "", "", "", ""},
		// A workflow task's timeout cuts 2 × 30s the same way.
		{"task timeout −1s", "p95: 15s, max: 30s", "", "", "44s", "its timeout 44s, class w's p95 15s: a retryable outage longer than 29s fails the task"},
		{"task timeout at", "p95: 15s, max: 30s", "", "", "45s", ""},
		{"task timeout +1s", "p95: 15s, max: 30s", "", "", "46s", ""},
		// A 60s cooldown needs deadline − p95 ≥ 60s: 74s − 15s = 59s fires; 75s, 76s do not
		// (2 × 40s windows hold 80s, so the outage half stays silent).
		{"cooldown −1s", "p95: 15s, max: 40s, deadline: 74s", "", "cooldown: 60s", "", "step.deadline 74s leaves 59s after p95 15s, less than model policy m's cooldown 1m"},
		{"cooldown at", "p95: 15s, max: 40s, deadline: 75s", "", "cooldown: 60s", "", ""},
		{"cooldown +1s", "p95: 15s, max: 40s, deadline: 76s", "", "cooldown: 60s", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := lowerSrc(t, q013Fleet(c.step, c.queue, c.model, c.taskTimeout))
			got := findings(f, "Q013")
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("Q013 fires: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Summary, c.want) {
				t.Errorf("want one Q013 finding containing %q, got %v", c.want, got)
			}
		})
	}
}

// TestRetryBudgetOnceForAClass: a class fed both by events and by a workflow step whose
// timeout does not bind is reported once, at the class; a synchronous (express) step has no
// receive budget and is not judged.
func TestRetryBudgetOnceForAClass(t *testing.T) {
	f := lowerSrc(t, fleetWith(1)+"\nworkflows:\n  w:\n    steps:\n      - agent: a000\n")
	a := f.Agents[0]
	a.StepP95, a.StepMax, a.Queue.MaxReceives = 15*time.Second, 20*time.Second, 2
	got := findings(f, "Q013")
	if len(got) != 1 || !strings.Contains(got[0].Summary, "class a000: with max_receives 2") {
		t.Errorf("want the class finding once, got %v", got)
	}

	f = lowerSrc(t, fleetWith(1)+"\nworkflows:\n  w:\n    type: express\n    steps:\n      - agent: a000\n")
	a = f.Agents[0]
	a.Rule, a.StepP95, a.StepMax = nil, 15*time.Second, 20*time.Second
	f.Workflows[0].Steps[0].Timeout = 20 * time.Second
	if !f.Workflows[0].Steps[0].Synchronous(f.Workflows[0]) {
		t.Fatal("the express step on a lambda class should be synchronous")
	}
	if got := findings(f, "Q013"); len(got) != 0 {
		t.Errorf("a synchronous step is judged: %v", got)
	}
}

// TestRetryLimitIsReceivesLessOne: the budget Q013 counts is what fleet-worker is
// configured with (runtimeconfig's retry.max_attempts), one below maxReceiveCount, never 0.
func TestRetryLimitIsReceivesLessOne(t *testing.T) {
	for receives, want := range map[int]int{1: 1, 2: 1, 3: 2, 5: 4} {
		a := &ir.Agent{Queue: ir.Queue{MaxReceives: receives}}
		if got := a.RetryLimit(); got != want {
			t.Errorf("max_receives %d: RetryLimit %d, want %d", receives, got, want)
		}
	}
}

// TestRetryBudgetFixIsEnough: the values a finding's detail names silence Q013, and one
// unit less does not: the suggestion is the smallest that works.
func TestRetryBudgetFixIsEnough(t *testing.T) {
	number := func(t *testing.T, detail, re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(detail)
		if m == nil {
			t.Fatalf("detail %q names no %s", detail, re)
		}
		return m[1]
	}
	duration := func(t *testing.T, s string) time.Duration {
		t.Helper()
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct{ p95, max time.Duration }{
		{15 * time.Second, 20 * time.Second}, // one window: 4 receives or 45s
		{2 * time.Second, 10 * time.Second},  // 5 receives or 32s
		{7 * time.Second, 13 * time.Second},  // 37s: 4 receives or 37s
	} {
		fleet := func() (*ir.Fleet, *ir.Agent) {
			f := lowerSrc(t, fleetWith(1))
			a := f.Agents[0]
			a.StepP95, a.StepMax, a.Queue.MaxReceives = c.p95, c.max, 2
			return f, a
		}
		f, _ := fleet()
		got := findings(f, "Q013")
		if len(got) != 1 {
			t.Fatalf("%v: want one finding, got %v", c, got)
		}
		receives, _ := strconv.Atoi(number(t, got[0].Detail, `queue\.max_receives to (\d+)`))
		stepMax := duration(t, number(t, got[0].Detail, `step\.max to (\d+[a-z]+)`))
		for _, fix := range []struct {
			name  string
			apply func(a *ir.Agent, less bool)
		}{
			{"max_receives", func(a *ir.Agent, less bool) { a.Queue.MaxReceives = receives - b2i(less) }},
			{"step.max", func(a *ir.Agent, less bool) { a.StepMax = stepMax - time.Duration(b2i(less))*time.Second }},
		} {
			f, a := fleet()
			fix.apply(a, false)
			if got := findings(f, "Q013"); len(got) != 0 {
				t.Errorf("%v: the suggested %s does not silence Q013: %v", c, fix.name, got)
			}
			f, a = fleet()
			fix.apply(a, true)
			if got := findings(f, "Q013"); len(got) == 0 {
				t.Errorf("%v: one less than the suggested %s also works: the suggestion is not the smallest", c, fix.name)
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
