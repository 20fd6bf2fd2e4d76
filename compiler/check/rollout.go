package check

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// rolloutRules hold a rollout to what the runtime under it can do (docs/rollout.md).
var rolloutRules = []Rule{
	{
		ID: "W020", Category: "workers", Severity: diag.Error,
		Summary: "rollout interval: whole minutes, the whole lambda shift within CodeDeploy's 48 hours",
		Explain: `A lambda class's rollout is a CodeDeploy deployment: its canaryInterval or linearInterval
is a whole number of minutes (at least 1), and a Lambda deployment may take at most 48
hours between its first and last traffic shift. A canary shifts once after the interval; a
linear rollout of p percent shifts ceil(100 / p) - 1 more times, one interval apart.
An eks class's interval is its Deployment's minReadySeconds: whole seconds.
Formula: lambda: interval = n × 1m, n ≥ 1; shifts × interval ≤ 48h.
Fix: round the interval to minutes, or raise percent / shorten interval.`,
		Check: checkRolloutInterval,
	},
	{
		ID: "W021", Category: "workers", Severity: diag.Error,
		Summary: "rollout on an agentcore class is not supported",
		Explain: `An agentcore class runs behind its AgentCore runtime's DEFAULT endpoint, which moves to
every new runtime version at once; fleetc publishes no versions or endpoints to shift
between, so a rollout there would promise a canary that never happens.
Fix: leave rollout out of agentcore classes (each update takes all traffic at once), or
run the class on lambda or eks where fleetc can shift traffic.`,
		Check: checkRolloutRuntime,
	},
	{
		ID: "W022", Category: "workers", Severity: diag.Warning,
		Summary: "eks rollout: Kubernetes has no canary; it rolls in steps of percent",
		Explain: `A Deployment's RollingUpdate replaces pods in batches: fleetc sets maxSurge to the
rollout's percent, maxUnavailable to 0 and minReadySeconds to its interval, so each batch
runs ready for the interval before the next starts. That is a linear rollout: a canary
(percent, then a pause, then the rest) needs a progressive-delivery controller (Argo
Rollouts, Flagger). The alarm gate is an operator's: docs/rollout.md says how to pause and
undo a rollout when the class's alarms fire.
Fix: strategy: linear on eks classes, or accept linear steps.`,
		Check: checkEKSCanary,
	},
	{
		ID: "S020", Category: "workflows", Severity: diag.Error,
		Summary: "workflow rollout: all_at_once only",
		Explain: `A workflow with a rollout publishes each definition as a state machine version behind
alias live; executions started through it run to the end on the version they started on.
Step Functions can split an alias between two versions by weight, but nothing shifts the
weight over time (no CodeDeploy for state machines), so canary and linear would stay at
their first step for good.
Fix: strategy: all_at_once (roll back by pointing the alias at the previous version).`,
		Check: checkWorkflowRollout,
	},
}

func checkRolloutInterval(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		ro := a.Rollout
		if ro == nil || ro.Strategy == spec.StrategyAllAtOnce || a.Lambda == nil {
			continue
		}
		unit := awslimits.CodeDeployIntervalUnit
		shift := time.Duration(ro.Shifts()) * ro.Interval
		if ro.Interval%unit == 0 && ro.Interval >= unit && shift <= awslimits.CodeDeployLambdaMaxShift {
			continue
		}
		r.Add(at(f, ro.Path+"/interval", ro.Path),
			fmt.Sprintf("%s: rollout (%s) shifts traffic over %s; CodeDeploy takes whole-minute intervals (≥ 1m) and at most %dh from first to last shift",
				a.Name, ro.Describe(), spec.FormatDuration(shift), int(awslimits.CodeDeployLambdaMaxShift.Hours())),
			"Set interval to a whole number of minutes, and keep (ceil(100 / percent) - 1) × interval within 48h for linear, interval within 48h for canary.")
	}
}

func checkRolloutRuntime(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Rollout != nil && a.AgentCore != nil {
			r.Add(at(f, a.Rollout.Path, a.Path), fmt.Sprintf("%s: agentcore classes cannot roll out (%s)", a.Name, a.Rollout.Describe()),
				"Remove rollout: the AgentCore runtime's DEFAULT endpoint takes every new version at once.")
		}
	}
}

func checkEKSCanary(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Rollout != nil && a.K8s != nil && a.Rollout.Strategy == spec.StrategyCanary {
			r.Warn(at(f, a.Rollout.Path+"/strategy", a.Rollout.Path),
				fmt.Sprintf("%s: eks has no canary; the Deployment rolls %d%% of the pods at a time, each batch ready for %s",
					a.Name, a.Rollout.Percent, spec.FormatDuration(a.Rollout.Interval)),
				"Write strategy: linear to say what happens, or use a progressive-delivery controller for a true canary.")
		}
	}
}

func checkWorkflowRollout(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		if ro := w.Rollout; ro != nil && ro.Strategy != spec.StrategyAllAtOnce {
			r.Add(at(f, ro.Path+"/strategy", ro.Path), fmt.Sprintf("workflow %s: rollout %s; Step Functions shifts no alias weight by itself", w.Name, ro.Describe()),
				"Set strategy: all_at_once: each apply publishes a version and points alias live at it; in-flight executions finish on theirs.")
		}
	}
}
