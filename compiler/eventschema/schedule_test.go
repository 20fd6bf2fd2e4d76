package eventschema

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// A schedule's detail is validated against its event's generated schema (G004), at the
// schedule's detail, and a valid one passes.
func TestScheduleDetail(t *testing.T) {
	const src = `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
events:
  tick:
    version: 1
    source: fx.clock
    detail:
      type: object
      required: [trace_id]
      properties:
        trace_id: { type: string }
        n: { type: integer, maximum: 3 }
agents:
  a: { runtime: lambda, consumes: { event: tick }, step: { p95: 1s, max: 30s }, handler: { exec: [/a] } }
schedules:
  s: { rate: "5 minutes", event: tick, detail: DETAIL }
`
	for _, c := range []struct {
		detail string
		ok     bool
	}{
		{"{ trace_id: t, n: 3 }", true}, {"{ trace_id: t, n: 4 }", false}, {"{ n: 1 }", false}, {"{ trace_id: 7 }", false},
	} {
		f := irtest.LoadSource(t, strings.Replace(src, "DETAIL", c.detail, 1))
		_, ds := Generate(f)
		var got []string
		for _, d := range ds {
			if d.Code == ScheduleCode {
				got = append(got, d.Path)
			}
		}
		if c.ok && len(got) != 0 || !c.ok && (len(got) != 1 || got[0] != "/schedules/s/detail") {
			t.Errorf("detail %s: G004 at %v, want ok=%v", c.detail, got, c.ok)
		}
	}
}
