package spec

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetc/fleetc/spec/diag"
)

// Limits on what one spec may ask of fleetc. A pull request's spec may come from a fork, so
// these bound the work an untrusted file can cause. Each is far above what a real fleet
// needs (the reference fleet has 2 events of ~20 values, 3 levels deep; the 1,000-class
// benchmark fleet stays inside all of them), and low enough that the worst accepted detail
// schemas (12 events of 1,600 values, 18 levels deep) validate and build in about 2 s and
// 140 MB on a 2-core machine. Before these limits, a 1.4 MB spec whose event detail nested
// objects and arrays 14 levels deep took 6.5 s and 0.9 GB.
const (
	MaxDetailDepth   = 24     // YAML levels inside one event's detail schema (about 10 nested objects or arrays)
	MaxDetailValues  = 5_000  // values in one event's detail schema
	MaxEventValues   = 20_000 // values in all detail schemas together
	MaxEvents        = 2_000
	MaxAgents        = 2_000
	MaxModels        = 500
	MaxWorkflows     = 500
	MaxWorkflowSteps = 1_000 // per workflow; rule S005 (execution history) refuses real workflows far below it
)

// checkLimits reports every limit the decoded document exceeds, at the offending part.
func checkLimits(doc any, idx *Index) diag.Diagnostics {
	var ds diag.Diagnostics
	root, _ := doc.(map[string]any)
	over := func(path, what string, n, limit int) {
		d := ds.Errorf("P011", path, "%s: %d, over fleetc's limit of %d", what, n, limit)
		d.Detail = "fleetc bounds the work one spec can cause (specs in pull requests may be untrusted); real fleets stay far below this. Split the fleet or simplify the schema."
		d.Subject = idx.Subject(path)
	}
	for _, c := range []struct {
		key   string
		what  string
		limit int
	}{
		{"events", "events", MaxEvents},
		{"agents", "agent classes", MaxAgents},
		{"models", "model policies", MaxModels},
		{"workflows", "workflows", MaxWorkflows},
	} {
		if m, ok := root[c.key].(map[string]any); ok && len(m) > c.limit {
			over("/"+c.key, c.what, len(m), c.limit)
		}
	}
	// Every contract schema the spec writes (event details, handler outputs) is measured the
	// same way: the same per-schema limits, one total.
	total := 0
	for _, c := range contractSchemas(root) {
		n, depth := measure(c.schema, 0)
		total += n
		if n > MaxDetailValues {
			over(c.path, c.what+": values in the "+c.noun, n, MaxDetailValues)
		}
		if depth > MaxDetailDepth {
			over(c.path, c.what+": nesting depth of the "+c.noun, depth, MaxDetailDepth)
		}
	}
	if total > MaxEventValues {
		over("/events", "values in all event detail and handler output schemas", total, MaxEventValues)
	}
	workflows, _ := root["workflows"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(workflows)) {
		w, _ := workflows[name].(map[string]any)
		if steps, ok := w["steps"].([]any); ok && len(steps) > MaxWorkflowSteps {
			over(Pointer("workflows", name, "steps"), "workflow "+name+": steps", len(steps), MaxWorkflowSteps)
		}
	}
	return ds
}

// contractSchema is one JSON Schema written in the spec: an event's detail or a class's output.
type contractSchema struct {
	path, what, noun string
	schema           any
}

// contractSchemas lists the detail schema of every event and the output schema of every agent
// class, in name order.
func contractSchemas(root map[string]any) []contractSchema {
	var out []contractSchema
	for _, c := range []struct{ collection, field, kind, noun string }{
		{"events", "detail", "event %s", "detail schema"},
		{"agents", "output", "class %s", "output schema"},
	} {
		parts, _ := root[c.collection].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(parts)) {
			part, _ := parts[name].(map[string]any)
			if schema, ok := part[c.field]; ok {
				out = append(out, contractSchema{path: Pointer(c.collection, name, c.field), what: fmt.Sprintf(c.kind, name), noun: c.noun, schema: schema})
			}
		}
	}
	return out
}

// measure counts the values of a decoded YAML value and its nesting depth.
func measure(v any, depth int) (values, maxDepth int) {
	values, maxDepth = 1, depth
	var children []any
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			children = append(children, c)
		}
	case []any:
		children = x
	}
	for _, c := range children {
		n, d := measure(c, depth+1)
		values += n
		maxDepth = max(maxDepth, d)
	}
	return values, maxDepth
}
