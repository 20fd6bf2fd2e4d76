package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// contractRules check that what fleet-worker emits can keep the contracts fleetc writes.
var contractRules = []Rule{
	{
		ID: "E020", Category: "bus", Severity: diag.Error,
		Summary: "every required field of an emitted event's detail is filled by the worker or carried from the class's input",
		Explain: `fleet-worker builds each emitted detail by one rule (docs/concepts.md "Completion events"):
it writes agent_class, trace_id, traceparent and the handler's output (result, or
result_ref above claim_check_over), and copies every other declared property by name from
the consumed detail (the message's detail or the workflow's state input). A detail that
breaks the event's schema is never published: the step is dead-lettered
(EventContractViolation). A required field nothing fills dead-letters every step.
Check: each required field is a worker field the schema allows, or is declared in the
consumed event (optional there warns) and in every fan-out item (item, index, trace_id,
group key); never result or result_ref alone. Workflow inputs get the fields by schema.
Fix: require the field in the consumed event, move the value into the handler's result,
or drop it from required (anyOf [{required: [result]}, {required: [result_ref]}]).`,
		Check: checkEmittedDetail,
	},
}

func checkEmittedDetail(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		sources := ir.InputSources(a, a.Workflows)
		if len(sources) == 0 {
			continue // never receives work
		}
		for i, e := range a.Emits {
			at := spec.Pointer("agents", a.Name, "emits", fmt.Sprint(i))
			plan := ir.EmitDetail(e)
			for _, field := range plan.Required {
				checkRequiredField(r, a, e, plan, field, sources, at)
			}
		}
	}
}

func checkRequiredField(r *Reporter, a *ir.Agent, e *ir.Event, plan ir.DetailPlan, field string, sources []ir.InputSource, at string) {
	lead := fmt.Sprintf("class %s emits %s, whose detail requires %q", a.Name, e.DetailType, field)
	switch field {
	case ir.FieldResult, ir.FieldResultRef:
		other := ir.FieldResultRef
		if field == ir.FieldResultRef {
			other = ir.FieldResult
		}
		r.Add(at, lead+fmt.Sprintf(", but the worker sends the handler's output as either result or result_ref (above claim_check_over, %s)", bytesOf(a.ClaimCheckOver)),
			fmt.Sprintf("An output on the other side of the threshold carries %s instead and breaks the contract. Require neither, or write anyOf: [{required: [result]}, {required: [result_ref]}].", other))
		return
	case ir.FieldAgentClass, ir.FieldTraceID, ir.FieldTraceparent:
		if !slices.Contains(plan.Worker, field) {
			r.Add(at, lead+", which the schema does not declare while it forbids additional properties",
				fmt.Sprintf("Declare %s under events.%s.detail.properties.", field, e.DetailType))
		}
		return
	}
	for _, src := range sources {
		if src.Open {
			continue // the workflow's input schema requires it
		}
		if !slices.Contains(src.Fields, field) {
			r.Add(at, lead+fmt.Sprintf(", which nothing fills: the worker does not write it and %s does not carry it", src.What),
				fmt.Sprintf("The worker copies carried fields by name from the detail it consumed (%s: %s). Declare and require %s there, put the value inside the handler's result, or drop it from events.%s.detail.required.",
					src.What, fieldList(src.Fields), field, e.DetailType))
			continue
		}
		if ev := a.Consumes; ev != nil && ev.Event != nil && src.Path == a.Path+"/consumes/event" && !requires(ev.Event, field) {
			r.Warn(at, lead+fmt.Sprintf(", which %s declares but does not require", src.What),
				fmt.Sprintf("A message without %s makes a detail that breaks the contract; the step is then dead-lettered (EventContractViolation). Require %s in events.%s.detail.", field, field, ev.Event.DetailType))
		}
	}
}

func requires(e *ir.Event, field string) bool {
	req, _ := e.Detail["required"].([]any)
	return slices.Contains(req, any(field))
}

func fieldList(fields []string) string {
	if len(fields) == 0 {
		return "no fields"
	}
	return strings.Join(fields, ", ")
}
