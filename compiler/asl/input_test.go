package asl

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/verifytest"
)

// inputRefRE matches a JSONPath into the state input: $.name, or $.name['...'] / $.name.x.
var inputRefRE = regexp.MustCompile(`(^|[^$])\$\.([A-Za-z_][A-Za-z0-9_]*)`)

// Every workflow's input schema is a valid draft-07 document, its example validates, and
// every field the top-level states read from the execution input is required by it (so a
// missing path, a States.Runtime failure no Catch handles, is caught before StartExecution).
func TestInputContract(t *testing.T) {
	for _, path := range append(examples(t), "testdata/fleet.yaml") {
		f := lower(t, path)
		files, ds := GenerateInputs(f)
		if ds.HasErrors() {
			t.Fatalf("%s: %v", path, ds)
		}
		got := byPath(files)
		defs, ads := Generate(f)
		if ads.HasErrors() {
			t.Fatalf("%s: %v", path, ads)
		}
		asl := byPath(defs)
		for _, w := range f.Workflows {
			schema, example := got[InputSchemaPath(w)], got[InputExamplePath(w)]
			if schema == nil || example == nil {
				t.Fatalf("%s: workflow %s has no input schema or example", path, w.Name)
			}
			if err := verifytest.Draft07Instance(schema, example); err != nil {
				t.Errorf("%s: %v", InputSchemaPath(w), err)
			}
			var doc struct {
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(schema, &doc); err != nil {
				t.Fatal(err)
			}
			def := decode(t, asl[Path(w)])
			for name, s := range def["States"].(map[string]any) {
				st := s.(map[string]any)
				delete(st, "ItemProcessor")  // children read their item, not the execution input
				delete(st, "ResultSelector") // reads the state's result
				raw, _ := json.Marshal(st)
				for _, m := range inputRefRE.FindAllStringSubmatch(string(raw), -1) {
					if field := m[2]; field != "steps" && field != "error" && !slices.Contains(doc.Required, field) {
						t.Errorf("%s: state %s reads $.%s, which the input schema does not require (required: %v)", w.Name, name, field, doc.Required)
					}
				}
			}
			// Each required field matters: the example without it is refused.
			for _, field := range doc.Required {
				var ex map[string]any
				_ = json.Unmarshal(example, &ex)
				delete(ex, field)
				b, _ := json.Marshal(ex)
				if err := verifytest.Draft07Instance(schema, b); err == nil || !strings.Contains(err.Error(), field) {
					t.Errorf("%s: an input without %s passes the schema (%v)", w.Name, field, err)
				}
			}
		}
	}
}

// A fan-out over a nested path requires the object chain down to the array.
func TestItemsPath(t *testing.T) {
	head, s := itemsPath("$.plan.parts")
	b, _ := json.Marshal(s)
	if head != "plan" || string(b) != `{"properties":{"parts":{"type":"array"}},"required":["parts"],"type":"object"}` {
		t.Errorf("itemsPath = %q %s", head, b)
	}
	if head, _ := itemsPath("$['odd key'].parts"); head != "odd key" {
		t.Errorf("a quoted name is a field, got %q", head)
	}
	if head, _ := itemsPath("$.plan[0].parts"); head != "" {
		t.Errorf("paths through an array index are not followed, got %q", head)
	}
}

// The worker builds a non-idempotent class's key from the task's detail, which is the state
// input: every key field of a class a (non fan-out) step dispatches to is required by the
// workflow's input schema and present in its example. The research fleet's coder keys on
// [trace_id, step], and nothing but the execution input carries step.
func TestInputRequiresIdempotencyKey(t *testing.T) {
	checked := map[string]bool{}
	for _, path := range append(examples(t), "testdata/fleet.yaml") {
		f := lower(t, path)
		for _, w := range f.Workflows {
			schema, example := InputContract(w)
			required, _ := schema["required"].([]any)
			for _, st := range w.Steps {
				if st.FanOut != nil || st.Approval != nil {
					continue
				}
				for _, k := range st.Agent.Idempotency.Key {
					if !slices.Contains(required, any(k)) {
						t.Errorf("%s: workflow %s step %s: class %s keys on %q, which the input schema does not require (required: %v)", path, w.Name, st.Name, st.Agent.Name, k, required)
					}
					if _, ok := example[k]; !ok {
						t.Errorf("%s: workflow %s: the example input has no %q", path, w.Name, k)
					}
					checked[w.Name+"/"+st.Name+"/"+k] = true
				}
			}
		}
	}
	if !checked["conversation/Code/step"] {
		t.Errorf("the research fleet's Code step (class coder, key [trace_id, step]) was not checked; checked %v", checked)
	}
}
