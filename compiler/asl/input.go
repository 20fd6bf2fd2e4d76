package asl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/asl/refpath"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// The execution input of a workflow is a contract too: every agent step reads $.trace_id, a
// FIFO step its group field, a fan-out its items, and a path that is missing fails the
// execution with States.Runtime, which no Catch can handle. GenerateInputs writes it beside
// each state machine:
//
//	statemachines/<workflow>.input.schema.json   JSON Schema (draft-07) of StartExecution's input
//	statemachines/<workflow>.input.example.json  an input that satisfies it
//
// Besides what the states read, the schema requires the fields the steps' completion events
// carry over from their input (ir.WorkflowCarried), with the events' own property schemas,
// and the idempotency.key fields of each step's class, which the worker reads from the
// task's detail (the state input) and dead-letters the step without (BadIdempotencyKey).

// InputSchemaDraft is the $schema of the generated input schemas.
const InputSchemaDraft = "http://json-schema.org/draft-07/schema#"

// InputSchemaPath and InputExamplePath are the artifact paths of a workflow's input contract.
func InputSchemaPath(w *ir.Workflow) string { return "statemachines/" + w.Name + ".input.schema.json" }
func InputExamplePath(w *ir.Workflow) string {
	return "statemachines/" + w.Name + ".input.example.json"
}

// GenerateInputs returns the input schema and example of every workflow with steps.
func GenerateInputs(f *ir.Fleet) ([]artifact.File, diag.Diagnostics) {
	var files []artifact.File
	var ds diag.Diagnostics
	for _, w := range f.Workflows {
		if len(w.Steps) == 0 {
			continue
		}
		schema, example := InputContract(w)
		sb, err := encode(schema)
		if err == nil {
			var eb []byte
			if eb, err = encode(example); err == nil {
				files = append(files, artifact.File{Path: InputSchemaPath(w), Bytes: sb}, artifact.File{Path: InputExamplePath(w), Bytes: eb})
				continue
			}
		}
		ds.Errorf("S000", w.Path, "workflow %q: cannot encode its input schema: %v", w.Name, err)
	}
	if f.Index != nil {
		f.Index.Locate(ds)
	}
	return files, ds.Sorted()
}

// inputField is one top-level field of the execution input.
type inputField struct {
	schema  map[string]any
	example any
	why     []string // which states read it, for the description
}

// InputContract returns the input schema of w and an example input.
func InputContract(w *ir.Workflow) (schema, example map[string]any) {
	fields := fieldsRead(w)
	props := map[string]any{
		"payload_ref": map[string]any{
			"type":        "object",
			"description": "Optional claim-check reference to a large input in S3; travels to every step inside its detail.",
			"required":    []any{"type", "bucket", "key"},
			"properties": map[string]any{
				"type": map[string]any{"enum": []any{"s3"}}, "bucket": map[string]any{"type": "string"}, "key": map[string]any{"type": "string"},
			},
		},
		"steps": map[string]any{
			"type":        "object",
			"description": "Written by the workflow: each step's result lands at steps.<State>. Omit it.",
		},
	}
	var required []any
	example = map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		fd := fields[name]
		s := map[string]any{}
		for k, v := range fd.schema {
			s[k] = v
		}
		s["description"] = "Read by the state machine: " + strings.Join(fd.why, "; ") + "."
		props[name] = s
		required = append(required, name)
		example[name] = fd.example
	}
	schema = map[string]any{
		"$schema":     InputSchemaDraft,
		"title":       w.StateMachineName + " execution input",
		"description": fmt.Sprintf("The input of StartExecution for workflow %s. A missing required field fails the execution with States.Runtime, which the states' Catch does not handle.", w.Name),
		"type":        "object",
		"required":    required,
		"properties":  props,
	}
	return schema, example
}

// inputFields are the execution input's fields the states read, by name.
type inputFields map[string]*inputField

// need records a field the states read; a carried field's schema (the emitted event's
// contract) replaces the looser one a group key alone would get.
func (fields inputFields) need(name string, schema map[string]any, example any, why string, contract bool) {
	fd := fields[name]
	if fd == nil {
		fd = &inputField{schema: schema, example: example}
		fields[name] = fd
	} else if contract {
		fd.schema, fd.example = schema, example
	}
	if !slices.Contains(fd.why, why) {
		fd.why = append(fd.why, why)
	}
}

