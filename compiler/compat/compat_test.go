package compat_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/spec/diag"
)

// fleet is a spec with one contract (task.requested) consumed by class "worker", which the
// workflow "flow" dispatches to, and a second, unrelated event.
const fleet = `version: 1
fleet: compat
region: eu-west-1
bus: { name: compat }
worker: { image: 111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0 }
events:
  EVENT:
    version: VERSION
    source: SOURCE
    detail:
DETAIL
  other.happened:
    version: 1
    source: compat.app
    detail: { type: object, properties: { x: { type: string } } }
agents:
  worker:
    runtime: eks
    consumes: { event: EVENT }
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/work"] }
workflows:
  flow:
    steps:
      - { name: Work, agent: worker, timeout: 1h }
`

const baseDetail = `      type: object
      required: [id, status]
      properties:
        id: { type: string, minLength: 1, maxLength: 64 }
        status: { type: string, enum: [open, closed] }
        count: { type: integer, minimum: 0, maximum: 100 }
        code: { type: string, pattern: "^[A-Z]+$" }
        tags: { type: array, items: { type: string }, maxItems: 10 }
        meta:
          type: object
          properties:
            origin: { type: string }`

type side struct {
	event, source, version, detail string
}

func contracts(t *testing.T, s side) []compat.Contract {
	t.Helper()
	if s.event == "" {
		s.event = "task.requested"
	}
	if s.source == "" {
		s.source = "compat.app"
	}
	if s.version == "" {
		s.version = "1"
	}
	if s.detail == "" {
		s.detail = baseDetail
	}
	src := strings.NewReplacer("EVENT", s.event, "SOURCE", s.source, "VERSION", s.version, "DETAIL", s.detail).Replace(fleet)
	cs, ds := compat.FromFleet(irtest.LoadSource(t, src))
	if ds.HasErrors() {
		t.Fatalf("generate: %v", ds)
	}
	return cs
}

// edit returns the base detail schema with one line replaced.
func edit(old, new string) string {
	if !strings.Contains(baseDetail, old) {
		panic("edit: no " + old)
	}
	return strings.Replace(baseDetail, old, new, 1)
}

