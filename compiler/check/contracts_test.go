package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/spec/diag"
)

// fxHead opens the fleets of the rule tests below: everything but events, agents and workflows.
const fxHead = `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
defaults: { queue: { max_receives: 3 } }
worker: { image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fx-worker:1.0.0 }
`

// A fan-out item carries only item, index, trace_id and the group key, so a required field
// the consumed event carries is still unfilled on the fan-out path; a plain workflow step
// reads the execution input, whose generated schema requires the field.
func TestE020FanOutPath(t *testing.T) {
	const src = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, tenant]
      properties: { trace_id: { type: string }, tenant: { type: string } }
  job.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, tenant]
      properties: { trace_id: { type: string }, tenant: { type: string } }
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    emits: [job.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
workflows:
  flow:
    steps:
      - { name: One, agent: worker, timeout: 5m }
      - name: Many
        fan_out: { items: $.jobs, agent: worker, max_concurrency: 10, timeout: 5m }
`
	var got []string
	for _, d := range Run(irtest.LoadSource(t, src)) {
		if d.Code == "E020" {
			got = append(got, d.Summary)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `"tenant"`) || !strings.Contains(got[0], "workflow flow step Many") {
		t.Errorf("E020 findings %q, want one for the fan-out path only", got)
	}
}

// Which input source a carried field is judged by. Only the consumed event can declare a
// field without requiring it; a fan-out item carries its fields (here the FIFO group field)
// for sure. Each row fails when one conjunct of the consumed-event test (in
// checkRequiredField and carriedEverywhere) is dropped or negated.
func TestE020CarriedFieldSources(t *testing.T) {
	const head = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id%s]
      properties: { trace_id: { type: string }, tenant: { type: string } }
  job.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, tenant]
      properties: { trace_id: { type: string }, tenant: { type: string } }
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    ordering: { fifo: true, group_by: tenant }
    emits: [job.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
`
	const output = `    output:
      type: object
      properties: { tenant: { type: string } }
`
	const fanOut = `workflows:
  flow:
    steps:
      - name: Many
        fan_out: { items: $.jobs, agent: worker, max_concurrency: 10, timeout: 5m }
`
	for _, c := range []struct {
		name             string
		required         string // what job.requested requires after trace_id
		withOutput       bool   // the class's output declares tenant without requiring it
		withFanOut       bool
		want             []string // E020 summaries' distinguishing parts, in order
		wantAtOutputProp bool
	}{
		{name: "consumed event requires it, fan-out carries it", required: ", tenant", withFanOut: true},
		{name: "consumed event declares it only", required: "", want: []string{"which event job.requested declares but does not require"}},
		{name: "declared only, fan-out carries it too", required: "", withFanOut: true, want: []string{"which event job.requested declares but does not require"}},
		{name: "output declares it, consumed event requires it", required: ", tenant", withOutput: true},
		{name: "output declares it, consumed event requires it, fan-out carries it", required: ", tenant", withOutput: true, withFanOut: true},
		{name: "output and consumed event declare it only", required: "", withOutput: true, want: []string{"which the class's output declares but does not require"}, wantAtOutputProp: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(head, "%s", c.required, 1)
			if c.withOutput {
				src += output
			}
			if c.withFanOut {
				src += fanOut
			}
			var got []string
			for _, d := range Run(irtest.LoadSource(t, src)) {
				if d.Code != "E020" {
					continue
				}
				got = append(got, d.Summary)
				if onOutput := strings.HasPrefix(d.Path, "/agents/worker/output/"); onOutput != c.wantAtOutputProp {
					t.Errorf("finding at %s: %s", d.Path, d.Summary)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("E020 findings %q, want %d: %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], `"tenant"`) || !strings.Contains(got[i], w) {
					t.Errorf("finding %q, want one about \"tenant\" %s", got[i], w)
				}
			}
		})
	}
}

// A class that only a fan-out step reaches consumes no event: the consumed-event test must not
// look at one. The item's index is carried for sure, with or without the output declaring it.
func TestE020FanOutOnlyClass(t *testing.T) {
	const src = fxHead + `events:
  part.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, index]
      properties: { trace_id: { type: string }, index: { type: integer } }
agents:
  part:
    runtime: eks
    emits: [part.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/part"] }
%sworkflows:
  flow:
    steps:
      - name: Many
        fan_out: { items: $.parts, agent: part, max_concurrency: 10, timeout: 5m }
`
	for _, output := range []string{"", "    output: { type: object, properties: { index: { type: integer } } }\n"} {
		for _, d := range Run(irtest.LoadSource(t, strings.Replace(src, "%s", output, 1))) {
			if d.Code == "E020" {
				t.Errorf("output %q: %s: %s", output, d.Path, d.Summary)
			}
		}
	}
}

