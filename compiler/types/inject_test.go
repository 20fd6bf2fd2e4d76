package types_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/types"
)

// A spec may come from a fork, and `fleetc types` output is imported by handler code: spec
// text must never become code. The review that found it (issue #32) ran a Go init(), and
// created marker files on importing the Python module and on loading the TypeScript one.

// hostile is one spec's worth of text chosen by an attacker.
type hostile struct {
	class, prop, desc, enum string
	// recordOnly puts desc only where a payload could run before the fix (the record's
	// description and the detail type, comments at the top level); everywhere else there is
	// ordinary text, so that nothing else breaks the file first.
	recordOnly bool
}

// markerName is the file a payload creates when it runs; each run checks it is absent.
const markerName = "INJECTED"

// attacks are the seed corpus: the review's payloads, ordinary text that broke the output,
// and names that break identifiers or tags.
var attacks = []hostile{
	{"coder", "task", "ok\nfunc init() { panic(\"injected Go ran\") }\n//", "a", true},
	{"coder", "task", "ok\nimport pathlib; pathlib.Path('" + markerName + "').write_text('x')\n#", "a", true},
	{"coder", "task", "ok */ declare const require: any; require('fs').writeFileSync('" + markerName + "', 'x'); /** ok", "a", true},
	{"coder", "task", "ok\r__import__('pathlib').Path('" + markerName + "').write_text('x')", "a", true},
	{"coder", "task", "ok\u2028*/ declare const require: any; require('fs').writeFileSync('" + markerName + "', 'x'); /*", "a", true},
	{"coder", "task", "ok\nfunc init() { panic(\"injected Go ran\") }\n//", "a", false},
	{"coder", "task", "ok\nimport pathlib; pathlib.Path('" + markerName + "').write_text('x')\n#", "a", false},
	{"coder", "task", "ok */ declare const require: any; require('fs').writeFileSync('" + markerName + "', 'x'); /** ok", "a", false},
	{"coder", "task", "A description\nthat runs over\n\nseveral lines, as YAML block scalars do.", "b", false},
	{"coder", "task", "NUL \x00 BOM \ufeff bidi \u202e tab\t invalid \xff end", "c", false},
	{"coder", "x\" yaml:\"y", "tag injection", "d", false},
	{"coder", "x`\nfunc init() { panic(1) }\nvar _ = `", "tag break-out", "e", false},
	{"coder", "-", "the name encoding/json skips", "f", false},
	{"coder", "a,string", "an option in the name", "g", false},
	{"coder", "", "the empty name", "h", false},
	{"coder", "snake_case", "enum values that mangle alike", "a-b", false},
	{"1st class", "9lives", "names starting with digits", "9", false},
	{"coder", "Ünïcödé", "non-ASCII names", "ﬁ", false},
	{"coder", "emoji 🚀", "a name no Go tag can hold", "🚀", false},
	{"coder", "task", "*/ */ /* /** */", "\"'`\\", false},
}

// fleetOf is a fleet whose one class consumes and produces records built from h: a record
// description, a property named h.prop (required) described by h.desc, an enum with h.enum
// and h.desc as values, a property named "snake-case" that mangles like "snake_case", and
// a nested object named h.desc.
func fleetOf(h hostile) *ir.Fleet {
	inner := h.desc
	if h.recordOnly {
		inner = "ordinary text"
	}
	prop := func() map[string]any {
		return map[string]any{"type": "string", "description": inner, "pattern": inner}
	}
	schema := map[string]any{
		"type":        "object",
		"description": h.desc,
		"properties": map[string]any{
			h.prop:       prop(),
			"snake-case": map[string]any{"type": "integer", "description": inner},
			"kind":       map[string]any{"type": "string", "enum": []any{h.enum, inner, "a_b"}},
			inner: map[string]any{"type": "object", "description": inner, "properties": map[string]any{
				inner: prop(),
			}},
		},
		"required": []any{h.prop, "kind"},
	}
	a := &ir.Agent{Name: h.class, Output: schema, Consumes: &ir.Consumes{Event: &ir.Event{DetailType: h.desc, Detail: schema}}}
	return &ir.Fleet{Name: "hostile", Agents: []*ir.Agent{a}}
}