func TestCompareKinds(t *testing.T) {
	tests := []struct {
		name     string
		head     side
		kind     compat.Kind
		breaking bool
		dir      compat.Direction
		pointer  string
	}{
		{"optional property removed", side{detail: edit("        code: { type: string, pattern: \"^[A-Z]+$\" }\n", "")},
			compat.OptionalPropertyRemoved, false, compat.Forward, "/properties/detail/properties/code"},
		{"property renamed", side{detail: edit("        code: {", "        kode: {")},
			compat.PropertyRenamed, true, compat.Both, "/properties/detail/properties/code"},
		{"type changed", side{detail: edit("count: { type: integer,", "count: { type: string,")},
			compat.TypeChanged, true, compat.Both, "/properties/detail/properties/count/type"},
		{"type widened", side{detail: edit("count: { type: integer,", "count: { type: number,")},
			compat.TypeWidened, true, compat.Forward, "/properties/detail/properties/count/type"},
		{"new required field", side{detail: edit("required: [id, status]", "required: [id, status, count]")},
			compat.RequiredAdded, true, compat.Backward, "/properties/detail/properties/count"},
		{"new required property", side{detail: edit("required: [id, status]", "required: [id, status, owner]") + "\n        owner: { type: string }"},
			compat.RequiredAdded, true, compat.Backward, "/properties/detail/properties/owner"},
		{"required dropped", side{detail: edit("required: [id, status]", "required: [id]")},
			compat.RequiredRemoved, true, compat.Forward, "/properties/detail/properties/status"},
		{"enum narrowed", side{detail: edit("enum: [open, closed]", "enum: [open]")},
			compat.EnumNarrowed, true, compat.Backward, "/properties/detail/properties/status/enum"},
		{"enum added", side{detail: edit("origin: { type: string }", "origin: { type: string, enum: [web] }")},
			compat.EnumNarrowed, true, compat.Backward, "/properties/detail/properties/meta/properties/origin/enum"},
		{"minimum raised", side{detail: edit("minimum: 0", "minimum: 1")},
			compat.BoundTightened, true, compat.Backward, "/properties/detail/properties/count/minimum"},
		{"maximum lowered", side{detail: edit("maximum: 100", "maximum: 99")},
			compat.BoundTightened, true, compat.Backward, "/properties/detail/properties/count/maximum"},
		{"maxLength lowered", side{detail: edit("maxLength: 64", "maxLength: 32")},
			compat.BoundTightened, true, compat.Backward, "/properties/detail/properties/id/maxLength"},
		{"minLength added to items", side{detail: edit("items: { type: string }", "items: { type: string, minLength: 2 }")},
			compat.BoundTightened, true, compat.Backward, "/properties/detail/properties/tags/items/minLength"},
		{"exclusive bound", side{detail: edit("minimum: 0", "exclusiveMinimum: 0")},
			compat.BoundTightened, true, compat.Backward, "/properties/detail/properties/count/exclusiveMinimum"},
		{"pattern changed", side{detail: edit(`"^[A-Z]+$"`, `"^[A-Z]{2}$"`)},
			compat.PatternChanged, true, compat.Both, "/properties/detail/properties/code/pattern"},
		{"pattern added", side{detail: edit("origin: { type: string }", "origin: { type: string, pattern: \"^w\" }")},
			compat.PatternAdded, true, compat.Backward, "/properties/detail/properties/meta/properties/origin/pattern"},
		{"additionalProperties false added", side{detail: edit("      type: object\n      required", "      type: object\n      additionalProperties: false\n      required")},
			compat.Closed, true, compat.Backward, "/properties/detail/additionalProperties"},
		{"detail-type changed", side{event: "task.wanted"},
			compat.DetailTypeChanged, true, compat.Both, "/properties/detail-type"},
		{"source changed", side{source: "compat.other"},
			compat.SourceChanged, true, compat.Both, "/properties/source"},
		{"anyOf added", side{detail: edit("origin: { type: string }", "origin: { type: string, anyOf: [{ minLength: 1 }] }")},
			compat.ConstraintChanged, true, compat.Both, "/properties/detail/properties/meta/properties/origin/anyOf"},
		// additive
		{"optional property added", side{detail: baseDetail + "\n        note: { type: string }"},
			compat.PropertyAdded, false, "", "/properties/detail/properties/note"},
		{"enum widened", side{detail: edit("enum: [open, closed]", "enum: [open, closed, stale]")},
			compat.EnumWidened, true, compat.Forward, "/properties/detail/properties/status/enum"},
		{"maximum raised", side{detail: edit("maximum: 100", "maximum: 1000")},
			compat.BoundLoosened, true, compat.Forward, "/properties/detail/properties/count/maximum"},
		{"pattern removed", side{detail: edit(`, pattern: "^[A-Z]+$"`, "")},
			compat.PatternRemoved, true, compat.Forward, "/properties/detail/properties/code/pattern"},
	}
	base := contracts(t, side{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, bump := range []bool{false, true} {
				head := tt.head
				if bump {
					head.version = "2"
				}
				r := compat.Compare(base, contracts(t, head))
				if len(r.Findings) != 1 {
					t.Fatalf("want one finding, got %d: %+v", len(r.Findings), r.Findings)
				}
				f := r.Findings[0]
				if f.Kind != tt.kind || f.Breaking != tt.breaking || f.Direction != tt.dir || f.Pointer != tt.pointer {
					t.Fatalf("got kind %s breaking %v direction %q pointer %s (%s)\nwant %s %v %q %s", f.Kind, f.Breaking, f.Direction, f.Pointer, f.Summary, tt.kind, tt.breaking, tt.dir, tt.pointer)
				}
				want := diag.Info
				if compat.Spec(tt.kind).Effect == compat.Care {
					want = diag.Warning
				}
				if tt.breaking {
					want = map[bool]diag.Severity{false: diag.Error, true: diag.Warning}[bump]
				}
				if f.Severity != want || f.Bumped != bump {
					t.Errorf("bump=%v: severity %s bumped %v, want %s", bump, f.Severity, f.Bumped, want)
				}
				wantCode := map[diag.Severity]string{diag.Error: compat.CodeUnversioned, diag.Warning: compat.CodeVersioned}[want]
				if !tt.breaking {
					wantCode = "" // a change that needs care is no C001/C002 break
				}
				if f.Code != wantCode {
					t.Errorf("bump=%v: code %q, want %q", bump, f.Code, wantCode)
				}
				if !slices.Equal(f.Consumers, []string{"worker"}) || !slices.Equal(f.Workflows, []string{"flow"}) {
					t.Errorf("consumers %v workflows %v, want [worker] [flow]", f.Consumers, f.Workflows)
				}
				if f.Path == "" || !strings.HasPrefix(f.Path, "/events/") {
					t.Errorf("spec path %q", f.Path)
				}
				if got := len(r.Breaking()); tt.breaking != (got == 1) {
					t.Errorf("bump=%v: %d breaking findings, want breaking=%v", bump, got, tt.breaking)
				}
			}
		})
	}
}

