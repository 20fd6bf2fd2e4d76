package ir

import "slices"

// The detail of every event a class emits is built by fleet-worker, one rule for all classes
// (docs/concepts.md "Completion events"), written into each runtime config as events.fill_order. Each
// property is filled from the first of these sources that has a value:
//
//  1. worker fields: agent_class (the emitting class), trace_id (the step's trace id),
//     traceparent (the step's W3C trace context) and the handler's output, as result or, above
//     the class's claim-check threshold, result_ref. Each is written when the event's detail
//     schema declares it; agent_class, trace_id and result/result_ref also when the schema is
//     open (additionalProperties not false). traceparent only when declared: it otherwise rides
//     the PutEvents TraceHeader, outside the detail. No handler result overrides them.
//  2. the handler result: a declared property that the class's output declares too is taken
//     from the result's top-level property of the same name (the result is an object: the
//     worker validated it against output).
//  3. carried fields: every other declared property (and one the result left out) is copied
//     verbatim from the consumed detail (the message's detail as delivered, or the workflow
//     state input), when present there.
//
// Nothing else enters the detail. The worker checks the result against the schema before
// PutEvents.

// Worker-written detail fields.
const (
	FieldAgentClass  = "agent_class"
	FieldTraceID     = "trace_id"
	FieldTraceparent = "traceparent"
	FieldResult      = "result"
	FieldResultRef   = "result_ref"
)

// DetailPlan is how the worker builds one emitted event's detail.
type DetailPlan struct {
	// Worker lists the worker fields written: agent_class, trace_id, traceparent, and result
	// (which stands for result or result_ref, whichever the output's size selects).
	Worker []string
	// Carry lists the declared properties copied from the consumed detail when present.
	Carry []string
	// FromOutput lists the declared properties the handler result fills (the class's output
	// declares them), sorted; each is carried when the result leaves it out.
	FromOutput []string
	// Closed is true when the schema says additionalProperties: false.
	Closed bool
	// Required are the schema's top-level required fields, sorted.
	Required []string
}

// EmitDetail returns the plan of event e's detail (e is one of a class's emits).
func EmitDetail(e *Event) DetailPlan {
	var p DetailPlan
	if e == nil {
		return p
	}
	props, _ := e.Detail["properties"].(map[string]any)
	ap, hasAP := e.Detail["additionalProperties"].(bool)
	p.Closed = hasAP && !ap
	declared := func(k string) bool { _, ok := props[k]; return ok }
	if declared(FieldAgentClass) || !p.Closed {
		p.Worker = append(p.Worker, FieldAgentClass)
	}
	if declared(FieldResult) || declared(FieldResultRef) || !p.Closed {
		p.Worker = append(p.Worker, FieldResult)
	}
	if declared(FieldTraceID) || !p.Closed {
		p.Worker = append(p.Worker, FieldTraceID)
	}
	if declared(FieldTraceparent) {
		p.Worker = append(p.Worker, FieldTraceparent)
	}
	for k := range props {
		if !IsWorkerField(k) {
			p.Carry = append(p.Carry, k)
		}
	}
	slices.Sort(p.Carry)
	if req, ok := e.Detail["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				p.Required = append(p.Required, s)
			}
		}
	}
	slices.Sort(p.Required)
	return p
}

// EmitDetailOf is EmitDetail for event e emitted by class a: the plan plus the properties a's
// output fills.
func EmitDetailOf(a *Agent, e *Event) DetailPlan {
	p := EmitDetail(e)
	if a == nil {
		return p
	}
	out := OutputProperties(a)
	for _, k := range p.Carry {
		if _, ok := out[k]; ok {
			p.FromOutput = append(p.FromOutput, k)
		}
	}
	return p
}

// OutputProperties are the top-level properties a's output declares (nil without output).
func OutputProperties(a *Agent) map[string]any {
	props, _ := a.Output["properties"].(map[string]any)
	return props
}

// OutputRequires reports whether a's output requires field at its top level.
func OutputRequires(a *Agent, field string) bool {
	req, _ := a.Output["required"].([]any)
	return slices.Contains(req, any(field))
}

// DefaultOutputMax bounds a handler result when the class sets no payload.max: one SQS
// message (1 MiB). A larger answer is a defect of the handler, refused as HandlerOutputInvalid.
const DefaultOutputMax = 1 << 20

// OutputMaxBytes is the largest handler result a accepts: payload.max, else DefaultOutputMax.
func (a *Agent) OutputMaxBytes() int64 {
	if a.MaxPayload > 0 {
		return a.MaxPayload
	}
	return DefaultOutputMax
}

// IsWorkerField reports whether the worker, not the consumed detail, fills field.
func IsWorkerField(field string) bool {
	switch field {
	case FieldAgentClass, FieldTraceID, FieldTraceparent, FieldResult, FieldResultRef:
		return true
	}
	return false
}

// InputSource is one way work reaches a class, with the detail fields it can carry.
type InputSource struct {
	// What names the source for messages: `event agent.step.requested`, `workflow conversation
	// step Research`.
	What string
	// Path is the spec pointer of the source (consumes.event, or the workflow step).
	Path string
	// Fields are the top-level detail fields the source may carry; Open means any field may
	// (a workflow's execution input: fleetc writes the fields its steps need into the
	// workflow's input schema).
	Fields []string
	Open   bool
}

// InputSources lists every way work reaches a: its consumed event and each workflow step that
// dispatches to it. A fan-out item carries only what its ItemSelector (or BatchInput) builds.
func InputSources(a *Agent, workflows []*Workflow) []InputSource {
	var out []InputSource
	if a.Consumes != nil && a.Consumes.Event != nil {
		ev := a.Consumes.Event
		props, _ := ev.Detail["properties"].(map[string]any)
		var fields []string
		for k := range props {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		out = append(out, InputSource{What: "event " + ev.DetailType, Path: a.Path + "/consumes/event", Fields: fields})
	}
	for _, w := range workflows {
		for _, st := range w.Steps {
			if st.Agent != a {
				continue
			}
			src := InputSource{What: "workflow " + w.Name + " step " + st.Name, Path: st.Path}
			switch {
			case st.FanOut == nil:
				src.Open = true
			case st.FanOut.BatchInputBytes > 0:
				src.Fields = []string{"BatchInput", "Items"}
			default:
				src.Fields = FanOutItemFields(a)
			}
			out = append(out, src)
		}
	}
	return out
}

// FanOutItemFields are the fields of a fan-out child's input (the Distributed Map's
// ItemSelector): the item, its index, trace_id and a FIFO class's group field.
func FanOutItemFields(a *Agent) []string {
	f := []string{"index", "item", FieldTraceID}
	if a.FIFO && a.GroupBy != "" && !slices.Contains(f, a.GroupBy) {
		f = append(f, a.GroupBy)
	}
	slices.Sort(f)
	return f
}

// WorkflowCarried is, for a workflow step's class, the required fields of its emitted events
// that only the execution input can provide (neither worker fields nor fields the class's
// output requires): the workflow's input schema requires them.
func WorkflowCarried(a *Agent) []string {
	var out []string
	for _, e := range a.Emits {
		for _, r := range EmitDetail(e).Required {
			if !IsWorkerField(r) && !OutputRequires(a, r) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}
