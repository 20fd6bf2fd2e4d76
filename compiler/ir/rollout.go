package ir

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/spec"
)

// LiveAlias is the alias every caller of a rolled-out class function or workflow state
// machine names (event source mapping, workflows, outputs): the version behind it changes
// only through a deployment, never under a caller.
const LiveAlias = "live"

// Rollout is how a new version of a class or workflow takes traffic.
type Rollout struct {
	Strategy spec.Strategy
	Percent  int           // canary: the first share; linear: the share added each interval
	Interval time.Duration // canary: the first share's time; linear: the time between steps
	Path     string
	// DeploymentGroup and DeploymentConfig are the CodeDeploy names of a lambda class's
	// rollout ("" for other runtimes and workflows).
	DeploymentGroup, DeploymentConfig string
}

// Shifts is the number of traffic shifts after the first (canary: 1; linear: one per
// further step; all at once: 0), so Shifts × Interval is the time between the first and
// the last shift.
func (r *Rollout) Shifts() int {
	switch r.Strategy {
	case spec.StrategyCanary:
		return 1
	case spec.StrategyLinear:
		return (100+r.Percent-1)/r.Percent - 1
	}
	return 0
}

// IntervalUnits is Interval in CodeDeploy's interval unit (whole minutes; check W020 refuses
// the rest).
func (r *Rollout) IntervalUnits() int64 { return int64(r.Interval / awslimits.CodeDeployIntervalUnit) }

// Describe is the rollout in one phrase: "canary 10% for 5m, then the rest".
func (r *Rollout) Describe() string {
	switch r.Strategy {
	case spec.StrategyCanary:
		return fmt.Sprintf("canary %d%% for %s, then the rest", r.Percent, spec.FormatDuration(r.Interval))
	case spec.StrategyLinear:
		return fmt.Sprintf("linear %d%% more every %s", r.Percent, spec.FormatDuration(r.Interval))
	}
	return "all at once"
}

// CodeDeployApp is the fleet's CodeDeploy application (compute platform Lambda): one
// deployment group per rolled-out lambda class.
func CodeDeployApp(f *Fleet) string { return f.Name + "-workers" }

// CodeDeployRoleName is the role CodeDeploy assumes to move the classes' live aliases.
func CodeDeployRoleName(f *Fleet) string { return f.Name + "-codedeploy" }

// AllAtOnceConfig is CodeDeploy's predefined Lambda configuration that shifts everything at once.
const AllAtOnceConfig = "CodeDeployDefault.LambdaAllAtOnce"

// deploymentConfigName names a custom configuration by what it does, so classes with the
// same rollout share one and a changed rollout is a new configuration (they are immutable).
func deploymentConfigName(fleet string, r *Rollout) string {
	if r.Strategy == spec.StrategyAllAtOnce {
		return AllAtOnceConfig
	}
	return fmt.Sprintf("%s-%s-%dpct-%dm", fleet, r.Strategy, r.Percent, r.IntervalUnits())
}

// lowerRollout resolves a class's or workflow's rollout; nil when the spec has none.
func lowerRollout(sr *spec.Rollout, path string) *Rollout {
	if sr == nil {
		return nil
	}
	r := &Rollout{Strategy: sr.Strategy, Path: path + "/rollout"}
	if r.Strategy != spec.StrategyAllAtOnce {
		r.Percent = valueOr(sr.Percent, Defaults.RolloutPercent)
		r.Interval = durationOr(sr.Interval, Defaults.RolloutInterval)
	}
	return r
}

// lowerAgentRollout sets a class's rollout and, for a lambda class, its CodeDeploy names.
func (l *lowerer) lowerAgentRollout(a *Agent, sa *spec.Agent) {
	a.Rollout = lowerRollout(sa.Rollout, a.Path)
	if a.Rollout == nil || a.Lambda == nil {
		return
	}
	a.Rollout.DeploymentGroup = a.Lambda.FunctionName
	a.Rollout.DeploymentConfig = deploymentConfigName(l.f.Name, a.Rollout)
}

// RolloutLambdas are the lambda classes with a rollout, in the fleet's order.
func (f *Fleet) RolloutLambdas() []*Agent {
	var out []*Agent
	for _, a := range f.Agents {
		if a.Rollout != nil && a.Lambda != nil {
			out = append(out, a)
		}
	}
	return out
}
