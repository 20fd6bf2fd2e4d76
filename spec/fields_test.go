package spec

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fleetc/fleetc/spec/jsonptr"
)

// TestUnknownAndMissingFieldsEverywhere: in every mapping of the reference example, an
// added field is exactly one P002 naming it, and each field removed is either accepted or a
// P008 naming exactly that field on that mapping. The names come from the schema node and
// the instance, not from the validator's wording, so a jsonschema upgrade that rewords its
// messages cannot silently weaken P002, P008 or did-you-mean.
func TestUnknownAndMissingFieldsEverywhere(t *testing.T) {
	src, err := os.ReadFile("../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	idx := newIndex("fleet.yaml", src)
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	c := converter{idx: idx}
	base := c.convert(doc.Content[0], "", 0)
	if ds := validateSchema(base, idx); len(ds) > 0 {
		t.Fatalf("the example does not validate: %v", ds)
	}
	var maps []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			maps = append(maps, path)
			for k, e := range x {
				walk(e, path+"/"+jsonptr.Escape(k))
			}
		case []any:
			for i, e := range x {
				walk(e, path+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(base, "")
	unknown, missing := 0, 0
	for _, p := range maps {
		v := deepCopyJSON(t, base)
		lookup(v, p).(map[string]any)["zz_unknown"] = "x"
		for _, d := range validateSchema(v, idx) {
			if d.Code != "P002" {
				continue
			}
			unknown++
			if d.Path != p+"/zz_unknown" || !strings.Contains(d.Summary, `unknown field "zz_unknown"`) {
				t.Errorf("adding zz_unknown at %q: %s at %s", p, d.Summary, d.Path)
			}
		}
		for k := range lookup(base, p).(map[string]any) {
			v := deepCopyJSON(t, base)
			delete(lookup(v, p).(map[string]any), k)
			for _, d := range validateSchema(v, idx) {
				if !strings.HasPrefix(d.Summary, "missing required field") {
					continue
				}
				missing++
				if d.Path != p || !strings.HasPrefix(d.Summary, "missing required field \""+k+"\" in ") {
					t.Errorf("removing %s/%s: %s at %s", p, k, d.Summary, d.Path)
				}
			}
		}
	}
	// The example has far more closed mappings and required fields than this; the floor
	// catches a validator that stops reporting them at all.
	if unknown < 30 || missing < 30 {
		t.Errorf("only %d unknown-field and %d missing-field errors across %d mappings", unknown, missing, len(maps))
	}
	t.Logf("%d mappings: %d unknown-field, %d missing-field errors checked", len(maps), unknown, missing)
}

func deepCopyJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A missing field that allows one value says the value: `version: 1`, not only its name.
func TestMissingVersionSaysTheValue(t *testing.T) {
	src := "fleet: hello\nregion: eu-west-1\nbus: { name: hello }\nevents: {}\nagents: {}\n"
	_, ds := Load("fleet.yaml", []byte(src))
	for _, d := range ds {
		if d.Code == "P008" && strings.HasPrefix(d.Summary, `missing required field "version"`) {
			if !strings.HasSuffix(d.Summary, "; add version: 1") {
				t.Errorf("summary %q does not give the value", d.Summary)
			}
			return
		}
	}
	t.Errorf("no missing-version diagnostic in %v", ds)
}
