package check

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
)

// researchAt is the research example (classes fed by task-token workflow steps and by
// EventBridge rules) at another traffic.
func researchAt(t *testing.T, conversationsPerMinute string) *ir.Fleet {
	t.Helper()
	src := string(mustRead(t, "../../examples/research-fleet/fleet.yaml"))
	if !strings.Contains(src, "conversations_per_minute: 500") {
		t.Fatal("research example no longer states 500 conversations/min")
	}
	return lowerSrc(t, strings.Replace(src, "conversations_per_minute: 500", "conversations_per_minute: "+conversationsPerMinute, 1))
}

// TestS007RuleFedSteps: rule-fed steps make no SendTask* call, so the research example fits
// the 500/s refill at 1,750 conversations/min (262.5 answers/s + heartbeats); at 3,000 its
// task-token steps alone (450/s) plus their heartbeats do not.
func TestS007RuleFedSteps(t *testing.T) {
	expectNone(t, researchAt(t, "1750"), "S007")
	if len(findings(researchAt(t, "3000"), "S007")) != 1 {
		t.Error("S007 silent at 3,000 conversations/min")
	}
}
