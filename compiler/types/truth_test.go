package types_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	gotypes "go/types"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/types"
)

// Compiling is not enough: a generator that made every field optional, or every integer a
// float, still compiles. These tests hold each language to the schema: a required property
// is required, an optional one optional, an integer an integer (TypeScript has one number
// type, so there an integer is a number and never a string).

// truthSchema has a required and an optional property of each kind that maps to a type.
var truthSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"count":  map[string]any{"type": "integer"},
		"limit":  map[string]any{"type": "integer"},
		"ratio":  map[string]any{"type": "number"},
		"name":   map[string]any{"type": "string"},
		"done":   map[string]any{"type": "boolean"},
		"ids":    map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
		"mode":   map[string]any{"type": "string", "enum": []any{"fast", "slow"}},
		"nested": map[string]any{"type": "object", "properties": map[string]any{"depth": map[string]any{"type": "integer"}, "note": map[string]any{"type": "string"}}, "required": []any{"depth"}},
	},
	"required": []any{"count", "name", "done", "ids", "nested"},
}

func truthFleet() *ir.Fleet {
	return &ir.Fleet{Name: "truth", Agents: []*ir.Agent{{Name: "coder", Consumes: &ir.Consumes{Event: &ir.Event{DetailType: "task", Detail: truthSchema}}}}}
}

func generated(t *testing.T, lang string) []byte {
	t.Helper()
	f, err := types.Generate(truthFleet(), lang)
	if err != nil {
		t.Fatal(err)
	}
	return f.Bytes
}

// TestGoTypesStayTrue type-checks the Go file and reads each field's type and tag: a
// required property is a value without omitempty, an optional one a pointer (or slice) with
// omitempty; integers are int64, numbers float64.
func TestGoTypesStayTrue(t *testing.T) {
	b := generated(t, types.Go)
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "types.go", b, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&gotypes.Config{Importer: jsonStub{}}).Check("truthtypes", fset, []*ast.File{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fields := func(name string) map[string]string {
		obj := pkg.Scope().Lookup(name)
		if obj == nil {
			t.Fatalf("no type %s in\n%s", name, b)
		}
		st, ok := obj.Type().Underlying().(*gotypes.Struct)
		if !ok {
			t.Fatalf("%s is %s, not a struct", name, obj.Type().Underlying())
		}
		out := map[string]string{}
		for i := range st.NumFields() {
			tag := reflect.StructTag(st.Tag(i)).Get("json")
			key, opts, _ := strings.Cut(tag, ",")
			out[key] = gotypes.TypeString(st.Field(i).Type(), gotypes.RelativeTo(pkg)) + " " + opts
		}
		return out
	}
	want := map[string]string{
		"count": "int64 ", "limit": "*int64 omitempty", "ratio": "*float64 omitempty",
		"name": "string ", "done": "bool ", "ids": "[]int64 ", "mode": "*CoderInputMode omitempty",
		"nested": "CoderInputNested ",
	}
	if got := fields("CoderInput"); !reflect.DeepEqual(got, want) {
		t.Errorf("CoderInput fields (json name: type options):\n got %v\nwant %v", got, want)
	}
	if got, want := fields("CoderInputNested"), map[string]string{"depth": "int64 ", "note": "*string omitempty"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CoderInputNested:\n got %v\nwant %v", got, want)
	}
	if m := pkg.Scope().Lookup("CoderInputMode"); m == nil || m.Type().Underlying() != gotypes.Typ[gotypes.String] {
		t.Errorf("CoderInputMode: %v", m)
	}
}

// TestTypeScriptTypesStayTrue compiles objects against the generated interface: a complete
// one and one without the optional properties must compile, and each object missing a
// required property, or with a string for an integer, or a value outside the enum, must
// not (@ts-expect-error fails the compile when the error it expects does not occur).
func TestTypeScriptTypesStayTrue(t *testing.T) {
	tsc := findTSC(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "types.ts"), generated(t, types.TypeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	const full = `count: 1, limit: 2, ratio: 0.5, name: "n", done: true, ids: [1], mode: "fast", nested: { depth: 1, note: "x" }`
	const minimal = `count: 1, name: "n", done: true, ids: [1], nested: { depth: 1 }` // split at ", " below
	var src strings.Builder
	src.WriteString("import { CoderInput } from \"./types\";\n")
	n := 0
	obj := func(expectError, why, body string) {
		n++
		if expectError != "" {
			src.WriteString("// @ts-expect-error " + why + "\n")
		}
		src.WriteString("export const v" + strconv.Itoa(n) + ": CoderInput = { " + body + " };\n")
	}
	obj("", "", full)
	obj("", "", minimal)
	for _, req := range []string{"count", "name", "done", "ids", "nested"} {
		var kept []string
		for _, kv := range strings.Split(minimal, ", ") {
			if !strings.HasPrefix(kv, req+":") {
				kept = append(kept, kv)
			}
		}
		obj("x", req+" is required", strings.Join(kept, ", "))
	}
	obj("x", "nested.depth is required", `count: 1, name: "n", done: true, ids: [1], nested: {}`)
	obj("x", "count is an integer, not a string", `count: "1", name: "n", done: true, ids: [1], nested: { depth: 1 }`)
	obj("x", "ids holds integers", `count: 1, name: "n", done: true, ids: ["1"], nested: { depth: 1 }`)
	obj("x", "mode is fast or slow", minimal+`, mode: "other"`)
	if err := os.WriteFile(filepath.Join(dir, "check.ts"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, tsc, "--noEmit", "--strict", "--target", "es2020", "check.ts")
}

// TestPythonTypesStayTrue imports the module and reads each TypedDict's required and
// optional keys and its type hints.
func TestPythonTypesStayTrue(t *testing.T) {
	py := requireTool(t, "python3")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fleet_types.py"), generated(t, types.Python), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `
import json, typing, fleet_types as m
def describe(t):
    hints = typing.get_type_hints(t)
    return {"required": sorted(t.__required_keys__), "optional": sorted(t.__optional_keys__),
            "types": {k: v.__name__ if isinstance(v, type) else repr(v) for k, v in hints.items()}}
print(json.dumps({"CoderInput": describe(m.CoderInput), "CoderInputNested": describe(m.CoderInputNested),
                  "CoderInputMode": list(typing.get_args(m.CoderInputMode))}, sort_keys=True))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]any{
		"CoderInput": map[string]any{
			"required": []any{"count", "done", "ids", "name", "nested"},
			"optional": []any{"limit", "mode", "ratio"},
			"types": map[string]any{"count": "int", "limit": "int", "ratio": "float", "name": "str", "done": "bool",
				"ids": "typing.List[int]", "mode": "typing.Literal['fast', 'slow']", "nested": "CoderInputNested"},
		},
		"CoderInputNested": map[string]any{
			"required": []any{"depth"}, "optional": []any{"note"},
			"types": map[string]any{"depth": "int", "note": "str"},
		},
		"CoderInputMode": []any{"fast", "slow"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("python types:\n got %v\nwant %v", got, want)
	}
}
