package ir

import (
	"testing"
	"time"

	"github.com/fleetc/fleetc/spec"
)

// TestRolloutLowering: percent and interval default to CodeDeploy's canary preset, all at
// once has neither, and a lambda class's configuration is named by what it does.
func TestRolloutLowering(t *testing.T) {
	thirty := 30
	for _, tc := range []struct {
		in       spec.Rollout
		pct      int
		interval time.Duration
		shifts   int
		config   string
	}{
		{spec.Rollout{Strategy: spec.StrategyCanary}, 10, 5 * time.Minute, 1, "fx-canary-10pct-5m"},
		{spec.Rollout{Strategy: spec.StrategyLinear, Percent: &thirty, Interval: &spec.Duration{Duration: 2 * time.Minute}}, 30, 2 * time.Minute, 3, "fx-linear-30pct-2m"},
		{spec.Rollout{Strategy: spec.StrategyAllAtOnce}, 0, 0, 0, AllAtOnceConfig},
	} {
		r := lowerRollout(&tc.in, "/agents/a")
		if r.Percent != tc.pct || r.Interval != tc.interval || r.Shifts() != tc.shifts || r.Path != "/agents/a/rollout" {
			t.Errorf("%s: %+v shifts %d", tc.in.Strategy, r, r.Shifts())
		}
		if got := deploymentConfigName("fx", r); got != tc.config {
			t.Errorf("%s: config %q, want %q", tc.in.Strategy, got, tc.config)
		}
	}
	if lowerRollout(nil, "/agents/a") != nil {
		t.Error("no rollout lowered to one")
	}
}
