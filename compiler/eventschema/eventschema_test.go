package eventschema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/spec/diag"
)

var lower = irtest.Load

var examples = irtest.Examples

// writeAll writes the backend's complete artifact set to a temporary out root and reads it back.
func writeAll(t *testing.T, files []artifact.File) string {
	t.Helper()
	set, err := artifact.NewSet(files...)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := artifact.WriteDir(dir, set); err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, dir, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var get = irtest.Dig

// checkEvents validates every schema against the draft-04 metaschema, every example against
// its schema, and the envelope fields every schema must pin.
func checkEvents(t *testing.T, f *ir.Fleet, dir string) {
	t.Helper()
	for _, e := range f.Events {
		sb, eb := read(t, dir, SchemaPath(e)), read(t, dir, ExamplePath(e))
		err := verifytest.Draft04(sb)
		verifytest.SkipIfMissing(t, err)
		if err != nil {
			t.Errorf("%s: %v", SchemaPath(e), err)
		}
		if err := verifytest.Draft04Instance(sb, eb); err != nil {
			t.Errorf("%s against %s: %v", ExamplePath(e), SchemaPath(e), err)
		}
		s := decode(t, sb)
		if s["$schema"] != Draft04 || s["title"] != e.DetailType {
			t.Errorf("%s: $schema %v title %v", SchemaPath(e), s["$schema"], s["title"])
		}
		if got := get(t, s, "properties", "detail-type", "enum"); !reflect.DeepEqual(got, []any{e.DetailType}) {
			t.Errorf("%s: detail-type enum %v", SchemaPath(e), got)
		}
		if got := get(t, s, "properties", "source", "enum"); !reflect.DeepEqual(got, []any{e.Source}) {
			t.Errorf("%s: source enum %v", SchemaPath(e), got)
		}
		if get(t, s, "properties", "time", "format") != "date-time" {
			t.Errorf("%s: time is not a date-time", SchemaPath(e))
		}
		for k := range s {
			if strings.HasPrefix(k, "x-") {
				t.Errorf("%s: non-standard keyword %s", SchemaPath(e), k)
			}
		}
		ex := decode(t, eb)
		if ex["time"] != ExampleTime || ex["id"] != ExampleID || ex["region"] != f.Region || ex["detail-type"] != e.DetailType || ex["source"] != e.Source {
			t.Errorf("%s: envelope %v", ExamplePath(e), ex)
		}
		if _, ok := ex["detail"].(map[string]any); !ok {
			t.Errorf("%s: detail is not an object", ExamplePath(e))
		}
	}
}

func TestExamples(t *testing.T) {
	for _, path := range examples(t) {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			f := lower(t, path)
			files, ds := Generate(f)
			if len(ds) != 0 {
				t.Fatalf("Generate: %v", ds)
			}
			if len(files) != 2*len(f.Events) {
				t.Fatalf("%d files for %d events", len(files), len(f.Events))
			}
			checkEvents(t, f, writeAll(t, files))
		})
	}
}

