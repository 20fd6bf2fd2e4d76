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
		Explain: `fleet-worker fills each declared property of an emitted detail by one rule
(docs/concepts.md "Completion events"): worker fields (agent_class, trace_id, traceparent, result or
result_ref), else the handler result's property when agents.<class>.output declares it,
else the consumed detail's. A detail that breaks the event's schema is never published
(EventContractViolation). Check: each required field is a worker field the schema allows,
required by the output (optional there warns unless always carried), or declared in the
consumed event (optional warns) and every fan-out item; never result or result_ref alone.
An output type that cannot fill the event's is an error; a result or carried value with
looser bounds than the event's (maxLength, maximum, enum...) warns, naming both schemas.
Fix: declare and require the field in the output or the consumed event, or drop it from
required (anyOf [{required: [result]}, {required: [result_ref]}]).`,
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
			plan := ir.EmitDetailOf(a, e)
			for _, field := range plan.Required {
				checkRequiredField(r, a, e, plan, field, sources, at)
			}
			checkFilledValues(f, r, a, e, plan, at)
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
	if declared, required := outputCovers(a, field); required {
		return // every valid result carries it (its type is checked with the other filled values)
	} else if declared && !carriedEverywhere(a, field, sources) {
		r.Warn(spec.Pointer("agents", a.Name, "output", "properties", field), lead+", which the class's output declares but does not require",
			fmt.Sprintf("A result without %s (and no carried value) makes %s break its contract: the step is dead-lettered (EventContractViolation). Add %s to agents.%s.output.required.", field, e.DetailType, field, a.Name))
		return
	} else if declared {
		return // the consumed detail carries it when the result does not
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

// outputCovers reports how a's output fills field: declared (the result may carry it) and
// required (every valid result carries it).
func outputCovers(a *ir.Agent, field string) (declared, required bool) {
	_, declared = ir.OutputProperties(a)[field]
	return declared, declared && ir.OutputRequires(a, field)
}

// carriedEverywhere reports whether every input source of a carries field for sure (the
// consumed event requires it; a workflow's input schema requires what its steps need).
func carriedEverywhere(a *ir.Agent, field string, sources []ir.InputSource) bool {
	for _, src := range sources {
		if src.Open {
			continue
		}
		if !slices.Contains(src.Fields, field) {
			return false
		}
		if ev := a.Consumes; ev != nil && ev.Event != nil && src.Path == a.Path+"/consumes/event" && !requires(ev.Event, field) {
			return false
		}
	}
	return true
}

// checkFilledValues holds what fills each declared property of e's detail to that property's
// schema: a result property of an incompatible type is an error (no valid result fits the
// event), and a source whose bounds are looser than the target's is a warning (a valid input
// or result can still break the event at run time, EventContractViolation).
func checkFilledValues(f *ir.Fleet, r *Reporter, a *ir.Agent, e *ir.Event, plan ir.DetailPlan, at string) {
	dst, _ := e.Detail["properties"].(map[string]any)
	outProps := ir.OutputProperties(a)
	var consumed map[string]any
	if c := a.Consumes; c != nil && c.Event != nil {
		consumed, _ = c.Event.Detail["properties"].(map[string]any)
	}
	for _, field := range plan.Carry {
		target, _ := dst[field].(map[string]any)
		targetAt := spec.Pointer("events", e.DetailType, "detail", "properties", field)
		if slices.Contains(plan.FromOutput, field) {
			src, _ := outProps[field].(map[string]any)
			srcAt := spec.Pointer("agents", a.Name, "output", "properties", field)
			if out, in := schemaTypes(src), schemaTypes(target); len(out) > 0 && len(in) > 0 && !typesOverlap(out, in) {
				r.Add(srcAt, fmt.Sprintf("class %s's output declares %q as %s, but %s (%s) declares it as %s: no result can fill it",
					a.Name, field, strings.Join(out, " or "), e.DetailType, position(f, targetAt), strings.Join(in, " or ")),
					fmt.Sprintf("The worker copies the result's %s into every %s it emits. Make the two types agree (an integer fills a number; nothing else converts).", field, e.DetailType))
				continue
			}
			if why := looserBounds(src, target); why != "" {
				r.Warn(srcAt, fmt.Sprintf("class %s's output %q %s than %s's (%s)", a.Name, field, why, e.DetailType, position(f, targetAt)),
					fmt.Sprintf("A result that fits agents.%s.output can still break %s's contract; the step is then dead-lettered (EventContractViolation). Give agents.%s.output.properties.%s the same bounds.", a.Name, e.DetailType, a.Name, field))
			}
			if _, required := outputCovers(a, field); required {
				continue // the carried value never fills it
			}
		}
		src, ok := consumed[field].(map[string]any)
		if !ok {
			continue
		}
		if why := looserBounds(src, target); why != "" {
			srcAt := spec.Pointer("events", a.Consumes.Event.DetailType, "detail", "properties", field)
			r.Warn(at, fmt.Sprintf("class %s carries %q from %s (%s), whose value %s than %s's (%s)",
				a.Name, field, a.Consumes.Event.DetailType, position(f, srcAt), why, e.DetailType, position(f, targetAt)),
				fmt.Sprintf("A message that fits %s can carry a value that breaks %s's contract; the step is then dead-lettered (EventContractViolation). Give events.%s.detail.properties.%s the same bounds.",
					a.Consumes.Event.DetailType, e.DetailType, a.Consumes.Event.DetailType, field))
		}
	}
}

// schemaTypes is a schema's "type" as a sorted list (nil when it says none).
func schemaTypes(s map[string]any) []string {
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, x := range t {
			if v, ok := x.(string); ok {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// typesOverlap reports whether some value of a type in from is accepted by a type in to.
func typesOverlap(from, to []string) bool {
	for _, a := range from {
		for _, b := range to {
			if a == b || a == "integer" && b == "number" || a == "number" && b == "integer" {
				return true
			}
		}
	}
	return false
}

// looserBounds says how src admits values that target refuses, for the bounds a schema
// usually sets (lengths, ranges, item counts, enums); "" when src is as tight.
func looserBounds(src, target map[string]any) string {
	for _, b := range []struct {
		kw    string
		upper bool
	}{{"maxLength", true}, {"maxItems", true}, {"maximum", true}, {"minLength", false}, {"minItems", false}, {"minimum", false}} {
		t, ok := number(target[b.kw])
		if !ok {
			continue
		}
		s, has := number(src[b.kw])
		switch {
		case !has:
			return fmt.Sprintf("has no %s, looser", b.kw)
		case b.upper && s > t || !b.upper && s < t:
			return fmt.Sprintf("has %s %v, looser", b.kw, s)
		}
	}
	if te, ok := target["enum"].([]any); ok {
		se, has := src["enum"].([]any)
		if !has {
			return "has no enum, looser"
		}
		for _, v := range se {
			if !slices.ContainsFunc(te, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
				return fmt.Sprintf("admits %v, looser", v)
			}
		}
	}
	return ""
}

// position is "line L:C" of a spec path, or the path itself for fleets built in code.
func position(f *ir.Fleet, path string) string {
	name := strings.TrimPrefix(strings.ReplaceAll(path, "/", "."), ".")
	if f.Index == nil {
		return name
	}
	s := f.Index.Subject(path)
	return fmt.Sprintf("%s at line %d:%d", name, s.Start.Line, s.Start.Column)
}
