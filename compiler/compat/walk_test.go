package compat_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
)

// The walker's less travelled branches, each with the exact kinds it must report: a type
// dropped (the keywords are still compared), items removed or turned into a tuple, an
// explicit additionalProperties: true then constrained.
func TestWalkerEdges(t *testing.T) {
	for _, tc := range []struct {
		name, base, head string
		want             []compat.Kind
	}{
		{"type dropped, bound tightened", prop(`{"type":"string","maxLength":5}`), prop(`{"maxLength":3}`),
			[]compat.Kind{compat.BoundTightened, compat.TypeWidened}},
		{"items removed (any item)", prop(`{"type":"array","items":{"type":"string"}}`), prop(`{"type":"array"}`),
			[]compat.Kind{compat.TypeWidened}},
		{"items added", prop(`{"type":"array"}`), prop(`{"type":"array","items":{"type":"string"}}`),
			[]compat.Kind{compat.TypeNarrowed}},
		{"items became a tuple", prop(`{"type":"array","items":{"type":"string"}}`), prop(`{"type":"array","items":[{"type":"string"}]}`),
			[]compat.Kind{compat.ConstraintChanged}},
		{"tuple items compared by position", prop(`{"type":"array","items":[{"type":"string","maxLength":5}]}`), prop(`{"type":"array","items":[{"type":"string","maxLength":3}]}`),
			[]compat.Kind{compat.BoundTightened}},
		{"explicit open, then a schema", `{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Closed}},
		{"a schema, then explicit open", `{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Opened}},
		{"open by default, then a schema", objA,
			`{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Closed}},
		{"a schema, then open by default", `{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`,
			objA, []compat.Kind{compat.Opened}},
		// Disjoint types: the type change only, not the keywords of types no value has in common.
		{"disjoint types, other keywords", prop(`{"type":"string","maxLength":5}`), prop(`{"type":"integer","maximum":3}`),
			[]compat.Kind{compat.TypeChanged}},
		{"type added, bound tightened", prop(`{"maxLength":5}`), prop(`{"type":"string","maxLength":3}`),
			[]compat.Kind{compat.BoundTightened, compat.TypeNarrowed}},
		// Closing an object counts whatever kept it open: an explicit true or a schema.
		{"explicit open, then closed", `{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Closed}},
		{"a schema, then closed", `{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Closed}},
		// Reopening counts whatever opens it: an explicit true or a schema.
		{"closed, then explicit open", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Opened}},
		{"closed, then a schema", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`, []compat.Kind{compat.Opened}},
		// A property added where old consumers accepted it anyway is safe: the object was
		// explicitly open, or the new property fits the base's additionalProperties schema.
		{"property added, explicitly open", `{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, []compat.Kind{compat.PropertyAdded}},
		{"property added, fits the base's schema", `{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","additionalProperties":{"type":"string"},"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, []compat.Kind{compat.PropertyAdded}},
		// A required property renamed and still required is a rename, not a new requirement;
		// an optional one renamed and now required is both.
		{"required property renamed", objReq, `{"type":"object","required":["c"],"properties":{"c":{"type":"string"}}}`,
			[]compat.Kind{compat.PropertyRenamed}},
		{"optional property renamed, now required", objA, `{"type":"object","required":["c"],"properties":{"c":{"type":"string"}}}`,
			[]compat.Kind{compat.PropertyRenamed, compat.RequiredAdded}},
	} {
		if got := kinds(t, tc.base, tc.head); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Summaries name the changed place as a reader writes it: properties and definitions
// keywords dropped, items as [], a property that happens to be called "properties" or
// "items" kept.
func TestSummaryNamesThePlace(t *testing.T) {
	for _, tc := range []struct{ base, head, place string }{
		{prop(`{"type":"string","maxLength":5}`), prop(`{"type":"string","maxLength":3}`), " detail.a "},
		{prop(`{"type":"array","items":{"type":"string","maxLength":5}}`), prop(`{"type":"array","items":{"type":"string","maxLength":3}}`), " detail.a[] "},
		{`{"type":"object","properties":{"properties":{"type":"string","maxLength":5}}}`, `{"type":"object","properties":{"properties":{"type":"string","maxLength":3}}}`, " detail.properties "},
		{`{"type":"object","properties":{"items":{"type":"string","maxLength":5}}}`, `{"type":"object","properties":{"items":{"type":"string","maxLength":3}}}`, " detail.items "},
		{prop(`{"type":"array","items":{"type":"object","properties":{"b":{"type":"integer","maximum":5}}}}`), prop(`{"type":"array","items":{"type":"object","properties":{"b":{"type":"integer","maximum":3}}}}`), " detail.a[].b "},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","maximum":5}}}}}`, `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","maximum":3}}}}}`, " detail.a.b "},
	} {
		r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", tc.base)}, []compat.Contract{contract(t, "t.x", "s", tc.head)})
		if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Summary+" ", tc.place) {
			t.Errorf("want one finding naming%q: %+v", tc.place, r.Findings)
		}
	}
}

// A renamed event (same single consumer, detail changed) is paired, not removed and added;
// each finding names the event and schema as the head calls them, and its spec path is on
// its own side: what was removed points into the base spec, what was added into the head.
func TestRenamedEventPathsPerSide(t *testing.T) {
	b := contract(t, "t.old", "s", objAB)
	b.Path, b.Consumers = "/events/t.old", []string{"c"}
	h := contract(t, "t.new", "s", `{"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}}}`)
	h.Path, h.Consumers = "/events/t.new", []string{"c"}
	r := compat.Compare([]compat.Contract{b}, []compat.Contract{h})
	got := map[compat.Kind]string{}
	for _, f := range r.Findings {
		got[f.Kind] = string(f.Side) + " " + f.Path
		if f.Event != "t.new" || f.Schema != "s@t.new" {
			t.Errorf("%s names event %q schema %q, want the head's t.new, s@t.new", f.Kind, f.Event, f.Schema)
		}
	}
	want := map[compat.Kind]string{
		compat.DetailTypeChanged:       "head /events/t.new",
		compat.OptionalPropertyRemoved: "base /events/t.old/detail/properties/b",
		compat.PropertyAdded:           "head /events/t.new/detail/properties/n",
	}
	if len(got) != len(want) {
		t.Fatalf("findings %+v, want kinds %v", r.Findings, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
}

// $ref chains are followed to their end, however long: a type changed at the end of 40
// aliases is a type change of the property that refers to the first. A cycle of refs ends
// the walk without a finding of its own.
func TestRefChains(t *testing.T) {
	chain := func(n int, end string) string {
		var defs []string
		for i := 0; i < n; i++ {
			defs = append(defs, fmt.Sprintf(`"d%d":{"$ref":"#/properties/detail/definitions/d%d"}`, i, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":%s`, n, end))
		return `{"type":"object","definitions":{` + strings.Join(defs, ",") +
			`},"properties":{"a":{"$ref":"#/properties/detail/definitions/d0"}}}`
	}
	cycle := func(extra string) string {
		return `{"type":"object","definitions":{"d0":{"$ref":"#/properties/detail/definitions/d1"},"d1":{"$ref":"#/properties/detail/definitions/d0"}},` +
			`"properties":{"a":{"$ref":"#/properties/detail/definitions/d0"}` + extra + `}}`
	}
	for _, tc := range []struct {
		name, base, head string
		want             []compat.Kind
	}{
		{"2 aliases", chain(2, `{"type":"string"}`), chain(2, `{"type":"integer"}`), []compat.Kind{compat.TypeChanged}},
		{"40 aliases", chain(40, `{"type":"string"}`), chain(40, `{"type":"integer"}`), []compat.Kind{compat.TypeChanged}},
		{"40 aliases, unchanged end", chain(40, `{"type":"string"}`), chain(40, `{"type":"string"}`), nil},
		{"a cycle beside an added property", cycle(""), cycle(`,"b":{"type":"string"}`), []compat.Kind{compat.PropertyAdded}},
	} {
		if got := kinds(t, tc.base, tc.head); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
