package refpath

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	for p, want := range map[string][]Segment{
		"$.docs":               {{Field: true, Name: "docs"}},
		"$.steps.plan.queries": {{Field: true, Name: "steps"}, {Field: true, Name: "plan"}, {Field: true, Name: "queries"}},
		"$['a b'].c[2]":        {{Field: true, Name: "a b"}, {Field: true, Name: "c"}, {Index: 2}},
		`$['it\'s']`:           {{Field: true, Name: "it's"}},
		"$.größe":              {{Field: true, Name: "größe"}},
		"$.x-y_z":              {{Field: true, Name: "x-y_z"}},
		"$":                    nil,
	} {
		got, err := Parse(p)
		if err != nil {
			t.Errorf("Parse(%q): %v", p, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", p, got, want)
		}
	}
}

// Each refused form, with the byte it goes wrong at.
func TestParseRefuses(t *testing.T) {
	for p, at := range map[string]int{
		"docs":            0,
		"$$.Execution.Id": 0,
		"$..docs":         1,
		"$.":              1,
		"$.docs.":         6,
		"$.docs[*]":       7,
		"$.docs[0:2]":     7,
		"$.docs[0,1]":     7,
		"$.docs[-1]":      7,
		"$.docs[?(@.x)]":  7,
		"$.*":             2,
		"$.docs.length()": 13,
		"$.a b":           3,
		"$['a','b']":      5,
		"$['a'":           5,
		"$[1":             1,
		"$x":              1,
		"$.a\nb":          3,
	} {
		_, err := Parse(p)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v, want an *Error", p, err)
			continue
		}
		if e.Offset != at {
			t.Errorf("Parse(%q): offset %d, want %d (%v)", p, e.Offset, at, e)
		}
	}
	if _, err := Parse("$." + strings.Repeat("a", MaxLength)); err == nil {
		t.Error("a path over MaxLength was accepted")
	}
}
