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

// TestS011TokenBudget: the research example with researcher's tokens per step declared
// draws 75 steps/s × 400 tokens × 60 = 1,800,000 tokens/min of claude-haiku-then-sonnet's
// 4,000,000; eleven times the budget's worth of tokens per step breaks it 11×, at the
// policy's tokens_per_minute.
func TestS011TokenBudget(t *testing.T) {
	at := func(tokens string) *ir.Fleet {
		src := string(mustRead(t, "../../examples/research-fleet/fleet.yaml"))
		handler := "    handler: { exec: [\"/app/researcher\"] }\n"
		if !strings.Contains(src, handler) {
			t.Fatal("research example changed: no researcher handler line")
		}
		return lowerSrc(t, strings.Replace(src, handler, handler+"    traffic: { tokens_per_step: "+tokens+" }\n", 1))
	}
	expectNone(t, at("400"), "S011")
	// 4,000,000 × 11 / (75 × 60) tokens per step.
	f := at("9778")
	expectOnly(t, f, "S011", "model policy claude-haiku-then-sonnet: projected 44,001,000 tokens/min (researcher 75 steps/s × 9,778 tokens × 60) exceed its tokens_per_minute 4,000,000, 11× the budget")
	if d := findings(f, "S011"); len(d) == 1 && d[0].Path != "/models/claude-haiku-then-sonnet/tokens_per_minute" {
		t.Errorf("S011 at %s, want the policy's tokens_per_minute", d[0].Path)
	}
}