// An output property fills an emitted field when their types share a value: integer and
// number do, both ways (an integer is a number; a whole number is an integer); string and
// either do not.
func TestE020OutputTypes(t *testing.T) {
	const src = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id]
      properties: { trace_id: { type: string } }
  job.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, n]
      properties: { trace_id: { type: string }, n: { type: %s } }
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    emits: [job.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
    output:
      type: object
      required: [n]
      properties: { n: { type: %s } }
`
	for _, c := range []struct{ out, event, want string }{
		{"integer", "number", ""},
		{"number", "integer", ""},
		{"integer", "integer", ""},
		{"string", "number", `class worker's output declares "n" as string, but job.done (events.job.done.detail.properties.n at line 21:49) declares it as number: no result can fill it`},
		{"string", "integer", `class worker's output declares "n" as string, but job.done (events.job.done.detail.properties.n at line 21:49) declares it as integer: no result can fill it`},
		{"number", "string", `class worker's output declares "n" as number, but job.done (events.job.done.detail.properties.n at line 21:49) declares it as string: no result can fill it`},
	} {
		var got []string
		for _, d := range Run(irtest.LoadSource(t, fmt.Sprintf(src, c.event, c.out))) {
			if d.Code == "E020" {
				got = append(got, d.Summary)
			}
		}
		if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("output %s into %s: E020 %q, want %q", c.out, c.event, got, c.want)
		}
	}
}

// An output whose bound is looser than the emitted field's is a warning, in the keyword's
// direction only: above an upper bound, below a lower one. Equal or tighter is silent.
func TestE020OutputBounds(t *testing.T) {
	const src = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id]
      properties: { trace_id: { type: string } }
  job.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, n]
      properties: { trace_id: { type: string }, n: { type: %[1]s, %[2]s: 5 } }
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    emits: [job.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
    output:
      type: object
      required: [n]
      properties: { n: { type: %[1]s, %[2]s: %[3]d } }
`
	for _, c := range []struct {
		kw, typ string
		upper   bool
	}{
		{"maxLength", "string", true}, {"maxItems", "array", true}, {"maximum", "number", true},
		{"minLength", "string", false}, {"minItems", "array", false}, {"minimum", "number", false},
	} {
		looser, tighter := 6, 4
		if !c.upper {
			looser, tighter = 4, 6
		}
		for _, v := range []int{looser, 5, tighter} {
			var got []string
			for _, d := range Run(irtest.LoadSource(t, fmt.Sprintf(src, c.typ, c.kw, v))) {
				if d.Code == "E020" {
					got = append(got, d.Summary)
				}
			}
			want := ""
			if v == looser {
				want = fmt.Sprintf(`class worker's output "n" has %s %d, looser than job.done's (events.job.done.detail.properties.n at line 21:49)`, c.kw, v)
			}
			if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
				t.Errorf("%s %d into %s 5: E020 %q, want %q", c.kw, v, c.kw, got, want)
			}
		}
	}
}

// A type on one side only constrains nothing: an emitted field without a type takes any
// result. What nothing fills is an error whose fix lists what the source does carry.
func TestE020UntypedAndUnfilled(t *testing.T) {
	const src = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id]
      properties: { trace_id: { type: string } }
  job.done:
    version: 1
    source: fx.app
    detail:
      type: object
      required: [trace_id, n%s]
      properties: { trace_id: { type: string }, n: { description: any }, tenant: { type: string } }
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    emits: [job.done]
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
    output:
      type: object
      required: [n]
      properties: { n: { type: string } }
`
	e020 := func(required string) []*diag.Diagnostic {
		var out []*diag.Diagnostic
		for _, d := range Run(irtest.LoadSource(t, fmt.Sprintf(src, required))) {
			if d.Code == "E020" {
				out = append(out, d)
			}
		}
		return out
	}
	if ds := e020(""); len(ds) != 0 {
		t.Errorf("a string output into an untyped field: E020 %v", ds)
	}
	ds := e020(", tenant")
	if len(ds) != 1 || !strings.Contains(ds[0].Summary, "which nothing fills") || !strings.Contains(ds[0].Detail, "job.requested: trace_id)") {
		t.Fatalf("tenant, which nothing fills: E020 %v", ds)
	}
}