func TestTranslation(t *testing.T) {
	f := lower(t, "testdata/fleet.yaml")
	files, ds := Generate(f)
	if ds.HasErrors() || len(ds) != 0 {
		t.Fatalf("Generate: %v", ds)
	}
	dir := writeAll(t, files)
	checkEvents(t, f, dir)

	e := f.Event("order.placed")
	s := decode(t, read(t, dir, SchemaPath(e)))
	d := get(t, s, "properties", "detail")
	props := get(t, d, "properties")
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"kind", "enum"}, []any{"order"}},                     // const
		{[]any{"amount", "minimum"}, 0.0},                           // exclusiveMinimum: 0
		{[]any{"amount", "exclusiveMinimum"}, true},                 //
		{[]any{"quantity", "minimum"}, 5.0},                         // minimum 5 is stricter than > 0
		{[]any{"quantity", "exclusiveMinimum"}, nil},                //
		{[]any{"discount", "maximum"}, 100.0},                       // exclusiveMaximum: 100
		{[]any{"discount", "exclusiveMaximum"}, true},               //
		{[]any{"discount", "$comment"}, nil},                        // dropped
		{[]any{"trace_id", "examples"}, nil},                        // dropped
		{[]any{"order_id", "format"}, nil},                          // uuid is not a draft-04 format
		{[]any{"placed_at", "format"}, "date-time"},                 // kept
		{[]any{"customer", "$ref"}, "#/definitions/customer"},       // $defs → definitions
		{[]any{"lines", "items", 1, "minimum"}, 1.0},                // prefixItems → items
		{[]any{"lines", "additionalItems"}, false},                  // items: false → additionalItems
		{[]any{"anything"}, map[string]any{}},                       // true schema
		{[]any{"nothing"}, map[string]any{"not": map[string]any{}}}, // false schema
		{[]any{"sku", "pattern"}, "^[A-Z]{3}-[0-9]{4}$"},            //
	} {
		if got := get(t, props, c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("detail.properties%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	if got := get(t, d, "dependencies"); !reflect.DeepEqual(got, map[string]any{"gift": []any{"customer"}}) {
		t.Errorf("dependencies %v", got)
	}
	if _, ok := d.(map[string]any)["$defs"]; ok {
		t.Error("$defs left in the detail schema")
	}
	if _, ok := d.(map[string]any)["$schema"]; ok {
		t.Error("nested $schema left in the detail schema")
	}
	addr := get(t, s, "definitions", "customer", "properties", "address")
	if got := get(t, addr, "allOf", 0, "$ref"); got != "#/definitions/address" {
		t.Errorf("$ref with siblings: %v", addr)
	}
	if get(t, s, "definitions", "address", "type") != "object" {
		t.Error("address definition not hoisted")
	}

	ex := decode(t, read(t, dir, ExamplePath(e)))
	det := ex["detail"].(map[string]any)
	if det["kind"] != "order" || det["order_id"] != "00000000-0000-4000-8000-000000000001" || det["placed_at"] != ExampleTime {
		t.Errorf("example detail %v", det)
	}
	if v := det["amount"].(float64); v <= 0 || v > 10000 {
		t.Errorf("amount %v outside (0, 10000]", v)
	}
	if tr := det["trace_id"].(string); len(tr) < 8 {
		t.Errorf("trace_id %q shorter than minLength 8", tr)
	}
	if det["sku"] != "AAA-0000" {
		t.Errorf("sku %v, want a pattern match AAA-0000", det["sku"])
	}
	if c := det["customer"].(map[string]any); c["tier"] != "gold" || len(c["id"].(string)) < 3 {
		t.Errorf("customer %v", c)
	}
	if _, ok := det["quantity"]; ok {
		t.Error("example fills optional fields")
	}
	plain := decode(t, read(t, dir, ExamplePath(f.Event("plain.event"))))
	if n := plain["detail"].(map[string]any)["count"].(float64); n != 14 {
		t.Errorf("count %v, want 14 (≥ 10, multiple of 7)", n)
	}
}

// TestExampleMutations proves the checks bite: a generated example stripped of a required
// detail field, or carrying the wrong detail-type, fails validation against its schema.
func TestExampleMutations(t *testing.T) {
	f := lower(t, "../../examples/research-fleet/fleet.yaml")
	files, _ := Generate(f)
	dir := writeAll(t, files)
	e := f.Event("agent.step.requested")
	sb, eb := read(t, dir, SchemaPath(e)), read(t, dir, ExamplePath(e))
	if err := verifytest.Draft04Instance(sb, eb); err != nil {
		t.Fatalf("unmutated example fails: %v", err)
	}
	for name, mutate := range map[string]func(m map[string]any){
		"missing required conversation_id": func(m map[string]any) { delete(m["detail"].(map[string]any), "conversation_id") },
		"wrong detail-type":                func(m map[string]any) { m["detail-type"] = "agent.step.completed" },
		"negative step":                    func(m map[string]any) { m["detail"].(map[string]any)["step"] = -1 },
		"missing envelope time":            func(m map[string]any) { delete(m, "time") },
	} {
		m := decode(t, eb)
		mutate(m)
		b, _ := json.Marshal(m)
		if err := verifytest.Draft04Instance(sb, b); err == nil {
			t.Errorf("%s: mutated example still validates", name)
		}
	}
}

func TestRefusals(t *testing.T) {
	f := lower(t, "testdata/refused.yaml")
	files, ds := Generate(f)
	var paths []string
	for _, fl := range files {
		paths = append(paths, fl.Path)
	}
	if want := []string{"schemas/examples/ok.event.json", "schemas/ok.event.json"}; !reflect.DeepEqual(sortedCopy(paths), want) {
		t.Errorf("files %v, want %v", paths, want)
	}
	var got []string
	for _, d := range ds {
		if d.Severity != diag.Error || d.Code != Code {
			t.Errorf("unexpected %v", d)
			continue
		}
		if d.Subject == nil || d.Subject.Start.Line == 0 {
			t.Errorf("%s: no source position", d.Path)
		}
		got = append(got, d.Path)
	}
	want := []string{"/events/cond.event/detail/if", "/events/cond.event/detail/properties/tags/contains", "/events/cond.event/detail/then"}
	if !reflect.DeepEqual(sortedCopy(got), want) {
		t.Errorf("diagnostic paths %v, want %v", got, want)
	}
}

func TestUnitTranslate(t *testing.T) {
	for _, c := range []struct {
		name     string
		in, want string
		errs     int
	}{
		{"const with enum", `{"const": 2, "enum": [1, 2]}`, `{"enum": [2]}`, 0},
		{"const outside enum", `{"const": 3, "enum": [1, 2]}`, `{"enum": [3]}`, 1},
		{"exclusiveMaximum stricter", `{"maximum": 10, "exclusiveMaximum": 5}`, `{"maximum": 5, "exclusiveMaximum": true}`, 0},
		{"draft-04 boolean kept", `{"minimum": 1, "exclusiveMinimum": true}`, `{"minimum": 1, "exclusiveMinimum": true}`, 0},
		{"empty required dropped", `{"type": "object", "required": []}`, `{"type": "object"}`, 0},
		{"remote ref", `{"$ref": "https://example.com/s.json"}`, `{}`, 1},
		{"root ref", `{"items": {"$ref": "#"}}`, `{"items": {"$ref": "#/properties/detail"}}`, 0},
		{"dependentSchemas", `{"dependentSchemas": {"a": {"required": ["b"]}}}`, `{"dependencies": {"a": {"required": ["b"]}}}`, 0},
		{"not a schema", `{"properties": {"a": "string"}}`, `{"properties": {"a": {}}}`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in any
			dec := json.NewDecoder(strings.NewReader(c.in))
			dec.UseNumber()
			if err := dec.Decode(&in); err != nil {
				t.Fatal(err)
			}
			var ds diag.Diagnostics
			out := (&translator{base: "/events/x/detail", ds: &ds}).document(in)
			got, _ := json.Marshal(out.schema)
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(c.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if errs, _ := ds.Count(); errs != c.errs {
				t.Errorf("%d errors, want %d: %v", errs, c.errs, ds)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	for _, path := range append(examples(t), "testdata/fleet.yaml") {
		a, _ := Generate(lower(t, path))
		b, _ := Generate(lower(t, path))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ", path)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestBuiltInCode covers a fleet built without a source file: Go ints in the detail, no Index.
func TestBuiltInCode(t *testing.T) {
	e := &ir.Event{DetailType: "x.y", Version: 2, Source: "src", Path: "/events/x.y", Detail: map[string]any{
		"type": "object", "required": []any{"trace_id", "n"},
		"properties": map[string]any{"trace_id": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer", "exclusiveMinimum": 3}},
	}}
	files, ds := Generate(&ir.Fleet{Region: "eu-west-1", Events: []*ir.Event{e}})
	if len(ds) != 0 || len(files) != 2 {
		t.Fatalf("%d files, %v", len(files), ds)
	}
	ex := decode(t, files[1].Bytes)
	if n := ex["detail"].(map[string]any)["n"]; n != 4.0 {
		t.Errorf("n = %v, want 4 (> 3)", n)
	}
	if err := verifytest.Draft04Instance(files[0].Bytes, files[1].Bytes); err != nil {
		t.Error(err)
	}
}

// TestDraft04Locations: a value draft-04's metaschema rejects, or a $ref to nothing, is a G003
// error at the offending keyword of the spec's detail schema, not at the detail root.
func TestDraft04Locations(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name   string
		detail map[string]any
		path   string // under /events/x/detail
		msg    string
	}{
		{"negative minLength", obj("type", "object", "properties", obj("a", obj("type", "string", "minLength", -1))),
			"/properties/a/minLength", "must be >= 0"},
		{"unknown type", obj("type", "object", "properties", obj("a", obj("type", "strin"))),
			"/properties/a/type", "must be one of"},
		{"bad regex under $defs", obj("type", "object", "$defs", obj("x", obj("type", "string", "pattern", "(["))),
			"/$defs/x/pattern", "regex"},
		{"bad bound under definitions", obj("type", "object", "definitions", obj("y", obj("type", "array", "maxItems", -2))),
			"/definitions/y/maxItems", "must be >= 0"},
		{"dangling $ref", obj("type", "object", "properties", obj("a", obj("$ref", "#/$defs/missing"))),
			"/properties/a/$ref", `"#/$defs/missing" does not resolve`},
		{"dangling pointer into detail", obj("type", "object", "properties", obj("a", obj("$ref", "#/properties/nope"))),
			"/properties/a/$ref", "does not resolve"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &ir.Event{DetailType: "x", Source: "s", Path: "/events/x", Detail: c.detail}
			files, ds := Generate(&ir.Fleet{Region: "eu-west-1", Events: []*ir.Event{e}})
			if len(files) != 0 {
				t.Errorf("an invalid schema still produced %d files", len(files))
			}
			if len(ds) != 1 || ds[0].Code != "G003" || ds[0].Severity != diag.Error {
				t.Fatalf("diagnostics %v, want one G003 error", ds)
			}
			d := ds[0]
			if d.Path != "/events/x/detail"+c.path || !strings.Contains(d.Summary, c.msg) {
				t.Errorf("got %s: %s\nwant at /events/x/detail%s, containing %q", d.Path, d.Summary, c.path, c.msg)
			}
			if strings.Contains(d.Detail, "$ref") != strings.Contains(c.path, "$ref") {
				t.Errorf("the $ref hint belongs to $ref errors only: %q", d.Detail)
			}
			// A class's output schema gets the same diagnostic at the same place under output.
			a := &ir.Agent{Name: "c", Path: "/agents/c", Output: c.detail}
			files, ds = Generate(&ir.Fleet{Region: "eu-west-1", Agents: []*ir.Agent{a}})
			if len(files) != 0 || len(ds) != 1 || ds[0].Code != "G003" || ds[0].Severity != diag.Error {
				t.Fatalf("output: %d files, diagnostics %v, want one G003 error", len(files), ds)
			}
			if ds[0].Path != "/agents/c/output"+c.path || !strings.Contains(ds[0].Summary, c.msg) {
				t.Errorf("output: got %s: %s\nwant at /agents/c/output%s, containing %q", ds[0].Path, ds[0].Summary, c.path, c.msg)
			}
		})
	}
	// Keywords draft-04 cannot say are refused in outputs as in details; a valid output is quiet.
	a := &ir.Agent{Name: "c", Path: "/agents/c", Output: obj("type", "object", "if", obj("required", []any{"a"}), "then", obj("required", []any{"b"}))}
	_, ds := Generate(&ir.Fleet{Region: "eu-west-1", Agents: []*ir.Agent{a}})
	var paths []string
	for _, d := range ds {
		paths = append(paths, d.Path)
	}
	if want := []string{"/agents/c/output/if", "/agents/c/output/then"}; !reflect.DeepEqual(sortedCopy(paths), want) {
		t.Errorf("refused output keywords at %v, want %v", paths, want)
	}
	a.Output = obj("type", "object", "properties", obj("total", obj("type", "number")))
	if _, ds := Generate(&ir.Fleet{Region: "eu-west-1", Agents: []*ir.Agent{a}}); len(ds) != 0 {
		t.Errorf("valid output schema: %v", ds)
	}
	// A resolvable ref into the detail, and one to a definition: no diagnostic.
	e := &ir.Event{DetailType: "ok", Source: "s", Path: "/events/ok", Detail: obj("type", "object",
		"$defs", obj("id", obj("type", "string")),
		"properties", obj("a", obj("$ref", "#/$defs/id"), "b", obj("$ref", "#/properties/a")))}
	if files, ds := Generate(&ir.Fleet{Region: "eu-west-1", Events: []*ir.Event{e}}); len(ds) != 0 || len(files) != 2 {
		t.Errorf("valid refs: %d files, %v", len(files), ds)
	}
}

func TestCodes(t *testing.T) {
	src, err := os.ReadFile("eventschema.go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "E015") {
		t.Error("eventschema.go still mentions E015")
	}
	cs := Codes()
	if len(cs) != 3 || cs[2].ID != ApprovalCode || ApprovalCode != "G005" || len(cs[2].Explain) < 200 || Code != "G003" || cs[0].ID != Code || cs[0].Severity != "error" ||
		cs[0].Summary != "event detail schema cannot be expressed in JSON Schema draft-04" || len(cs[0].Explain) < 200 ||
		ScheduleCode != "G004" || cs[1].ID != ScheduleCode || cs[1].Severity != "error" || len(cs[1].Explain) < 200 {
		t.Errorf("Codes() = %+v", cs)
	}
	// Every diagnostic goes through Code: no other literal code in the sources.
	for _, p := range []string{"eventschema.go", "example.go"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:Errorf|Warnf)\(\s*"[A-Z]+[0-9]+"`).FindAll(b, -1) {
			t.Errorf("%s: literal code in %q", p, m)
		}
	}
}
