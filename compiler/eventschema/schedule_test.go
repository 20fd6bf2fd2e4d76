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

// The approval recorder's announcement is validated against the notify event's schema (G005).
func TestApprovalNotifyContract(t *testing.T) {
	f := irtest.Load(t, "../../examples/approvals/fleet.yaml")
	if _, ds := Generate(f); ds.HasErrors() {
		t.Fatalf("the example's contract fits: %v", ds)
	}
	n := f.Workflows[0].Steps[1].Approval.Notify
	props := n.Detail["properties"].(map[string]any)
	props["order_id"] = map[string]any{"type": "string"}
	n.Detail["required"] = append(n.Detail["required"].([]any), "order_id")
	_, ds := Generate(f)
	var got []string
	for _, d := range ds {
		if d.Code == ApprovalCode {
			got = append(got, d.Path)
		}
	}
	if len(got) != 1 || got[0] != "/workflows/refund/steps/1/approval/notify" {
		t.Errorf("a notify event requiring order_id: G005 at %v", got)
	}
}
