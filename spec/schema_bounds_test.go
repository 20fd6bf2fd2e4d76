package spec

import (
	"encoding/json"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/schemas"
)

// fieldSchema compiles the subschema at ptr of the embedded fleet schema.
func fieldSchema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	raw, err := schemas.FS.ReadFile("fleet.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	if err := c.AddResource(schemaURL, strings.NewReader(string(raw))); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaURL + "#" + ptr)
	if err != nil {
		t.Fatalf("%s: %v", ptr, err)
	}
	return s
}

// Length bounds are minLength/maxLength beside an unbounded pattern, not counted repetition
// ({1,575} compiles to 575 copies of its class and cost 6 ms of every run's start-up). This
// table holds each bound at its edges, so moving one to the other form keeps what it accepts.
func TestNameLengthBoundsAtTheirEdges(t *testing.T) {
	role := "arn:aws:iam::111122223333:role/"
	for _, c := range []struct {
		ptr         string
		char        string // a character the pattern accepts anywhere
		prefix      string
		min, max    int // lengths of the whole value
		description string
	}{
		{ptr: "/properties/state/properties/idempotency_table", char: "a", min: 3, max: 255, description: "DynamoDB table name"},
		{ptr: "/properties/state/properties/jobs_table", char: "a", min: 3, max: 255, description: "DynamoDB table name"},
		{ptr: "/properties/state/properties/claim_check_bucket", char: "a", min: 3, max: 63, description: "S3 bucket name"},
		{ptr: "/definitions/agent/properties/tool/properties/notify/properties/queue", char: "a", min: 1, max: 80, description: "SQS queue name"},
		{ptr: "/properties/worker/properties/eks/properties/keda_operator_role", char: "a", prefix: role, min: len(role) + 1, max: 2048, description: "IAM RoleArn"},
	} {
		s := fieldSchema(t, c.ptr)
		value := func(n int) string { return c.prefix + strings.Repeat(c.char, n-len(c.prefix)) }
		for _, n := range []int{c.min, c.max} {
			if err := s.Validate(value(n)); err != nil {
				t.Errorf("%s (%s): %d characters refused: %v", c.ptr, c.description, n, err)
			}
		}
		for _, n := range []int{c.min - 1, c.max + 1} {
			if err := s.Validate(value(n)); err == nil {
				t.Errorf("%s (%s): %d characters accepted, want refused (bounds %d..%d)", c.ptr, c.description, n, c.min, c.max)
			}
		}
	}
}

// maxPatternInst bounds the compiled size of every pattern in fleetc's schemas: the fleet
// schema is compiled by every fleetc run, the runtime config's by every worker start, and a
// counted repetition ({1,575}) costs thousands of
// instructions where minLength/maxLength cost none.
const maxPatternInst = 400

func TestSchemaPatternsStayCheap(t *testing.T) {
	for _, file := range []string{"fleet.schema.json", "runtime-config.schema.json"} {
		t.Run(file, func(t *testing.T) { patternsStayCheap(t, file) })
	}
}

func patternsStayCheap(t *testing.T, file string) {
	raw, err := schemas.FS.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var patterns []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["pattern"].(string); ok {
				patterns = append(patterns, p)
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	if len(patterns) < 10 {
		t.Fatalf("found %d patterns; the walk is broken", len(patterns))
	}
	for _, p := range patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if n := len(prog.Inst); n > maxPatternInst {
			t.Errorf("pattern %s compiles to %d instructions (at most %d): bound the length with minLength/maxLength", p, n, maxPatternInst)
		}
		regexp.MustCompile(p)
	}
}
