package check

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// E015's fix names what the consumed event does declare, or says it declares nothing.
func TestE015DetailNamesTheDeclaredFields(t *testing.T) {
	const src = fxHead + `events:
  job.requested:
    version: 1
    source: fx.app
    detail: %s
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested, match: { tenant: [acme] } }
    step: { p95: 2s, max: 30s }
    handler: { exec: ["/app/worker"] }
`
	for _, c := range []struct{ detail, want string }{
		{`{ type: object, required: [trace_id], properties: { trace_id: { type: string }, tier: { type: string } } }`,
			"Declared in events.job.requested.detail.properties: tier, trace_id."},
		{`{ type: object }`, "Event job.requested declares no detail properties; declare tenant under events.job.requested.detail.properties."},
	} {
		var got []string
		for _, d := range Run(irtest.LoadSource(t, strings.Replace(src, "%s", c.detail, 1))) {
			if d.Code == "E015" {
				got = append(got, d.Detail)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("detail %s: E015 details %q, want one starting %q", c.detail, got, c.want)
		}
	}
}
