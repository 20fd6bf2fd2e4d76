package runtimeconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/schemas"
)

// handlerFields are the Handler fields each handler type writes (besides type); the schema
// closes the handler object per type.
var handlerFields = map[string][]string{
	HandlerExec: {"Command", "InheritEnv", "Secrets"},
	HandlerHTTP: {"URL"},
	HandlerLLM:  {"System", "Tools", "MaxTokens"},
}

// strictDecode decodes raw into a Config refusing keys the types do not know, so a schema
// field missing from the types fails here instead of being dropped silently.
func strictDecode(t *testing.T, raw []byte) *Config {
	t.Helper()
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("decode: %v\n%s", err, raw)
	}
	return &c
}

// withHandler returns c with only the fields of handler type typ set (taken from src).
func withHandler(c Config, typ string, src Handler) Config {
	h := Handler{Type: typ}
	hv, sv := reflect.ValueOf(&h).Elem(), reflect.ValueOf(src)
	for _, f := range handlerFields[typ] {
		hv.FieldByName(f).Set(sv.FieldByName(f))
	}
	c.Handler = h
	return c
}

// zeroFields lists the fields of v (recursively) that hold their zero value.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(v.Elem(), path)
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		if v.Kind() == reflect.Slice {
			return zeroFields(v.Index(0), path+"[0]")
		}
		var out []string
		for _, k := range v.MapKeys() {
			out = append(out, zeroFields(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
		}
		return out
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}

// TestFileRoundTrip: JSON → Go → JSON. A config that sets every field of the format passes
// the schema and the cross-field rules, decodes into the types without an unknown key, fills
// every field, and marshals back to the same bytes; each handler type does the same.
func TestFileRoundTrip(t *testing.T) {
	raw, err := os.ReadFile("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("full.json", raw); err != nil {
		t.Fatal(err)
	}
	c := strictDecode(t, raw)
	// An api_key is a secret or a parameter, never both: fast names a secret, overflow a parameter.
	oneOf := map[string]bool{"Config.Models.Policies[fast].APIKey.SSM": true,
		"Config.Models.Policies[overflow].APIKey.Secret": true, "Config.Models.Policies[overflow].APIKey.JSONKey": true}
	var unset []string
	for _, f := range zeroFields(reflect.ValueOf(c), "Config") {
		if f != "Config.Handler.Command" && f != "Config.Handler.URL" && f != "Config.Handler.InheritEnv" && f != "Config.Handler.Secrets" && !oneOf[f] { // not llm fields
			unset = append(unset, f)
		}
	}
	if len(unset) > 0 {
		t.Errorf("testdata/full.json leaves fields unset (add them): %v", unset)
	}
	got, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, raw) {
		t.Errorf("JSON → Go → JSON changed the bytes:\n%s\nwant\n%s", got, raw)
	}

	full := Handler{Command: []string{"/app/run", "--fast"}, InheritEnv: []string{"OPENAI_API_KEY"}, URL: "http://127.0.0.1:9000/step",
		Secrets: map[string]APIKey{"VENDOR_TOKEN": {Secret: "fleet/vendor", JSONKey: "token"}, "SEARCH_KEY": {SSM: "/fleet/search-key"}}}
	for typ := range handlerFields {
		full.System, full.Tools, full.MaxTokens = c.Handler.System, c.Handler.Tools, c.Handler.MaxTokens
		want := withHandler(*c, typ, full)
		if typ != HandlerLLM {
			want.AsyncTools = nil // only an llm handler runs async tools
		}
		b, err := Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(typ, b) // the schema closes the handler per type
		if err != nil {
			t.Errorf("%s handler: %v", typ, err)
			continue
		}
		if !reflect.DeepEqual(*back, want) {
			t.Errorf("%s handler: Go → JSON → Go = %+v, want %+v", typ, back.Handler, want.Handler)
		}
	}
}

