package schemas_test

import (
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/schemas"
	"github.com/fleetc/fleetc/spec"
)

const schemaURL = "https://fleetc.dev/schemas/fleet.schema.json"

// The page has a section for every top-level part and a table row for every field the
// schema names anywhere, read from the schema independently of the generator.
func TestSpecReferenceCoversTheSchema(t *testing.T) {
	page, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	raw, _ := schemas.FS.ReadFile("fleet.schema.json")
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for k := range doc["properties"].(map[string]any) {
		if !strings.Contains(string(page), "\n## `"+k+"`\n") {
			t.Errorf("docs/spec-reference.md has no section for top-level %q", k)
		}
	}
	fields := map[string]bool{}
	walkSchema("#", doc, func(ptr string, s map[string]any) {
		if props, ok := s["properties"].(map[string]any); ok && ptr != "#" {
			for k := range props {
				fields[k] = true
			}
		}
	})
	var missing []string
	for k := range fields {
		if !strings.Contains(string(page), "\n| `"+k+"` |") {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(fields) < 100 || len(missing) > 0 {
		t.Errorf("%d fields; docs/spec-reference.md has no row for %v", len(fields), missing)
	}
}

// Every `examples` value in the schema is valid where it stands, so the page shows no
// example fleet.yaml would refuse.
func TestSchemaExamplesValidate(t *testing.T) {
	raw, _ := schemas.FS.ReadFile("fleet.schema.json")
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	c.AssertFormat = true
	// The formats spec.Schema checks, by the parsers fleetc reads the values with.
	c.Formats["duration"] = func(v any) bool { s, _ := v.(string); _, err := spec.ParseDuration(s); return err == nil }
	c.Formats["size"] = func(v any) bool { s, _ := v.(string); _, err := spec.ParseSize(s); return err == nil }
	if err := c.AddResource(schemaURL, strings.NewReader(string(raw))); err != nil {
		t.Fatal(err)
	}
	n := 0
	walkSchema("#", doc, func(ptr string, s map[string]any) {
		ex, ok := s["examples"].([]any)
		if !ok {
			return
		}
		sch, err := c.Compile(schemaURL + ptr)
		if err != nil {
			t.Fatalf("%s: %v", ptr, err)
		}
		for _, e := range ex {
			n++
			if err := sch.Validate(e); err != nil {
				t.Errorf("example %v at %s is invalid: %v", e, ptr, err)
			}
		}
	})
	if n < 20 {
		t.Errorf("only %d examples in the schema", n)
	}
}

// walkSchema calls fn on every subschema of s reached through schema keywords (not through
// examples, enums or consts), with its JSON pointer.
func walkSchema(ptr string, s map[string]any, fn func(string, map[string]any)) {
	fn(ptr, s)
	for _, kw := range []string{"properties", "definitions"} {
		if m, ok := s[kw].(map[string]any); ok {
			for k, v := range m {
				if sub, ok := v.(map[string]any); ok {
					walkSchema(ptr+"/"+kw+"/"+k, sub, fn)
				}
			}
		}
	}
	for _, kw := range []string{"additionalProperties", "items", "propertyNames", "not"} {
		if sub, ok := s[kw].(map[string]any); ok {
			walkSchema(ptr+"/"+kw, sub, fn)
		}
	}
	for _, kw := range []string{"oneOf", "anyOf", "allOf"} {
		if list, ok := s[kw].([]any); ok {
			for i, v := range list {
				if sub, ok := v.(map[string]any); ok {
					walkSchema(ptr+"/"+kw+"/"+strconv.Itoa(i), sub, fn)
				}
			}
		}
	}
}

// A list whose items are one of several definitions (as a workflow's steps may become)
// gets a section per definition, and the list's type links to each.
func TestSpecReferenceAlternatives(t *testing.T) {
	root, err := decodeOrdered([]byte(`{"properties": {"steps": {"type": "array", "items": {"oneOf": [
		{"$ref": "#/definitions/task"}, {"$ref": "#/definitions/approval"}]}}},
		"definitions": {"task": {"type": "object", "properties": {"agent": {"type": "string"}}},
		"approval": {"type": "object", "properties": {"approvers": {"type": "array", "items": {"type": "string"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := newReference(root.(*object), nil)
	if err := r.plan(); err != nil {
		t.Fatal(err)
	}
	page := r.parts()
	for _, want := range []string{
		"### `steps[] (task)`", "| `agent` | string |",
		"### `steps[] (approval)`", "| `approvers` | list of string |",
		"list of [object](#steps-task) or [object](#steps-approval)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in:\n%s", want, page)
		}
	}
}
