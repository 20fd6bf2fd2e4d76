package spec

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSchemaMatchesGoTypes proves fleet.schema.json and the Go types describe the same
// fields, recursively, so neither can drift from the other.
func TestSchemaMatchesGoTypes(t *testing.T) {
	_, doc, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	compareType(t, "", reflect.TypeOf(Fleet{}), doc, doc)
}

func resolve(doc, node map[string]any) map[string]any {
	if ref, ok := node["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		return doc["definitions"].(map[string]any)[name].(map[string]any)
	}
	return node
}

func compareType(t *testing.T, path string, typ reflect.Type, node, doc map[string]any) {
	t.Helper()
	node = resolve(doc, node)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ {
	case reflect.TypeOf(Duration{}):
		if node["format"] != "duration" {
			t.Errorf("%s: Go Duration but schema %v", path, node)
		}
		return
	case reflect.TypeOf(Size(0)):
		if node["format"] != "size" {
			t.Errorf("%s: Go Size but schema %v", path, node)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		props, _ := node["properties"].(map[string]any)
		if node["additionalProperties"] != false {
			t.Errorf("%s: schema object must set additionalProperties: false", path)
		}
		var goFields, schemaFields []string
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			goFields = append(goFields, name)
			sub, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: in Go, not in the schema", path, name)
				continue
			}
			compareType(t, path+"."+name, f.Type, sub, doc)
		}
		for name := range props {
			schemaFields = append(schemaFields, name)
		}
		sort.Strings(goFields)
		sort.Strings(schemaFields)
		if !reflect.DeepEqual(goFields, schemaFields) {
			t.Errorf("%s: Go fields %v, schema fields %v", path, goFields, schemaFields)
		}
	case reflect.Map:
		if typ.Elem().Kind() == reflect.Interface {
			return // free-form JSON (an event's detail schema)
		}
		sub, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			t.Errorf("%s: Go map but schema has no additionalProperties schema", path)
			return
		}
		compareType(t, path+".*", typ.Elem(), sub, doc)
	case reflect.Slice:
		items, ok := node["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: Go slice but schema has no items", path)
			return
		}
		compareType(t, path+"[]", typ.Elem(), items, doc)
	case reflect.String:
		if node["type"] != "string" && node["enum"] == nil {
			t.Errorf("%s: Go string but schema %v", path, node["type"])
		}
	case reflect.Int, reflect.Int64:
		if node["type"] != "integer" && node["const"] == nil {
			t.Errorf("%s: Go int but schema %v", path, node["type"])
		}
	case reflect.Float64:
		if node["type"] != "number" {
			t.Errorf("%s: Go float but schema %v", path, node["type"])
		}
	case reflect.Bool:
		if node["type"] != "boolean" {
			t.Errorf("%s: Go bool but schema %v", path, node["type"])
		}
	}
}

func TestParseDurationAndSize(t *testing.T) {
	durs := map[string]time.Duration{"90s": 90 * time.Second, "15m": 15 * time.Minute, "4d": 96 * time.Hour, "250ms": 250 * time.Millisecond, "0s": 0}
	for in, want := range durs {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "0s" && in != "250ms" && FormatDuration(want) != in {
			t.Errorf("FormatDuration(%v) = %q, want %q", want, FormatDuration(want), in)
		}
	}
	for _, bad := range []string{"", "90", "1.5m", "-1s", "1 s", "1S", "99999999999999999999d", "3651d"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
	sizes := map[string]int64{"256KiB": 262144, "1MiB": 1 << 20, "200KB": 200000, "1B": 1}
	for in, want := range sizes {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"1kb", "1.5MiB", "2TiB", "99999999999999999999GiB", "KiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestPositionsOfValidSpec(t *testing.T) {
	src := "version: 1\nfleet: demo\nregion: us-east-1\nbus:\n  name: demo\nevents:\n  e:\n    version: 1\n    source: s\n    detail: {}\nagents:\n  w:\n    runtime: eks\n    step: { p95: 30s, max: 2m }\n    handler: { exec: [x] }\n"
	f, ds := Load("fleet.yaml", []byte(src))
	if ds.HasErrors() || f == nil {
		t.Fatal(ds)
	}
	if got := f.Fleet.Agents["w"].Step.Max.Duration; got != 2*time.Minute {
		t.Errorf("step.max = %v", got)
	}
	r := f.Index.Value("/agents/w/step/max")
	if r.Start.Line != 14 || r.Start.Column != 28 || r.End.Column != 30 {
		t.Errorf("step.max at %+v", r)
	}
	// A defaulted value points at its nearest written ancestor.
	if r := f.Index.Subject("/agents/w/queue/visibility"); r.Start.Line != 12 || r.Start.Column != 3 {
		t.Errorf("fallback at %+v", r)
	}
	if r := f.Index.Key("/agents/w"); r.Start.Line != 12 || r.Start.Column != 3 {
		t.Errorf("key at %+v", r)
	}
}
