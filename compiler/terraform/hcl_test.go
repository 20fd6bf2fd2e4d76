package terraform

import (
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// checkCanonical fails unless src parses and hclwrite's formatter (the library's, the layout
// terraform fmt writes) leaves it unchanged byte for byte.
func checkCanonical(t *testing.T, name string, src []byte) {
	t.Helper()
	if _, ds := hclsyntax.ParseConfig(src, name, hcl.InitialPos); ds.HasErrors() {
		t.Fatalf("%s does not parse: %v\n%s", name, ds, src)
	}
	if want := hclwrite.Format(src); string(want) != string(src) {
		t.Errorf("%s is not in canonical layout:\n--- written\n%s\n--- formatted\n%s", name, src, want)
	}
}

// TestWriterLayoutIsCanonical covers shapes the examples may not reach: tuples of objects
// (content filters in event patterns), objects nested in objects and calls, empty
// collections, quoted and non-ASCII keys, comments inside blocks, escapes in strings and
// templates, floats, null, an attribute set twice, and a line that closes part of what an
// earlier line opened.
func TestWriterLayoutIsCanonical(t *testing.T) {
	pattern, err := value(map[string]any{
		"source":      []any{"a", "b"},
		"detail-type": []any{map[string]any{"prefix": "x."}, map[string]any{"anything-but": []any{"y", "z"}}},
		"detail": map[string]any{
			"size":   []any{map[string]any{"numeric": []any{">", 0, "<=", 1.5}}},
			"émoji":  []any{"ü", nil, true, int64(-3)},
			"éz":     "aligned by grapheme clusters",
			"nested": map[string]any{"deeper": map[string]any{"k": []any{}}, "e": map[string]any{}},
			"$or":    []any{map[string]any{"a": []any{1}}, map[string]any{"bb": []any{map[string]any{"exists": false}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFile("shapes.tf")
	f.root().comment("top comment")
	r := f.resource("aws_thing", "one", "leading comment", "second line")
	r.set("name", str("quote \" backslash \\ newline \n dollar ${x} percent %{y}"))
	r.set("a", num(1)).set("bbbbbb", boolean(false)).set("cc", strs())
	r.set("pattern", call("jsonencode", pattern))
	r.set("after_multiline", strs("x", "y"))
	r.set("a", num(2)) // replaces in place
	r.set("tpl", tmpl(lit("arn:"), interp(partition()), lit(":x:${literal}/"), interp(accountID()), lit("/*")))
	r.set("templated", call("templatefile", pathModule("../x.json"), object(kv{"q", ref("aws_sqs_queue", "q", "url")}, kv{"long_name", str("v")})))
	r.set("objs", list(object(kv{"a", num(1)}), object(kv{"b", list(object(kv{"c", num(2)}))})))
	r.set("empty_obj", object())
	// `x = f([{` opens three brackets on one line; `}], {` closes two of them and opens one.
	r.set("partial", call("merge", list(object(kv{"a", num(1)})), object(kv{"b", num(2)})))
	n := r.nested("inner")
	n.comment("inside")
	n.set("x", num(1)).set("yy", object(kv{"z", num(3)}))
	n.set("combining", object(kv{"ab", num(1)}, kv{"e\u0301b", num(2)}, kv{"x", num(3)}))
	n.nested("empty")
	n.nested("deep", "label").set("k", str("v"))
	f.data("aws_caller_identity", "current")
	src, _ := f.bytes()
	checkCanonical(t, f.name, src)
}

// TestGeneratedTerraformIsCanonical checks every generated file of the examples, the kitchen
// sink and a 100-class fleet against the library formatter (the consumers test runs terraform fmt too).
func TestGeneratedTerraformIsCanonical(t *testing.T) {
	for _, name := range examples {
		for _, fl := range generate(t, example(t, name)) {
			checkCanonical(t, name+"/"+fl.Path, fl.Bytes)
		}
	}
	for _, fl := range generate(t, lower(t, "../testdata/kitchen-sink/fleet.yaml")) {
		checkCanonical(t, "kitchen-sink/"+fl.Path, fl.Bytes)
	}
	for _, fl := range generate(t, irtest.LoadSource(t, string(irtest.BigFleet(100)))) {
		checkCanonical(t, "big/"+fl.Path, fl.Bytes)
	}
}
