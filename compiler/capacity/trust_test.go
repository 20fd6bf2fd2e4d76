package capacity_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
)

// research is the research example at a traffic of its own: its classes are fed both by
// workflow steps (task tokens) and by EventBridge rules on agent.step.requested.
func research(t *testing.T, conversationsPerMinute string) *ir.Fleet {
	t.Helper()
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "conversations_per_minute: 500", "conversations_per_minute: "+conversationsPerMinute, 1)
	return lowerSrc(t, s)
}

// TestRuleFedStepsMakeNoCallbacks: only task-token steps call SendTask*. At 1,750
// conversations × 15 steps (437.5 steps/s) the research fleet's weights are researcher 3
// (Research, one SubQueries item, its rule) and coder 2 (Code, its rule); 3 of the 5 carry a
// task token, so 262.5 answers/s, not 437.5.
func TestRuleFedStepsMakeNoCallbacks(t *testing.T) {
	f := research(t, "1750")
	m := capacity.Of(f)
	answers, beats := m.CallbacksPerSec()
	if math.Abs(answers-437.5*3/5) > 1e-9 {
		t.Errorf("answers %v/s, want 262.5 (rule-fed steps make no SendTaskSuccess)", answers)
	}
	var want float64
	for _, a := range f.Agents {
		want += m.ClassStepsPerSec(a) * m.TokenShare(a) * m.HeartbeatsPerStep(a)
	}
	if math.Abs(beats-want) > 1e-9 || beats == 0 {
		t.Errorf("heartbeats %v/s, want %v (task-token steps only)", beats, want)
	}
	refill, _ := capacity.CallbackRefill(f.Region)
	if answers+beats > refill {
		t.Errorf("%v SendTask* calls/s over the %v refill at 1,750 conversations/min", answers+beats, refill)
	}
}

// TestReplicasAtExactlyMax: a class whose in-flight steps fill exactly scaling.max replicas
// is covered. 6 conversations × 11 steps a minute at 90 s is 99 in flight (float64 computes
// 99.00000000000001), 11 replicas of 9: max 11 covers it, max 10 does not.
func TestReplicasAtExactlyMax(t *testing.T) {
	src := strings.Replace(seedFleet, "scaling: { min: 1, max: 4000, per_replica: 4 }", "scaling: { min: 1, max: 11, per_replica: 9 }", 1)
	src = strings.Replace(src, "conversations_per_minute: 500\n  steps_per_conversation: 15", "conversations_per_minute: 6\n  steps_per_conversation: 11", 1)
	f := lowerSrc(t, src)
	k := capacity.Build(f, capacity.FromFleet(f)).Classes[0].KEDA
	if k == nil || k.ReplicasNeeded != 11 || !k.Covered {
		t.Errorf("KEDA %+v, want 11 replicas needed, covered by max 11", k)
	}
	f.Agents[0].Scaling.Max = 10
	if k := capacity.Build(f, capacity.FromFleet(f)).Classes[0].KEDA; k == nil || k.Covered {
		t.Errorf("KEDA %+v, want max 10 not covering 11 replicas", k)
	}
}
