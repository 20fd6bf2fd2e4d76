package runtimeconfig

import (
	"slices"
	"testing"
)

func TestParseAsyncTool(t *testing.T) {
	cases := []struct {
		tool, class string
		ok, err     bool
	}{
		{"async:cdk-synth", "cdk-synth", true, false},
		{"async:", "", true, true},
		{"synth=async:cdk-synth", "cdk-synth", true, true},
		{"https://x/async:y", "", false, false},
		{"search=https://x/search", "", false, false},
		{"event:Thing", "", false, false},
		{"emit=event:async:x", "", false, false},
	}
	for _, c := range cases {
		class, ok, err := ParseAsyncTool(c.tool)
		if class != c.class || ok != c.ok || (err != nil) != c.err {
			t.Errorf("ParseAsyncTool(%q) = %q, %v, %v; want %q, %v, error %v", c.tool, class, ok, err, c.class, c.ok, c.err)
		}
	}
}

func TestToolsOnly(t *testing.T) {
	all := &Tools{Table: "jobs", Classes: []ToolClass{{Class: "a"}, {Class: "b"}, {Class: "c"}}}
	got := all.Only([]string{"c", "a", "x"})
	var names []string
	for _, c := range got.Classes {
		names = append(names, c.Class)
	}
	if !slices.Equal(names, []string{"a", "c"}) || got.Table != "jobs" || len(all.Classes) != 3 {
		t.Errorf("Only(c, a, x) = %v (table %q), all keeps %d", names, got.Table, len(all.Classes))
	}
	if all.Only([]string{"x"}) != nil {
		t.Error("Only(x) is not nil")
	}
}
