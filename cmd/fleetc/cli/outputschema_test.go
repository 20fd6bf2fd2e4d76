package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/schemas/output"
)

// compileOutputSchemas compiles the schemas of schemas/output by name.
func compileOutputSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	s, err := output.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJSONOutputSchemas runs every command that offers --format json, in process and
// offline, on a clean spec, one with a warning and one with an error, and holds each
// document to its schema in schemas/output: one document on stdout, format_version and
// diagnostics first, every warning and error the spec has in diagnostics (none dropped),
// and an exit code that follows the one verdict (errors fail; warnings do not without
// --strict).
func TestJSONOutputSchemas(t *testing.T) {
	schemas := compileOutputSchemas(t)
	dir := t.TempDir()
	minimal, tools := "../../../examples/minimal/fleet.yaml", "../../../examples/async-tools/fleet.yaml"
	// Without the cross-group fallback of a policy, M001 warns (and nothing else does).
	warn := func(name, path, fallback string) string {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(src), "    fallbacks: ["+fallback+"]\n", "", 1)
		if s == string(src) {
			t.Fatalf("%s: no fallback %s to remove", path, fallback)
		}
		out := filepath.Join(dir, name)
		if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		copyPrompts(t, path, dir)
		return out
	}
	warnSpec, warnTools := warn("warn.yaml", research, "sonnet-overflow"), warn("warntools.yaml", tools, "assistant-global")
	bad := "../../../compiler/ir/testdata/bad/undefined-model.yaml"
	out := func() string { return filepath.Join(t.TempDir(), "out") }
	type spec struct {
		kind string // clean, warning or error
		path string
	}
	cases := []struct {
		schema string
		args   func(spec string) []string
		specs  []spec
	}{
		{"validate", func(s string) []string { return []string{"validate", s} }, []spec{{"clean", minimal}, {"warning", warnSpec}, {"error", bad}}},
		{"build", func(s string) []string { return []string{"build", s, "-o", out()} }, []spec{{"clean", minimal}, {"warning", warnSpec}, {"error", bad}}},
		{"rules", func(string) []string { return []string{"rules"} }, []spec{{"clean", ""}}},
		{"tools", func(s string) []string { return []string{"tools", s} }, []spec{{"clean", tools}, {"warning", warnTools}, {"error", bad}}},
		{"graph", func(s string) []string { return []string{"graph", s} }, []spec{{"clean", minimal}, {"warning", warnSpec}, {"error", bad}}},
		{"capacity", func(s string) []string { return []string{"capacity", s} }, []spec{{"clean", minimal}, {"warning", warnSpec}, {"error", bad}}},
		// diff's exit code is its review's verdict (--fail-on), not the spec's: --exit-zero
		// reports only.
		{"diff", func(s string) []string { return []string{"diff", minimal, s, "--exit-zero"} }, []spec{{"clean", minimal}, {"warning", warnSpec}, {"error", bad}}},
		{"schemas-check", func(s string) []string { return []string{"schemas", "check", s, "--base-file", research} }, []spec{{"clean", research}, {"warning", warnSpec}, {"error", bad}}},
		// Offline, plan stops at the build: the error document is the part that needs no AWS.
		{"plan", func(s string) []string { return []string{"plan", s, "-o", out()} }, []spec{{"error", bad}}},
	}
	for _, tc := range cases {
		for _, sp := range tc.specs {
			t.Run(tc.schema+"/"+sp.kind, func(t *testing.T) {
				args := append(tc.args(sp.path), "--format", "json")
				code, stdout, stderr := run(t, args...)
				want := map[bool]int{true: exitInvalid, false: exitOK}[sp.kind == "error"]
				if tc.schema == "diff" {
					want = exitOK
				}
				if code != want {
					t.Errorf("fleetc %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, want, stderr)
				}
				var doc any
				dec := json.NewDecoder(strings.NewReader(stdout))
				if err := dec.Decode(&doc); err != nil {
					t.Fatalf("fleetc %s: stdout is not JSON: %v\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
				}
				if dec.More() {
					t.Errorf("stdout holds more than one document:\n%s", stdout)
				}
				if err := schemas[tc.schema].Validate(doc); err != nil {
					t.Errorf("fleetc %s: the document does not match schemas/output/%s.schema.json:\n%#v\n%s", strings.Join(args, " "), tc.schema, err, stdout)
				}
				// The schema describes every field: it rejects this document with one more.
				doc.(map[string]any)["surprise"] = true
				if schemas[tc.schema].Validate(doc) == nil {
					t.Errorf("schemas/output/%s.schema.json accepts a field it does not describe", tc.schema)
				}
				delete(doc.(map[string]any), "surprise")
				if !strings.HasPrefix(stdout, "{\n  \"format_version\": 2,\n  \"diagnostics\": [") {
					t.Errorf("the document does not open with format_version and diagnostics:\n%.200s", stdout)
				}
				severities := map[string]bool{}
				for _, d := range doc.(map[string]any)["diagnostics"].([]any) {
					severities[d.(map[string]any)["severity"].(string)] = true
				}
				switch sp.kind {
				case "clean":
					if len(severities) > 0 {
						t.Errorf("diagnostics on a clean spec: %v", severities)
					}
				case "warning":
					if !severities["warning"] || severities["error"] {
						t.Errorf("diagnostics %v, want the warning alone:\n%s", severities, stdout)
					}
				case "error":
					if !severities["error"] {
						t.Errorf("diagnostics %v, want the error:\n%s", severities, stdout)
					}
				}
			})
		}
	}
}

// TestOutputSchemasAreStrict: a schema that accepted anything would pass the test above;
// each rejects a document without diagnostics, of another version, or with a field it does
// not describe.
func TestOutputSchemasAreStrict(t *testing.T) {
	for name, s := range compileOutputSchemas(t) {
		if name == "header" {
			continue
		}
		for what, doc := range map[string]any{
			"an undescribed field": map[string]any{"format_version": 2, "diagnostics": []any{}, "surprise": true},
			"no diagnostics":       map[string]any{"format_version": 2},
			"another version":      map[string]any{"format_version": 3, "diagnostics": []any{}},
		} {
			if s.Validate(doc) == nil {
				t.Errorf("%s.schema.json accepts a document with %s", name, what)
			}
		}
	}
}

// TestWarningsNeverDropped: a command whose result has no room for diagnostics (a table, a
// drawing, a foreign tool format) still prints the spec's warnings, on stderr, and its
// stdout is the result alone. Before, capacity, graph and tools printed nothing of them.
func TestWarningsNeverDropped(t *testing.T) {
	dir := t.TempDir()
	warn := func(path, fallback string) string {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, filepath.Base(filepath.Dir(path))+".yaml")
		if err := os.WriteFile(out, []byte(strings.Replace(string(src), "    fallbacks: ["+fallback+"]\n", "", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		copyPrompts(t, path, dir)
		return out
	}
	warnSpec := warn(research, "sonnet-overflow")
	warnTools := warn("../../../examples/async-tools/fleet.yaml", "assistant-global")
	for _, args := range [][]string{
		{"capacity", warnSpec},
		{"capacity", warnSpec, "--format", "markdown"},
		{"graph", warnSpec},
		{"graph", warnSpec, "--format", "dot"},
		{"tools", warnTools, "--format", "openai"},
		{"tools", warnTools, "--format", "mcp"},
		{"schemas", "check", warnSpec, "--base-file", research},
	} {
		code, stdout, stderr := run(t, args...)
		if code != exitOK || !strings.Contains(stderr, "M001: warning:") || !strings.Contains(stderr, "0 error(s), 1 warning(s)") {
			t.Errorf("fleetc %s: exit %d, stderr lacks the warning:\n%s", strings.Join(args, " "), code, stderr)
		}
		if strings.Contains(stdout, "M001") {
			t.Errorf("fleetc %s: the warning is in the result on stdout:\n%s", strings.Join(args, " "), stdout)
		}
	}
}

// copyPrompts copies the prompts/ a spec names (rule P014 checks they exist beside it) from
// spec's directory into dir, where a test writes its copy of the spec.
func copyPrompts(t *testing.T, spec, dir string) {
	t.Helper()
	src := filepath.Join(filepath.Dir(spec), "prompts")
	if _, err := os.Stat(src); err != nil {
		return
	}
	if err := os.CopyFS(filepath.Join(dir, "prompts"), os.DirFS(src)); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
}
