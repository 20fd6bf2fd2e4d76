package check

import (
	"fmt"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// ceilingRules are AWS ceilings an option can reach although fleet.yaml accepts it: a bus
// model the provider cannot create, and steps longer than SQS can keep hidden.
var ceilingRules = []Rule{
	{
		ID: "E017", Category: "bus", Severity: diag.Error,
		Summary: "bus.model v2: fleetc cannot create an EventsV2 bus; use classic",
		Explain: `EventsV2 buses replace rules with subscribers, retry 5 times over 300 s by default and
take 1–100 entries per PutEvents. The AWS provider fleetc generates for (6.x subset and
5.100.0) has no EventsV2 resource: aws_cloudwatch_event_bus has no model argument and
there is no subscriber resource, so fleetc could only create a classic bus with classic
rules and targets. Workers told "v2" would batch 100 entries where the classic bus
accepts 10, and the refused batches would dead-letter completed work.
Fix: remove bus.model (or write model: classic); the runtime configs then batch 10
entries, which is what the generated bus accepts.`,
		Check: checkBusModel,
	},
	{
		ID: "Q012", Category: "queues", Severity: diag.Error,
		Summary: "a queue-fed step can run at most 12 h: SQS stops extending visibility 12 h after a receive",
		Explain: `SQS caps a message's visibility at 43,200 s (12 h) counted from the receive, heartbeats
included: ChangeMessageVisibility cannot push it further. A queue-fed step still running
then reappears, a second worker starts it again, and after max_receives it is in the DLQ.
Check: step.max ≤ 12 h for every class fed by events; for a workflow step on a
queue-fed class, min(step.max, the step's timeout) ≤ 12 h (fleet-worker gives a task
only what remains of its TimeoutSeconds). Synchronous lambda steps are not queue-fed.
Fix: split the step into shorter steps, or checkpoint its progress and re-enqueue the
remainder as a new message before 12 h; then lower step.max (or the step's timeout).`,
		Check: checkVisibilityCeiling,
	},
}

// splitOrCheckpoint is what a step longer than the ceiling should do instead.
const splitOrCheckpoint = "split the step into steps of at most 12h, or checkpoint its progress and re-enqueue the remainder as a new message before 12h"

func checkBusModel(f *ir.Fleet, r *Reporter) {
	if f.Bus.RequestedModel != "v2" {
		return
	}
	r.Add(at(f, "/bus/model", "/bus"),
		"bus.model v2: fleetc cannot create an EventsV2 bus (the AWS provider has no EventsV2 resource); it would create a classic bus that accepts 10 PutEvents entries, not 100",
		"Remove bus.model or write model: classic. fleetc's runtime configs batch what the generated bus accepts (10 entries per request).")
}

func checkVisibilityCeiling(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		// A class reached only through workflows is bounded per step below.
		if a.StepMax > ir.MaxVisibility && (a.Rule != nil || len(a.Workflows) == 0) {
			r.Add(at(f, a.Path+"/step/max", a.Path),
				fmt.Sprintf("class %s: step.max %s is above SQS's 12h visibility ceiling; the message reappears mid-step and a second worker starts it again", a.Name, dur(a.StepMax)),
				"Either "+splitOrCheckpoint+"; then lower step.max to 12h or less.")
		}
	}
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			a := st.Agent
			if a == nil || st.Synchronous(w) {
				continue
			}
			run := a.StepMax
			if st.Timeout > 0 && st.Timeout < run {
				run = st.Timeout
			}
			if run > ir.MaxVisibility {
				r.Add(at(f, stepPath(st, "timeout"), st.Path),
					fmt.Sprintf("workflow %s step %s: its timeout lets class %s's queue-fed step run %s (step.max %s), past SQS's 12h visibility ceiling", w.Name, st.Name, a.Name, dur(run), dur(a.StepMax)),
					"Set the step's timeout to 12h or less, or "+splitOrCheckpoint+".")
			}
		}
	}
}