// generate writes h's types in every language; Go may refuse a property name no Go tag
// can hold (then ok[Go] is false), nothing else may fail.
func generate(t testing.TB, h hostile) (out map[string][]byte) {
	t.Helper()
	out = map[string][]byte{}
	for _, l := range types.Langs() {
		f, err := types.Generate(fleetOf(h), l)
		if err != nil {
			if l == types.Go && strings.Contains(err.Error(), "cannot be a Go JSON field name") {
				continue
			}
			t.Fatalf("%s: %v", l, err)
		}
		out[l] = f.Bytes
	}
	return out
}

// TestAttacksAreInert hands the seed corpus to the real toolchains: the Go packages are
// built and imported by a program that runs, the TypeScript is compiled (strict) and the
// JavaScript it emits is loaded by node, the Python modules are imported; each must succeed
// and no payload may create its marker file.
func TestAttacksAreInert(t *testing.T) {
	dirs := map[string]string{}
	for _, l := range types.Langs() {
		dirs[l] = t.TempDir()
	}
	var goPkgs, tsFiles, pyMods []string
	for i, h := range attacks {
		for l, b := range generate(t, h) {
			name := fmt.Sprintf("s%d", i)
			var p string
			switch l {
			case types.Go:
				p = filepath.Join(dirs[l], name, "types.go")
				goPkgs = append(goPkgs, name)
			case types.TypeScript:
				p = filepath.Join(dirs[l], name+".ts")
				tsFiles = append(tsFiles, name+".ts")
			case types.Python:
				p = filepath.Join(dirs[l], name+".py")
				pyMods = append(pyMods, name)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	noMarker := func(t *testing.T, dir string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, markerName)); err == nil {
			t.Errorf("a payload ran: %s exists", markerName)
		}
	}
	t.Run(types.Go, func(t *testing.T) {
		gobin := requireTool(t, "go")
		dir := dirs[types.Go]
		var main strings.Builder
		main.WriteString("package main\n\nimport (\n")
		for _, p := range goPkgs {
			fmt.Fprintf(&main, "\t_ %q\n", "example.com/hostile/"+p)
		}
		main.WriteString(")\n\nfunc main() {}\n")
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, gobin, "mod", "init", "example.com/hostile")
		run(t, dir, gobin, "vet", "./...")
		run(t, dir, gobin, "run", ".")
		noMarker(t, dir)
	})
	t.Run(types.TypeScript, func(t *testing.T) {
		tsc := findTSC(t)
		node := requireTool(t, "node")
		dir := dirs[types.TypeScript]
		run(t, dir, tsc, append([]string{"--strict", "--target", "es2020", "--module", "commonjs", "--outDir", "js"}, tsFiles...)...)
		for _, f := range tsFiles {
			run(t, dir, node, filepath.Join("js", strings.TrimSuffix(f, ".ts")+".js"))
		}
		noMarker(t, dir)
	})
	t.Run(types.Python, func(t *testing.T) {
		py := requireTool(t, "python3")
		dir := dirs[types.Python]
		for _, m := range pyMods { // one by one: a module that fails must not hide the next
			run(t, dir, py, "-c", "import "+m)
		}
		noMarker(t, dir)
	})
}

// findTSC is the TypeScript compiler tools/install.sh puts in tools/typescript, or one on
// PATH.
func findTSC(t *testing.T) string {
	root, _ := filepath.Abs("../..")
	tsc := filepath.Join(root, "tools/typescript/node_modules/.bin/tsc")
	if _, err := os.Stat(tsc); err != nil {
		tsc = requireTool(t, "tsc")
	}
	return tsc
}

// TestGoRefusesNamesNoTagCanHold: encoding/json ignores a tag name it does not accept and
// uses the field's name instead, so the Go type would read another property.
func TestGoRefusesNamesNoTagCanHold(t *testing.T) {
	for _, name := range []string{`x" yaml:"y`, "x`", "a,string", "", "emoji 🚀", `back\slash`} {
		h := hostile{"coder", name, "d", "e", false}
		if _, err := types.Generate(fleetOf(h), types.Go); err == nil || !strings.Contains(err.Error(), "cannot be a Go JSON field name") {
			t.Errorf("property %q: err = %v", name, err)
		}
	}
}
