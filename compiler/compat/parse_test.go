package compat_test

import (
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
)

// Parse takes detail-type and source from the envelope's one-value enums whatever the
// registry calls the schema; only without a detail-type enum does it fall back to the name,
// less its "<source>@" prefix when the source is known.
func TestParseDetailType(t *testing.T) {
	envelope := func(detailType, source string) string {
		doc := `{"type":"object","properties":{`
		if detailType != "" {
			doc += `"detail-type":{"type":"string","enum":["` + detailType + `"]},`
		}
		if source != "" {
			doc += `"source":{"type":"string","enum":["` + source + `"]},`
		}
		return doc + `"detail":{"type":"object"}}}`
	}
	for _, tc := range []struct {
		name, doc          string
		detailType, source string
	}{
		{"s@t.x", envelope("t.x", "s"), "t.x", "s"},
		{"renamed-in-the-registry", envelope("t.x", "s"), "t.x", "s"},
		{"s@t.x", envelope("", "s"), "t.x", "s"},
		{"other@t.x", envelope("", "s"), "other@t.x", "s"},
		{"s@t.x", envelope("", ""), "s@t.x", ""},
		{"@t.x", envelope("", ""), "@t.x", ""},
	} {
		c, err := compat.Parse(tc.name, []byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.DetailType != tc.detailType || c.Source != tc.source || c.Name != tc.name {
			t.Errorf("Parse(%s, %s): name %q detail-type %q source %q, want detail-type %q source %q",
				tc.name, tc.doc, c.Name, c.DetailType, c.Source, tc.detailType, tc.source)
		}
	}
}

// Equal compares documents as JSON: formatting and key order do not matter, content does,
// and anything that is not a JSON object on either side equals nothing, not even itself.
func TestEqualDocuments(t *testing.T) {
	const doc = `{"type":"object","properties":{"a":{"type":"string"}}}`
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{doc, doc, true},
		{doc, "{\n  \"properties\": {\"a\": {\"type\": \"string\"}},\n  \"type\": \"object\"\n}\n", true},
		{doc, `{"type":"object","properties":{"a":{"type":"integer"}}}`, false},
		{doc, `not json`, false},
		{`not json`, doc, false},
		{doc, `[1]`, false},
		{`null`, doc, false},
		{`not json`, `not json`, false},
	} {
		if got := compat.Equal([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
