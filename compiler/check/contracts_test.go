package check

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// A fan-out item carries only item, index, trace_id and the group key, so a required field
// the consumed event carries is still unfilled on the fan-out path; a plain workflow step
// reads the execution input, whose generated schema requires the field.
func TestE020FanOutPath(t *testing.T) {
	const src = `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
defaults: { queue: { max_receives: 3 } }
worker: { image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fx-worker:1.0.0 }
events:
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