// fieldsRead is every field of the execution input that w's states read, and why: the
// trace id, FIFO group keys, fan-out items, carried fields and idempotency key fields.
func fieldsRead(w *ir.Workflow) inputFields {
	fields := inputFields{}
	for _, st := range w.Steps {
		a := st.Agent
		fields.need(ir.FieldTraceID, map[string]any{"type": "string", "minLength": 1}, "trace-0001",
			fmt.Sprintf("%s sends it as the task's trace_id", st.Name), false)
		if a == nil {
			continue // an approval carries only trace_id
		}
		if a.FIFO && a.GroupBy != "" {
			fields.need(a.GroupBy, map[string]any{"type": []any{"string", "integer"}}, "group-0001",
				fmt.Sprintf("%s uses it as the SQS MessageGroupId of %s", st.Name, a.Queue.Name), false)
		}
		if st.FanOut != nil {
			head, nested := itemsPath(st.FanOut.Items)
			if head != "" {
				fields.need(head, nested, exampleOf(nested), fmt.Sprintf("%s fans out over %s", st.Name, st.FanOut.Items), false)
			}
			continue // children see only their item: nothing more is carried from the input
		}
		for _, name := range ir.WorkflowCarried(a) {
			ps, ex := eventProperty(a.Emits, name)
			fields.need(name, ps, ex, fmt.Sprintf("%s's completion events carry it over", st.Name), true)
		}
		// The worker builds a non-idempotent class's key from the task's detail, which is this
		// state's input: a key field missing there dead-letters the step (BadIdempotencyKey).
		for _, name := range a.Idempotency.Key {
			ps, ex := keyProperty(a, name)
			fields.need(name, ps, ex, fmt.Sprintf("%s's class %s builds its idempotency key from it", st.Name, a.Name), false)
		}
	}
	return fields
}

// itemsPath turns a fan-out's ItemsPath ($.a.b, $['a'].b) into its top-level field and the
// schema of that field (an array at the end of the path). A path through an array index
// gives "" and leaves the field unchecked.
func itemsPath(path string) (string, map[string]any) {
	segs, err := refpath.Parse(path)
	if err != nil || len(segs) == 0 || slices.ContainsFunc(segs, func(s refpath.Segment) bool { return !s.Field }) {
		return "", nil
	}
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.Name
	}
	s := map[string]any{"type": "array"}
	for i := len(parts) - 1; i > 0; i-- {
		s = map[string]any{"type": "object", "required": []any{parts[i]}, "properties": map[string]any{parts[i]: s}}
	}
	return parts[0], s
}

// keyProperty is the schema of idempotency key field name: the consumed event's declaration
// when the class has one, else any non-empty string or integer (idem.Key refuses a missing,
// null or empty value).
func keyProperty(a *ir.Agent, name string) (map[string]any, any) {
	if c := a.Consumes; c != nil && c.Event != nil {
		if props, _ := c.Event.Detail["properties"].(map[string]any); props[name] != nil {
			return eventProperty([]*ir.Event{c.Event}, name)
		}
	}
	s := map[string]any{"type": []any{"string", "integer"}, "minLength": 1}
	return s, exampleOf(s)
}

// eventProperty is the schema events give field name (the first declaration, by event
// order), or any value when none declares it or it holds a $ref that only resolves inside
// the event's schema.
func eventProperty(events []*ir.Event, name string) (map[string]any, any) {
	for _, e := range events {
		props, _ := e.Detail["properties"].(map[string]any)
		ps, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		raw, err := json.Marshal(ps)
		if err != nil || bytes.Contains(raw, []byte(`"$ref"`)) {
			return map[string]any{}, "example"
		}
		var cp map[string]any
		_ = json.Unmarshal(raw, &cp)
		return cp, exampleOf(cp)
	}
	return map[string]any{}, "example"
}

// exampleOf is a simple value for schema: const, the first enum value, or a value of its
// (first) type. The build's tests check every example against its schema.
func exampleOf(s map[string]any) any {
	if v, ok := s["const"]; ok {
		return v
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	t := s["type"]
	if ts, ok := t.([]any); ok && len(ts) > 0 {
		t = ts[0]
	}
	switch t {
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, ok := r.(string); ok {
				ps, _ := props[name].(map[string]any)
				out[name] = exampleOf(ps)
			}
		}
		return out
	case "null":
		return nil
	}
	ex := "example"
	if n, ok := s["minLength"].(float64); ok && int(n) > len(ex) {
		ex += strings.Repeat("x", int(n)-len(ex))
	}
	return ex
}
