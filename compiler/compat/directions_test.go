package compat_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fleetc/fleetc/compiler/compat"
)

// witnesses are events that prove a change's direction against JSON Schema itself, not
// against compat's table: fwd are valid under the head schema and refused by the base (old
// consumers get events they refuse: it breaks forward), bwd the reverse (new consumers
// refuse queued, dead-lettered or replayed events: it breaks backward). Each is an event a
// producer could write under one of the two contracts.
//
// Safe rows have none: their firing cases only change what no declared property's value
// depends on (a property added to an open object assumes old events did not carry it
// undeclared, which is what "safe" means in compatibility.md).
var witnesses = map[compat.Kind]struct{ fwd, bwd []string }{
	compat.PropertyRemoved:         {fwd: []string{`{}`, `{"a":1}`}},
	compat.OptionalPropertyRemoved: {fwd: []string{`{"b":1}`}},
	compat.PropertyRenamed:         {fwd: []string{`{"a":1}`}, bwd: []string{`{"c":1}`}},
	compat.ClosedAdded:             {fwd: []string{`{"a":"x","b":"y"}`}},
	compat.TypeWidened:             {fwd: []string{`{"a":1.5}`}},
	compat.TypeNarrowed:            {bwd: []string{`{"a":null}`}},
	compat.TypeChanged:             {fwd: []string{`{"a":1}`}, bwd: []string{`{"a":"x"}`}},
	compat.RequiredAdded:           {bwd: []string{`{}`}},
	compat.RequiredRemoved:         {fwd: []string{`{}`}},
	compat.EnumNarrowed:            {bwd: []string{`{"a":"y"}`}},
	compat.EnumWidened:             {fwd: []string{`{"a":"y"}`}},
	compat.BoundTightened:          {bwd: []string{`{"a":"123456"}`}},
	compat.BoundLoosened:           {fwd: []string{`{"a":"123456"}`}},
	compat.PatternAdded:            {bwd: []string{`{"a":"b"}`}},
	compat.PatternRemoved:          {fwd: []string{`{"a":"b"}`}},
	compat.PatternChanged:          {fwd: []string{`{"a":"b"}`}, bwd: []string{`{"a":"a"}`}},
	compat.FormatAdded:             {bwd: []string{`{"a":"not an address"}`}},
	compat.FormatRemoved:           {fwd: []string{`{"a":"not an address"}`}},
	compat.FormatChanged:           {fwd: []string{`{"a":"https://example.com"}`}, bwd: []string{`{"a":"a@example.com"}`}},
	compat.Closed:                  {bwd: []string{`{"a":"x","z":1}`}},
	compat.Opened:                  {fwd: []string{`{"a":"x","z":1}`}},
	compat.ConstraintChanged:       {bwd: []string{`{"a":""}`}},
}

// needsCare are the changes that are no break but a warning, by compatibility.md's judgment
// rather than by any event: a removed optional property was allowed to be absent before, so
// only an undeclared value in its place (the forward witness) can trouble an old consumer.
var needsCare = map[compat.Kind]bool{compat.OptionalPropertyRemoved: true}

// validates reports whether schema (a detail schema) admits instance, as a draft-04 validator
// with format assertions decides it.
func validates(t *testing.T, schema, instance string) bool {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4
	c.AssertFormat = true
	if err := c.AddResource("detail.json", strings.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("detail.json")
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	var v any
	if err := json.Unmarshal([]byte(instance), &v); err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

// Each row's effect and direction follow from what its firing change does to events: the
// witnesses are checked by a JSON Schema validator, the direction they prove must be the
// one compat reports, and a change with a witness is breaking unless its row says it needs
// care. Flipping any row's effect or direction in compat.KindTable fails this test.
func TestKindDirectionsFollowFromEvents(t *testing.T) {
	for _, row := range compat.KindTable {
		c, ok := kindCases[row.Kind]
		if !ok {
			continue // the event-level rows: TestEventKindDirections
		}
		w := witnesses[row.Kind]
		for _, e := range w.fwd {
			if !validates(t, c.fire.head, e) || validates(t, c.fire.base, e) {
				t.Errorf("%s: %s is no forward witness (head must admit it, base refuse it)", row.Kind, e)
			}
		}
		for _, e := range w.bwd {
			if !validates(t, c.fire.base, e) || validates(t, c.fire.head, e) {
				t.Errorf("%s: %s is no backward witness (base must admit it, head refuse it)", row.Kind, e)
			}
		}
		var want compat.Direction
		switch {
		case len(w.fwd) > 0 && len(w.bwd) > 0:
			want = compat.Both
		case len(w.fwd) > 0:
			want = compat.Forward
		case len(w.bwd) > 0:
			want = compat.Backward
		}
		if row.Kind == compat.ConstraintChanged && want != "" {
			// A keyword fleetc does not reason about: its firing case narrows, but another
			// change of the same keyword could widen, so it counts both ways.
			want = compat.Both
		}
		r := compat.Compare([]compat.Contract{contract(t, "t.x", "s", c.fire.base)}, []compat.Contract{contract(t, "t.x", "s", c.fire.head)})
		if len(r.Findings) != 1 {
			t.Fatalf("%s: %d findings", row.Kind, len(r.Findings))
		}
		f := r.Findings[0]
		if f.Direction != want {
			t.Errorf("%s: reported direction %q, the events prove %q", row.Kind, f.Direction, want)
		}
		if wantBreaking := want != "" && !needsCare[row.Kind]; f.Breaking != wantBreaking {
			t.Errorf("%s: breaking %v, want %v (direction %q)", row.Kind, f.Breaking, wantBreaking, want)
		}
		if (row.Effect == compat.Care) != needsCare[row.Kind] || (needsCare[row.Kind] && want == "") {
			t.Errorf("%s: effect %s; needs care: %v, with a witness: %v", row.Kind, row.Effect, needsCare[row.Kind], want != "")
		}
	}
}

// The event-level rows, whose direction is about who sends and matches an event rather than
// about one schema's instances: a detail-type or source change is refused by old rules and
// consumers for new events and by new ones for old (both); a removed event breaks what still
// waits for it downstream of the producer (forward: consumers and rules outside the spec,
// which the new contracts no longer promise anything); an added one is safe.
func TestEventKindDirections(t *testing.T) {
	a := contract(t, "t.a", "s", objA)
	for _, tc := range []struct {
		name       string
		base, head []compat.Contract
		breaking   bool
		dir        compat.Direction
	}{
		{"removed", []compat.Contract{a}, nil, true, compat.Forward},
		{"added", nil, []compat.Contract{a}, false, ""},
		{"detail-type changed", []compat.Contract{a}, []compat.Contract{contract(t, "t.b", "s", objA)}, true, compat.Both},
		{"source changed", []compat.Contract{a}, []compat.Contract{contract(t, "t.a", "s2", objA)}, true, compat.Both},
	} {
		r := compat.Compare(tc.base, tc.head)
		if len(r.Findings) != 1 {
			t.Fatalf("%s: %d findings", tc.name, len(r.Findings))
		}
		if f := r.Findings[0]; f.Breaking != tc.breaking || f.Direction != tc.dir {
			t.Errorf("%s: breaking %v direction %q, want %v %q", tc.name, f.Breaking, f.Direction, tc.breaking, tc.dir)
		}
	}
}
