package check

import (
	"github.com/fleetc/fleetc/compiler/ir"
	"testing"
	"time"
)

// irBranches reach the report calls that fleet.yaml cannot: values the schema bounds or
// that fleetc itself sets (a hand-built IR or a future lowering could still break them).
// TestEveryReportReached runs them with the fixtures.
var irBranches = map[string]func(t *testing.T){
	"E005 attempts": func(t *testing.T) { mutate(t, "E005", func(f *ir.Fleet) { f.Agents[0].Delivery.Attempts = 186 }) },
	"E010 batch":    TestE010BatchLimit,
	"E014 version":  func(t *testing.T) { mutate(t, "E014", func(f *ir.Fleet) { f.Events[0].Version = 0 }) },
	"Q002 dlq visibility": func(t *testing.T) {
		mutate(t, "Q002", func(f *ir.Fleet) { f.Agents[0].DLQ.Visibility = 13 * time.Hour })
	},
	"Q002 target dlq": func(t *testing.T) { mutate(t, "Q002", func(f *ir.Fleet) { f.TargetDLQ.Visibility = 13 * time.Hour }) },
	"Q003 target dlq": func(t *testing.T) {
		mutate(t, "Q003", func(f *ir.Fleet) { f.TargetDLQ.Retention = 15 * 24 * time.Hour })
	},
	"W002 quota":          TestW002ConcurrencyQuota,
	"W003 function":       func(t *testing.T) { mutate(t, "W003", func(f *ir.Fleet) { f.Agents[0].Lambda.Timeout = time.Second }) },
	"S007 heartbeats":     TestS007HeartbeatCadence,
	"S010 execution type": TestS010ExecutionType,
	"S010 tolerance":      TestS010Tolerance,
	"I002 not required": func(t *testing.T) {
		mutate(t, "I002", func(f *ir.Fleet) {
			f.Events[0].Detail["properties"].(map[string]any)["extra"] = map[string]any{"type": "string"}
			f.Agents[0].Idempotency.Key = []string{"extra"}
		})
	},
}

// mutate breaks a valid fleet and expects the rule to report it.
func mutate(t *testing.T, id string, breakIt func(f *ir.Fleet)) {
	t.Helper()
	f := lowerSrc(t, fleetWith(1))
	expectNone(t, f, id)
	breakIt(f)
	if len(findings(f, id)) == 0 {
		t.Errorf("%s does not fire on the broken IR", id)
	}
}

func TestIRBranches(t *testing.T) {
	for name, fn := range irBranches {
		t.Run(name, fn)
	}
}
