package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/fleetc/fleetc/compiler/asl"
	"github.com/fleetc/fleetc/internal/genjson"
)

// formatFirst matches States.Format('…', $.path, …), the only intrinsic fleetc's state
// machines use (for MessageGroupId), capturing its first path.
var formatFirst = regexp.MustCompile(`^States\.Format\('[^']*'\s*,\s*(\$[^,)]*)`)

// EmulatorDefinition rewrites a generated ASL definition for kumo, which resolves neither
// intrinsic functions nor, in a Task's Parameters, any context-object field but
// $$.Task.Token. In every agent-step task message: execution_id is the task token (unique per
// dispatch, so the worker's idempotency key stays unique per step), state is the state's
// name as a constant, and entered_time is dropped (the step gets its own step.max);
// States.Format('…', $.x, …) becomes $.x. It returns the new definition and what it changed,
// sorted. The definition AWS gets is not touched: this is for the override's copy only.
func EmulatorDefinition(definition []byte) ([]byte, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(definition))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("deploy: state machine definition: %w", err)
	}
	changed := map[string]bool{}
	rewriteStates(doc, changed)
	out, err := genjson.Encode(doc) // the generated files' form (keys sorted: the copy went through a map)
	if err != nil {
		return nil, nil, err
	}
	var what []string
	for k := range changed {
		what = append(what, k)
	}
	sort.Strings(what)
	return out, what, nil
}

// rewriteStates rewrites every state of a States map, nested Map processors included.
func rewriteStates(node map[string]any, changed map[string]bool) {
	states, _ := node["States"].(map[string]any)
	for name, raw := range states {
		st, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		for _, key := range []string{"ItemProcessor", "Iterator"} {
			if p, ok := st[key].(map[string]any); ok {
				rewriteStates(p, changed)
			}
		}
		if st["Type"] != "Task" || st["Resource"] != asl.Resource { // only the agent steps' SQS dispatch
			continue
		}
		params, _ := st["Parameters"].(map[string]any)
		if params == nil {
			continue
		}
		if body, ok := params["MessageBody"].(map[string]any); ok {
			if _, ok := body["execution_id.$"]; ok {
				body["execution_id.$"] = "$$.Task.Token"
				changed["execution_id is the task token"] = true
			}
			if _, ok := body["state.$"]; ok {
				delete(body, "state.$")
				body["state"] = name
				changed["state is the state's name"] = true
			}
			if _, ok := body["entered_time.$"]; ok {
				delete(body, "entered_time.$")
				changed["entered_time dropped (the step gets its step.max)"] = true
			}
		}
		for k, v := range params {
			s, ok := v.(string)
			if !strings.HasSuffix(k, ".$") || !ok {
				continue
			}
			if m := formatFirst.FindStringSubmatch(s); m != nil {
				params[k] = strings.TrimSpace(m[1])
				changed["States.Format('…', $.x, …) is $.x (kumo drops MessageGroupId anyway)"] = true
			}
		}
	}
}

// templatePath returns the file a `templatefile("${path.module}/../REL", {...})` definition
// reads, relative to the output root ("statemachines/x.asl.json"), and the expression's
// source with REL replaced by repl; ok is false for any other expression.
func templatePath(r *block, attr string, repl string) (path, expr string, ok bool) {
	a, found := r.Attr(attr)
	if !found || !strings.HasPrefix(a.Src, "templatefile(") || len(a.Inputs) != 1 || a.Inputs[0].Func != "templatefile" {
		return "", "", false
	}
	in := a.Inputs[0]
	return in.File, a.Src[:in.Span.Start] + "/" + repl + a.Src[in.Span.End:], true
}
