package check

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// faultRules judge a class's failure budget against the faults it must absorb, under the
// fault model of docs/faults.md: within one receive fleet-worker holds the message for one
// step window (step.max) and retries in process; the budget is RetryLimit receives.
var faultRules = []Rule{
	{
		ID: "Q013", Category: "queues", Severity: diag.Warning,
		Summary: "the retry budget ((max_receives − 1) × step.max − p95, within the deadline) outlasts a " + dur(typicalOutage) + " retryable outage",
		Explain: `fleet-worker holds a message through retryable faults (full jitter, 500 ms … 30 s)
for one step window per receive: step.max from the receive, visibility heartbeated. Its
failure budget is max_receives − 1 receives (the last is left for a crashed worker), so a
retryable outage is survived only if it ends in time for one p95 attempt:
outage ≤ (max_receives − 1) × step.max − step.p95, capped by step.deadline (the run's
deadline: DeadlineExceeded) and a workflow task's timeout. The typical fault is a ` + dur(typicalOutage) + `
outage (a model 429 wave, a failing handler; half the seed router's 60 s cooldown).
Throttles are delays, not failures: absorbed until the deadline, so a deadline below a
model policy's cooldown + p95 dead-letters work on one throttle that benches every deployment.
Fix: raise queue.max_receives or step.max (or step.deadline, the task's timeout); lower
the model policy's cooldown. See docs/faults.md.`,
		Check: checkRetryBudget,
	},
}

// What bounds how long a step may hold its work across receives.
type holdBound int

const (
	byBudget   holdBound = iota // RetryLimit step windows
	byDeadline                  // the run's deadline (step.deadline)
	byTimeout                   // a workflow task's timeout
)

// hold is how long the worker may keep retrying one unit of work, and what ends it.
type hold struct {
	span  time.Duration
	bound holdBound
}

// holdOf is the hold of a step of a: RetryLimit step windows, cut by the run's deadline and,
// for a workflow task, its timeout (0: none).
func holdOf(a *ir.Agent, timeout time.Duration) hold {
	h := hold{span: time.Duration(a.RetryLimit()) * a.StepMax, bound: byBudget}
	if a.Deadline > 0 && a.Deadline < h.span {
		h = hold{span: a.Deadline, bound: byDeadline}
	}
	if timeout > 0 && timeout < h.span {
		h = hold{span: timeout, bound: byTimeout}
	}
	return h
}

// survivable is the longest retryable outage the hold absorbs: it must end in time for
// one p95 attempt.
func (h hold) survivable(a *ir.Agent) time.Duration { return h.span - a.StepP95 }

// stepSane: step.max > 0 and p95 ≤ step.max, or Q001 reports the step and its window means nothing.
func stepSane(a *ir.Agent) bool { return a.StepMax > 0 && a.StepP95 <= a.StepMax }

// eventFed says a class's steps arrive through its rule (or nothing else bounds them): its
// hold is judged without a task timeout.
func eventFed(a *ir.Agent) bool { return a.Rule != nil || len(a.Workflows) == 0 }

func checkRetryBudget(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if !stepSane(a) {
			continue
		}
		if eventFed(a) {
			reportHold(f, r, a, holdOf(a, 0), nil, nil)
		}
		checkCooldownFitsDeadline(f, r, a)
	}
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			a := st.Agent
			if a == nil || !stepSane(a) || st.Synchronous(w) {
				continue // a synchronous step is invoked, not received: no receive budget
			}
			// Unless the task's timeout binds, this is the class's own finding: Run reports
			// it once, however many steps dispatch to the class.
			reportHold(f, r, a, holdOf(a, st.Timeout), w, st)
		}
	}
}

