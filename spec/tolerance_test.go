package spec

import (
	"strings"
	"testing"
)

// TestToleratedFailureIsWholePercent: Step Functions' ToleratedFailurePercentage holds a whole
// percent, so fleet.yaml accepts only integers 0–100 and a fraction is refused where written
// (issue 7 item 10), instead of being rounded with a warning.
func TestToleratedFailureIsWholePercent(t *testing.T) {
	const src = `version: 1
fleet: fx
region: us-east-1
bus: { name: fx }
events:
  e: { version: 1, source: fx.app, detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } } }
agents:
  a: { runtime: eks, step: { p95: 1s, max: 2s }, handler: { exec: [/a] } }
workflows:
  w:
    steps:
      - fan_out: { items: $.xs, agent: a, tolerated_failure_percent: TOL }
`
	for tol, want := range map[string]string{"2.5": "P003", "101": "P008", "-1": "P008", "10": ""} {
		file, ds := Load("fleet.yaml", []byte(strings.Replace(src, "TOL", tol, 1)))
		if want == "" {
			if ds.HasErrors() || file == nil {
				t.Errorf("%s: %v", tol, ds)
				continue
			}
			if got := *file.Fleet.Workflows["w"].Steps[0].FanOut.ToleratedFailurePercent; got != 10 {
				t.Errorf("%s: loaded %d", tol, got)
			}
			continue
		}
		found := false
		for _, d := range ds {
			if d.Code == want && strings.HasSuffix(d.Path, "/tolerated_failure_percent") && d.Subject != nil && d.Subject.Start.Line == 12 {
				found = true
			}
		}
		if !found {
			t.Errorf("tolerated_failure_percent %s: want %s at line 12, got %v", tol, want, ds)
		}
	}
}