func TestIdenticalAndEventLifecycle(t *testing.T) {
	base := contracts(t, side{})
	if r := compat.Compare(base, contracts(t, side{})); len(r.Findings) != 0 {
		t.Fatalf("identical specs: %+v", r.Findings)
	}
	r := compat.Compare(base, base[1:]) // other.happened (sorted first) removed
	var kinds []compat.Kind
	for _, f := range r.Findings {
		kinds = append(kinds, f.Kind)
	}
	if len(kinds) != 1 || kinds[0] != compat.EventRemoved || !r.Findings[0].Breaking || r.Findings[0].Side != "base" {
		t.Fatalf("removed event: %+v", r.Findings)
	}
	r = compat.Compare(base[1:], base)
	if len(r.Findings) != 1 || r.Findings[0].Kind != compat.EventAdded || r.Findings[0].Breaking {
		t.Fatalf("added event: %+v", r.Findings)
	}
}

// The research example's contracts compared with a copy whose agent.step.completed lost a
// field: the finding names the consuming classes and the workflow, and Parse reads the
// contracts back from the bytes the registry would hold.
func TestExampleAndParse(t *testing.T) {
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := compat.FromFleet(irtest.LoadSource(t, string(src)))
	cut := strings.Replace(string(src), "        ttl_seconds: { type: integer, minimum: 1 }\n", "", 1)
	head, _ := compat.FromFleet(irtest.LoadSource(t, cut))
	r := compat.Compare(base, head)
	if len(r.Findings) != 1 || r.Findings[0].Kind != compat.OptionalPropertyRemoved || r.Findings[0].Severity != diag.Warning {
		t.Fatalf("%+v", r.Findings)
	}
	f := r.Findings[0]
	if !slices.Equal(f.Consumers, []string{"coder", "researcher"}) || !slices.Equal(f.Workflows, []string{"conversation"}) {
		t.Errorf("consumers %v workflows %v", f.Consumers, f.Workflows)
	}
	if f.Path != "/events/agent.step.requested/detail/properties/ttl_seconds" || f.Side != "base" {
		t.Errorf("path %s side %s", f.Path, f.Side)
	}
	for _, c := range base {
		p, err := compat.Parse(c.Name, c.Content)
		if err != nil {
			t.Fatal(err)
		}
		if p.DetailType != c.DetailType || p.Source != c.Source {
			t.Errorf("parse %s: %s %s", c.Name, p.DetailType, p.Source)
		}
		if !compat.Equal(p.Content, c.Content) {
			t.Error("Equal of identical content is false")
		}
	}
	if _, err := compat.Parse("x", []byte("[1]")); err == nil {
		t.Error("Parse accepted a non-object")
	}
}