// fill sets every field reachable from v to a distinct non-zero value, so a field added to
// the types is round-tripped without anyone remembering to add it here.
func fill(v reflect.Value, n *int) {
	*n++
	if v.Type() == reflect.TypeFor[Document]() {
		v.SetBytes(fmt.Appendf(nil, `{"title":"s%d"}`, *n)) // an embedded JSON document
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d<&>", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

// TestGoRoundTrip: Go → JSON → Go. Every field set to a distinct value survives Marshal and a
// strict decode unchanged, for every handler type.
func TestGoRoundTrip(t *testing.T) {
	var c Config
	n := 0
	fill(reflect.ValueOf(&c).Elem(), &n)
	if z := zeroFields(reflect.ValueOf(c), "Config"); len(z) > 0 {
		t.Fatalf("fill left %v", z)
	}
	for typ := range handlerFields {
		want := withHandler(c, typ, c.Handler)
		b, err := Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		if got := strictDecode(t, b); !reflect.DeepEqual(*got, want) {
			t.Errorf("%s handler: Go → JSON → Go = %+v\nwant %+v", typ, *got, want)
		}
	}
	if _, err := Marshal(&Config{Handler: Handler{Type: "grpc"}}); err == nil {
		t.Error("an unknown handler type was written")
	}
}

// TestTypesMatchSchema: the Go types and schemas/runtime-config.schema.json describe the same
// fields, with the same JSON kinds and the same required sets.
func TestTypesMatchSchema(t *testing.T) {
	raw, err := schemas.FS.ReadFile(SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	if root["$id"] != SchemaID {
		t.Errorf("$id %v, want %s", root["$id"], SchemaID)
	}
	if c := root["properties"].(map[string]any)["format_version"].(map[string]any)["const"]; c != float64(FormatVersion) {
		t.Errorf("schema format_version %v, types %d", c, FormatVersion)
	}
	compare(t, root, "#", reflect.TypeFor[Config](), root)
}

// resolve follows a local $ref.
func resolve(root, node map[string]any) map[string]any {
	ref, ok := node["$ref"].(string)
	if !ok {
		return node
	}
	cur := any(root)
	for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		cur = cur.(map[string]any)[p]
	}
	return cur.(map[string]any)
}

// kind is the JSON type a schema node admits, from type, const or enum.
func kind(node map[string]any) string {
	if k, ok := node["type"].(string); ok {
		return k
	}
	vals, _ := node["enum"].([]any)
	if c, ok := node["const"]; ok {
		vals = []any{c}
	}
	if len(vals) > 0 {
		switch v := vals[0].(type) {
		case string:
			return "string"
		case float64:
			if v == float64(int64(v)) {
				return "integer"
			}
			return "number"
		}
	}
	return "?"
}

func jsonKind(t reflect.Type) string {
	if t == reflect.TypeFor[Document]() {
		return "object" // an embedded JSON Schema; its own metaschema checks it
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "?" + t.Kind().String()
}

// objectShape returns an object node's properties and required names; for the handler, the
// union over its per-type branches (required: only what every type requires).
func objectShape(node map[string]any) (props map[string]any, required []string) {
	props = map[string]any{}
	for k, v := range node["properties"].(map[string]any) {
		props[k] = v
	}
	for _, r := range node["required"].([]any) {
		required = append(required, r.(string))
	}
	all, _ := node["allOf"].([]any)
	for _, b := range all {
		then := b.(map[string]any)["then"].(map[string]any)
		for k, v := range then["properties"].(map[string]any) {
			if v != true {
				props[k] = v
			}
		}
	}
	return props, required
}

func compare(t *testing.T, root map[string]any, at string, typ reflect.Type, node map[string]any) {
	t.Helper()
	node = resolve(root, node)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if got, want := kind(node), jsonKind(typ); got != want {
		t.Errorf("%s: schema says %s, %s is %s", at, got, typ, want)
		return
	}
	switch typ.Kind() {
	case reflect.Slice:
		if items, ok := node["items"].(map[string]any); ok {
			compare(t, root, at+"/items", typ.Elem(), items)
		}
	case reflect.Map:
		compare(t, root, at+"/additionalProperties", typ.Elem(), node["additionalProperties"].(map[string]any))
	case reflect.Struct:
		props, required := objectShape(node)
		var goFields, goRequired []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			goFields = append(goFields, name)
			if !strings.Contains(opts, "omitempty") {
				goRequired = append(goRequired, name)
			}
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: %s.%s (json %q) is not in the schema", at, typ.Name(), f.Name, name)
				continue
			}
			compare(t, root, at+"/"+name, f.Type, p)
		}
		for name := range props {
			if !slices.Contains(goFields, name) {
				t.Errorf("%s: schema property %q has no field in %s", at, name, typ.Name())
			}
		}
		sort.Strings(required)
		sort.Strings(goRequired)
		if !slices.Equal(required, goRequired) {
			t.Errorf("%s: schema requires %v, %s always writes %v", at, required, typ.Name(), goRequired)
		}
	}
}
