package spec

import (
	"fmt"
	"strings"
	"testing"
)

// nested is a detail schema of objects and arrays nested depth levels, width properties each.
func nested(depth, width int) string {
	if depth == 0 {
		return `{"type": "string"}`
	}
	var props []string
	for i := range width {
		props = append(props, fmt.Sprintf(`"p%d": %s`, i, nested(depth-1, width)))
	}
	obj := `{"type": "object", "properties": {` + strings.Join(props, ", ") + `}}`
	if depth%2 == 1 {
		return `{"type": "array", "items": ` + obj + `}`
	}
	return obj
}

func specWith(events map[string]string, classes int) string {
	var b strings.Builder
	b.WriteString("version: 1\nfleet: lim\nregion: us-east-1\nbus: { name: lim }\nworker: { image: ghcr.io/fleetc/fleet-worker:0.1.0 }\nevents:\n")
	for name, detail := range events {
		fmt.Fprintf(&b, "  %s:\n    version: 1\n    source: lim.app\n    detail: %s\n", name, detail)
	}
	b.WriteString("agents:\n")
	for i := range classes {
		fmt.Fprintf(&b, "  c%d:\n    runtime: eks\n    consumes: { event: e0 }\n    step: { p95: 1s, max: 10s }\n    handler: { http: \"http://127.0.0.1:8080/\" }\n", i)
	}
	return b.String()
}

// withOutput gives class c0 of a specWith spec an output schema.
func withOutput(src, output string) string {
	return strings.Replace(src, "  c0:\n", "  c0:\n    output: "+output+"\n", 1)
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want string // "" when the spec is within every limit
	}{
		{"deep detail", specWith(map[string]string{"e0": nested(14, 1)}, 1),
			"lim.yaml:10:5: P011: event e0: nesting depth of the detail schema: 36, over fleetc's limit of 24"},
		{"wide detail", specWith(map[string]string{"e0": nested(6, 5)}, 1),
			"P011: event e0: values in the detail schema"},
		{"all details", specWith(map[string]string{"e0": nested(8, 2), "e1": nested(8, 2), "e2": nested(8, 2), "e3": nested(8, 2),
			"e4": nested(8, 2), "e5": nested(8, 2), "e6": nested(8, 2), "e7": nested(8, 2), "e8": nested(8, 2), "e9": nested(8, 2),
			"e10": nested(8, 2), "e11": nested(8, 2), "e12": nested(8, 2)}, 1),
			"lim.yaml:6:1: P011: values in all event detail and handler output schemas: 21021, over fleetc's limit of 20000"},
		{"too many classes", specWith(map[string]string{"e0": `{"type": "object"}`}, MaxAgents+1),
			"P011: agent classes: 2001, over fleetc's limit of 2000"},
		{"deep but allowed", specWith(map[string]string{"e0": nested(8, 2)}, 1), ""},
		// A class's output schema is held to the same limits, and counts toward the total.
		{"deep output", withOutput(specWith(map[string]string{"e0": `{"type": "object"}`}, 1), nested(14, 1)),
			"P011: class c0: nesting depth of the output schema: 36, over fleetc's limit of 24"},
		{"wide output", withOutput(specWith(map[string]string{"e0": `{"type": "object"}`}, 1), nested(6, 5)),
			"P011: class c0: values in the output schema"},
		{"details and outputs", withOutput(specWith(map[string]string{"e0": nested(8, 2), "e1": nested(8, 2), "e2": nested(8, 2), "e3": nested(8, 2),
			"e4": nested(8, 2), "e5": nested(8, 2), "e6": nested(8, 2), "e7": nested(8, 2), "e8": nested(8, 2), "e9": nested(8, 2),
			"e10": nested(8, 2), "e11": nested(8, 2)}, 1), nested(8, 2)),
			"P011: values in all event detail and handler output schemas: 21021, over fleetc's limit of 20000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ds := Load("lim.yaml", []byte(tc.src))
			var got []string
			for _, d := range ds {
				if d.Code == "P011" {
					got = append(got, d.String())
				}
			}
			all := strings.Join(got, "\n")
			if tc.want == "" {
				if all != "" {
					t.Fatalf("within limits, but:\n%s", all)
				}
				return
			}
			if !strings.Contains(all, tc.want) {
				t.Fatalf("want %q, got:\n%s\n(all: %v)", tc.want, all, ds)
			}
			// A spec past a limit is refused before schema validation: only P011s come back.
			for _, d := range ds {
				if d.Code != "P011" {
					t.Errorf("unexpected %s after a limit was exceeded", d)
				}
			}
		})
	}
}

// TestAliasBudget: aliases may add maxAliasValues values in all, counted from each anchored
// block's expanded size; one alias past it is refused at that alias, without converting it.
func TestAliasBudget(t *testing.T) {
	const block = 100 // values one alias adds: the sequence and its 99 scalars
	doc := func(aliases int) string {
		items := make([]string, block-1)
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		return "shared: &s [" + strings.Join(items, ", ") + "]\nuses: [" + strings.TrimSuffix(strings.Repeat("*s, ", aliases), ", ") + "]\n"
	}
	refusal := func(src string) string {
		_, ds := Load("a.yaml", []byte(src))
		for _, d := range ds {
			if d.Code == "P001" {
				return d.String()
			}
		}
		return ""
	}
	if got := refusal(doc(maxAliasValues / block)); got != "" {
		t.Errorf("aliases adding exactly %d values refused: %s", maxAliasValues, got)
	}
	over := maxAliasValues/block + 1
	col := len("uses: [") + (over-1)*len("*s, ") + 1
	if got, want := refusal(doc(over)), fmt.Sprintf("a.yaml:2:%d: P001: aliases expand to over %d values", col, maxAliasValues); got != want {
		t.Errorf("one alias past the budget:\n got %q\nwant %q", got, want)
	}
}