// reportHold warns when h ends before the typical outage does, naming the numbers and the
// value to change.
func reportHold(f *ir.Fleet, r *Reporter, a *ir.Agent, h hold, w *ir.Workflow, st *ir.Step) {
	s := h.survivable(a)
	if s >= typicalOutage {
		return
	}
	need := typicalOutage + a.StepP95 // the hold that survives the typical outage
	outage := "a retryable outage longer than " + dur(max(s, 0))
	switch h.bound {
	case byBudget:
		n := a.RetryLimit()
		r.Warn(at(f, a.Path+"/queue/max_receives", "/defaults/queue/max_receives", a.Path+"/step/max"),
			fmt.Sprintf("class %s: with max_receives %d and step.max %s, p95 %s, %s (%d × %s − %s) dead-letters work (RetriesExhausted), shorter than the typical %s outage",
				a.Name, a.Queue.MaxReceives, dur(a.StepMax), dur(a.StepP95), outage, n, dur(a.StepMax), dur(a.StepP95), dur(typicalOutage)),
			budgetFix(a, need))
	case byDeadline:
		r.Warn(at(f, a.Path+"/step/deadline", a.Path),
			fmt.Sprintf("class %s: step.deadline %s, p95 %s: %s dead-letters work (DeadlineExceeded), shorter than the typical %s outage",
				a.Name, dur(a.Deadline), dur(a.StepP95), outage, dur(typicalOutage)),
			fmt.Sprintf("Raise step.deadline to at least %s (the outage plus one p95 attempt).", dur(need)))
	case byTimeout:
		r.Warn(at(f, stepPath(st, "timeout"), st.Path),
			fmt.Sprintf("workflow %s step %s: its timeout %s, class %s's p95 %s: %s fails the task (States.Timeout), shorter than the typical %s outage",
				w.Name, st.Name, dur(st.Timeout), a.Name, dur(a.StepP95), outage, dur(typicalOutage)),
			fmt.Sprintf("Raise the step's timeout to at least %s (the outage plus one p95 attempt).", dur(need)))
	}
}

// budgetFix names the max_receives and the step.max that each make the hold need long,
// the step.max first where more receives would reorder a standard queue (Q005).
func budgetFix(a *ir.Agent, need time.Duration) string {
	receives := ceilDiv(need, a.StepMax) + 1
	stepMax := dur(roundUpSecond(time.Duration(ceilDiv(need, time.Duration(a.RetryLimit())))))
	const why = "each receive holds the work one step.max (docs/faults.md)"
	if !a.Queue.FIFO && receives > ageAlarmReceives {
		return fmt.Sprintf("Raise step.max to %s, or queue.max_receives to %d (above %d on a standard queue: Q005); %s.", stepMax, receives, ageAlarmReceives, why)
	}
	return fmt.Sprintf("Raise queue.max_receives to %d or step.max to %s; %s.", receives, stepMax, why)
}

// checkCooldownFitsDeadline: a throttle is absorbed until the run's deadline, and when every
// deployment of a policy is benched the router throttles for up to one cooldown; a deadline
// that cannot wait one cooldown plus a p95 attempt dead-letters that work.
func checkCooldownFitsDeadline(f *ir.Fleet, r *Reporter, a *ir.Agent) {
	if a.Deadline <= 0 {
		return
	}
	left := a.Deadline - a.StepP95
	for _, m := range a.Models {
		if m == nil || left >= m.Cooldown {
			continue
		}
		r.Warn(at(f, a.Path+"/step/deadline", a.Path),
			fmt.Sprintf("class %s: step.deadline %s leaves %s after p95 %s, less than model policy %s's cooldown %s: a throttle of one cooldown dead-letters work (DeadlineExceeded)",
				a.Name, dur(a.Deadline), dur(max(left, 0)), dur(a.StepP95), m.Name, dur(m.Cooldown)),
			fmt.Sprintf("Raise step.deadline to at least %s, or lower models.%s.cooldown below %s.", dur(m.Cooldown+a.StepP95), m.Name, dur(max(left, 0))))
	}
}

// ceilDiv is ⌈a / b⌉ for positive b.
func ceilDiv(a, b time.Duration) int { return int((a + b - 1) / b) }

// roundUpSecond rounds a suggestion up to a duration the spec writes.
func roundUpSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}
