package compat_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
)

// contract builds a stored contract around a detail schema (JSON), as the registry holds it.
func contract(t *testing.T, detailType, source, detail string) compat.Contract {
	t.Helper()
	doc := fmt.Sprintf(`{"type":"object","description":"x","properties":{"detail-type":{"type":"string","enum":[%q]},"source":{"type":"string","enum":[%q]},"detail":%s}}`,
		detailType, source, detail)
	c, err := compat.Parse(source+"@"+detailType, []byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", detail, err)
	}
	return c
}

// kinds returns the kinds a change from base to head detail schema reports, sorted.
func kinds(t *testing.T, base, head string) []compat.Kind {
	t.Helper()
	r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", base)}, []compat.Contract{contract(t, "t.x", "s", head)})
	var out []compat.Kind
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	slices.Sort(out)
	return out
}

const (
	objA   = `{"type":"object","properties":{"a":{"type":"string"}}}`
	objAB  = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`
	objReq = `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`
)

func prop(schema string) string { return `{"type":"object","properties":{"a":` + schema + `}}` }

// pair is a change from a base to a head detail schema.
type pair struct{ base, head string }

// kindCases holds, for every detail-level row of compat.KindTable, a firing case (the change
// reports exactly that kind and no other) and a non-firing neighbour (a similar change that
// does not report it), as buf's rule specs do.
var kindCases = map[compat.Kind]struct{ fire, quiet pair }{
	compat.PropertyRemoved:         {pair{objReq, `{"type":"object","properties":{}}`}, pair{objA, `{"type":"object","properties":{}}`}},
	compat.OptionalPropertyRemoved: {pair{objAB, objA}, pair{objA, objAB}},
	compat.PropertyRenamed:         {pair{objA, `{"type":"object","properties":{"c":{"type":"string"}}}`}, pair{objA, `{"type":"object","properties":{"c":{"type":"integer"}}}`}},
	compat.PropertyAdded:           {pair{objA, objAB}, pair{`{"type":"object","additionalProperties":{"type":"integer"},"properties":{"a":{"type":"string"}}}`, `{"type":"object","additionalProperties":{"type":"integer"},"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`}},
	compat.ClosedAdded:             {pair{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`}, pair{objA, objAB}},
	compat.TypeWidened:             {pair{prop(`{"type":"integer"}`), prop(`{"type":"number"}`)}, pair{prop(`{"type":"number"}`), prop(`{"type":"integer"}`)}},
	compat.TypeNarrowed:            {pair{prop(`{"type":["string","null"]}`), prop(`{"type":"string"}`)}, pair{prop(`{"type":"string"}`), prop(`{"type":["string","null"]}`)}},
	compat.TypeChanged:             {pair{prop(`{"type":"string"}`), prop(`{"type":"integer"}`)}, pair{prop(`{"type":"integer"}`), prop(`{"type":"number"}`)}},
	compat.RequiredAdded:           {pair{objA, objReq}, pair{objReq, objA}},
	compat.RequiredRemoved:         {pair{objReq, objA}, pair{objA, objReq}},
	compat.EnumNarrowed:            {pair{prop(`{"type":"string","enum":["x","y"]}`), prop(`{"type":"string","enum":["x"]}`)}, pair{prop(`{"type":"string","enum":["x"]}`), prop(`{"type":"string","enum":["x","y"]}`)}},
	compat.EnumWidened:             {pair{prop(`{"type":"string","enum":["x"]}`), prop(`{"type":"string","enum":["x","y"]}`)}, pair{prop(`{"type":"string","enum":["x","y"]}`), prop(`{"type":"string","enum":["x"]}`)}},
	compat.BoundTightened:          {pair{prop(`{"type":"string","maxLength":10}`), prop(`{"type":"string","maxLength":5}`)}, pair{prop(`{"type":"string","maxLength":5}`), prop(`{"type":"string","maxLength":10}`)}},
	compat.BoundLoosened:           {pair{prop(`{"type":"string","maxLength":5}`), prop(`{"type":"string","maxLength":10}`)}, pair{prop(`{"type":"string","maxLength":10}`), prop(`{"type":"string","maxLength":5}`)}},
	compat.PatternAdded:            {pair{prop(`{"type":"string"}`), prop(`{"type":"string","pattern":"^a"}`)}, pair{prop(`{"type":"string","pattern":"^a"}`), prop(`{"type":"string"}`)}},
	compat.PatternRemoved:          {pair{prop(`{"type":"string","pattern":"^a"}`), prop(`{"type":"string"}`)}, pair{prop(`{"type":"string"}`), prop(`{"type":"string","pattern":"^a"}`)}},
	compat.PatternChanged:          {pair{prop(`{"type":"string","pattern":"^a"}`), prop(`{"type":"string","pattern":"^b"}`)}, pair{prop(`{"type":"string","pattern":"^a"}`), prop(`{"type":"string","pattern":"^a","maxLength":3}`)}},
	compat.FormatAdded:             {pair{prop(`{"type":"string"}`), prop(`{"type":"string","format":"email"}`)}, pair{prop(`{"type":"string","format":"email"}`), prop(`{"type":"string"}`)}},
	compat.FormatRemoved:           {pair{prop(`{"type":"string","format":"email"}`), prop(`{"type":"string"}`)}, pair{prop(`{"type":"string"}`), prop(`{"type":"string","format":"email"}`)}},
	compat.FormatChanged:           {pair{prop(`{"type":"string","format":"email"}`), prop(`{"type":"string","format":"uri"}`)}, pair{prop(`{"type":"string","format":"email"}`), prop(`{"type":"string","format":"email","minLength":3}`)}},
	compat.Closed:                  {pair{objA, `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`}, pair{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, objA}},
	compat.Opened:                  {pair{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, objA}, pair{objA, `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`}},
	compat.ConstraintChanged:       {pair{prop(`{"type":"string"}`), prop(`{"type":"string","anyOf":[{"minLength":1}]}`)}, pair{prop(`{"type":"string","anyOf":[{"minLength":1}]}`), prop(`{"type":"string","anyOf":[{"minLength":2}]}`)}},
	compat.AnnotationChanged:       {pair{prop(`{"type":"string","description":"old"}`), prop(`{"type":"string","description":"new"}`)}, pair{prop(`{"type":"string","description":"old"}`), prop(`{"type":"string","description":"old","maxLength":3}`)}},
}

// Every row of compat.KindTable has a firing case and a non-firing neighbour in kindCases.
func TestKindTable(t *testing.T) {
	cases := kindCases
	seen := map[compat.Kind]bool{}
	for _, row := range compat.KindTable {
		seen[row.Kind] = true
		if (row.Effect == compat.Safe) != (row.Direction == "") || row.Purpose == "" {
			t.Errorf("%s: effect %s with direction %q, purpose %q", row.Kind, row.Effect, row.Direction, row.Purpose)
		}
		switch row.Kind {
		case compat.EventRemoved, compat.EventAdded, compat.DetailTypeChanged, compat.SourceChanged:
			continue // TestEventKinds
		}
		c, ok := cases[row.Kind]
		if !ok {
			t.Errorf("%s: no firing and non-firing case", row.Kind)
			continue
		}
		if got := kinds(t, c.fire.base, c.fire.head); !slices.Equal(got, []compat.Kind{row.Kind}) {
			t.Errorf("%s fires as %v\n  %s\n→ %s", row.Kind, got, c.fire.base, c.fire.head)
		}
		if got := kinds(t, c.quiet.base, c.quiet.head); slices.Contains(got, row.Kind) || len(got) == 0 {
			t.Errorf("%s: neighbour reports %v (want another kind, not this one)\n  %s\n→ %s", row.Kind, got, c.quiet.base, c.quiet.head)
		}
	}
	for k := range cases {
		if !seen[k] {
			t.Errorf("case for %s, which KindTable does not list", k)
		}
	}
}

func TestEventKinds(t *testing.T) {
	a := contract(t, "t.a", "s", objA)
	for _, tc := range []struct {
		name       string
		base, head []compat.Contract
		want       compat.Kind
	}{
		{"removed", []compat.Contract{a}, nil, compat.EventRemoved},
		{"added", nil, []compat.Contract{a}, compat.EventAdded},
		{"detail-type changed", []compat.Contract{a}, []compat.Contract{contract(t, "t.b", "s", objA)}, compat.DetailTypeChanged},
		{"source changed", []compat.Contract{a}, []compat.Contract{contract(t, "t.a", "s2", objA)}, compat.SourceChanged},
		{"unchanged", []compat.Contract{a}, []compat.Contract{a}, ""},
		{"other event changed", []compat.Contract{a}, []compat.Contract{contract(t, "t.a", "s", objAB)}, compat.PropertyAdded},
	} {
		r := compat.Compare(tc.base, tc.head)
		var got []compat.Kind
		for _, f := range r.Findings {
			got = append(got, f.Kind)
		}
		want := []compat.Kind{tc.want}
		if tc.want == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}

// An event removed and another added is a rename only when the two share their source and
// detail schema, or the same non-empty set of consumers: two events nobody in the spec
// consumes, or consumed by different classes, are a removal and an addition.
func TestRemovedAndAddedIsNotARename(t *testing.T) {
	with := func(c compat.Contract, consumers ...string) compat.Contract {
		c.Consumers = consumers
		return c
	}
	a, b := contract(t, "t.a", "s", objA), contract(t, "t.b", "s", objAB)
	for _, tc := range []struct {
		name       string
		base, head compat.Contract
		want       []compat.Kind
	}{
		{"no consumers", a, b, []compat.Kind{compat.EventRemoved, compat.EventAdded}},
		{"other consumers", with(a, "x"), with(b, "y"), []compat.Kind{compat.EventRemoved, compat.EventAdded}},
		{"the same consumer", with(a, "x"), with(b, "x"), []compat.Kind{compat.DetailTypeChanged, compat.PropertyAdded}},
	} {
		r := compat.Compare([]compat.Contract{tc.base}, []compat.Contract{tc.head})
		var got []compat.Kind
		for _, f := range r.Findings {
			got = append(got, f.Kind)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Every bound keyword raised, lowered, added and removed: a lower bound raised or an upper
// bound lowered narrows (breaks backward); the reverse widens (breaks forward).
func TestBoundDirections(t *testing.T) {
	type tc struct {
		kw, typ        string
		low, high      string // two values, low < high
		lower          bool   // a lower bound: raising it narrows
		boolean, multi bool
	}
	for _, b := range []tc{
		{kw: "minimum", typ: "number", low: "1", high: "5", lower: true},
		{kw: "maximum", typ: "number", low: "1", high: "5"},
		{kw: "minLength", typ: "string", low: "1", high: "5", lower: true},
		{kw: "maxLength", typ: "string", low: "1", high: "5"},
		{kw: "minItems", typ: "array", low: "1", high: "5", lower: true},
		{kw: "maxItems", typ: "array", low: "1", high: "5"},
		{kw: "minProperties", typ: "object", low: "1", high: "5", lower: true},
		{kw: "maxProperties", typ: "object", low: "1", high: "5"},
		{kw: "exclusiveMinimum", typ: "number", low: "false", high: "true", lower: true, boolean: true},
		{kw: "exclusiveMaximum", typ: "number", low: "false", high: "true", lower: true, boolean: true},
		{kw: "uniqueItems", typ: "array", low: "false", high: "true", lower: true, boolean: true},
		{kw: "multipleOf", typ: "number", low: "2", high: "4", lower: true, multi: true},
	} {
		extra := ""
		if b.kw == "exclusiveMinimum" {
			extra = `,"minimum":0`
		}
		if b.kw == "exclusiveMaximum" {
			extra = `,"maximum":9`
		}
		with := func(v string) string { return prop(fmt.Sprintf(`{"type":%q,%q:%s%s}`, b.typ, b.kw, v, extra)) }
		without := prop(fmt.Sprintf(`{"type":%q%s}`, b.typ, extra))
		raise, lower := compat.BoundLoosened, compat.BoundTightened // an upper bound
		if b.lower {
			raise, lower = lower, raise
		}
		steps := []struct {
			name       string
			base, head string
			want       compat.Kind
		}{
			{"raised", with(b.low), with(b.high), raise},
			{"lowered", with(b.high), with(b.low), lower},
			{"added", without, with(b.high), compat.BoundTightened},
			{"removed", with(b.high), without, compat.BoundLoosened},
			{"unchanged", with(b.high), with(b.high), ""},
		}
		if b.boolean { // false is the default: adding true narrows, removing it widens
			steps[2].base = with("false")
			steps = append(steps, struct {
				name       string
				base, head string
				want       compat.Kind
			}{"true added", without, with("true"), compat.BoundTightened})
		}
		if b.multi { // 4 → 3: neither divides the other, so both ways
			steps = append(steps, struct {
				name       string
				base, head string
				want       compat.Kind
			}{"changed to a non-multiple", with("4"), with("3"), "both"})
		}
		for _, s := range steps {
			got := kinds(t, s.base, s.head)
			var want []compat.Kind
			switch s.want {
			case "":
			case "both":
				want = []compat.Kind{compat.BoundLoosened, compat.BoundTightened}
			default:
				want = []compat.Kind{s.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %v, want %v", b.kw, s.name, got, want)
			}
			// Each is breaking, in its kind's direction, at the keyword: a maxItems lowered
			// breaks backward (queued events with more items are refused).
			r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", s.base)}, []compat.Contract{contract(t, "t.x", "s", s.head)})
			for _, f := range r.Findings {
				dir := compat.Forward
				if f.Kind == compat.BoundTightened {
					dir = compat.Backward
				}
				if !f.Breaking || f.Direction != dir || !strings.HasSuffix(f.Pointer, "/"+b.kw) {
					t.Errorf("%s %s: %s breaking %v direction %s at %s, want breaking %s at …/%s", b.kw, s.name, f.Kind, f.Breaking, f.Direction, f.Pointer, dir, b.kw)
				}
			}
		}
	}
}

// KindTable's directions are what each finding carries, and severity follows the effect.
func TestFindingCarriesTable(t *testing.T) {
	r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", prop(`{"type":"string","maxLength":5,"enum":["a","b"]}`))},
		[]compat.Contract{contract(t, "t.x", "s", prop(`{"type":"string","maxLength":10,"enum":["a"],"description":"d"}`))})
	got := map[compat.Kind]string{}
	for _, f := range r.Findings {
		got[f.Kind] = fmt.Sprintf("%v %s %s", f.Breaking, f.Direction, f.Severity)
	}
	want := map[compat.Kind]string{
		compat.BoundLoosened:     "true forward error",
		compat.EnumNarrowed:      "true backward error",
		compat.AnnotationChanged: "false  info",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if n := r.Errors(); n != 2 {
		t.Errorf("Errors() = %d", n)
	}
	var names []string
	for _, f := range r.Breaking() {
		names = append(names, string(f.Kind))
	}
	if strings.Join(names, ",") != "enum-narrowed,bound-loosened" {
		t.Errorf("Breaking() = %v", names)
	}
}
