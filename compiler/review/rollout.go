package review

import (
	"fmt"
	"strings"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/spec"
)

// rolloutChanges says, for every class and workflow whose deployed code or definition the
// change touches, how the new version takes traffic (docs/rollout.md): through alias live
// and a CodeDeploy deployment, a Deployment's rolling update, a state machine version behind
// an alias, or in place and all at once.
func rolloutChanges(head *Side, resources, manifests []ResourceChange) []Change {
	changed := map[string]Action{}
	for _, rc := range resources {
		if rc.Action == Update || rc.Action == Replace {
			changed[rc.Address] = rc.Action
		}
	}
	rolls := map[string]bool{}
	for _, rc := range manifests {
		if len(rc.Reasons) > 0 { // the pod template changed
			rolls[rc.Address] = true
		}
	}
	var out []Change
	for _, a := range head.Fleet.Agents {
		n := strings.ReplaceAll(a.Name, "-", "_")
		var summary, detail string
		sev := Info
		switch {
		case a.Lambda != nil && changed["aws_lambda_function."+n] != "":
			summary, detail = lambdaRollout(a)
			if a.Rollout != nil && changed[terraform.ConfigObjectAddress(a)] == Replace {
				sev, detail = configChange(a, detail)
			}
		case a.K8s != nil && rolls["Deployment/"+a.K8s.Namespace+"/"+a.K8s.Deployment]:
			summary = "new pods roll out " + eksRollout(a.Rollout)
		case a.AgentCore != nil && changed["aws_bedrockagentcore_agent_runtime."+n] != "":
			summary = "the runtime's DEFAULT endpoint takes the new version at once, all traffic"
		default:
			continue
		}
		c := Change{Category: Rollout, Severity: sev, Subject: "class " + a.Name, Summary: summary, Detail: detail, Side: compat.Head}
		locate(&c, head, rolloutPath(a.Rollout, a.Path))
		out = append(out, c)
	}
	for _, w := range head.Fleet.Workflows {
		if changed["aws_sfn_state_machine."+strings.ReplaceAll(w.Name, "-", "_")] == "" {
			continue
		}
		summary := "updated in place: new executions start on the new definition, running ones keep theirs; no version to roll back to"
		if w.Rollout != nil {
			summary = "publishes a new version and moves alias " + ir.LiveAlias + " to it at once: executions started through the alias run on the version they started on; roll back by pointing the alias at the previous version"
		}
		c := Change{Category: Rollout, Severity: Info, Subject: "workflow " + w.Name, Summary: summary, Side: compat.Head}
		locate(&c, head, rolloutPath(w.Rollout, w.Path))
		out = append(out, c)
	}
	return out
}

// lambdaRollout is how a changed lambda class's new version takes traffic.
func lambdaRollout(a *ir.Agent) (summary, detail string) {
	r := a.Rollout
	if r == nil {
		return "the function is updated in place: all traffic at once, no version to roll back to", ""
	}
	summary = fmt.Sprintf("publishes a new version; alias %s stays on the running one until a CodeDeploy deployment shifts it: %s, stopped and rolled back by the class's alarms", ir.LiveAlias, r.Describe())
	detail = fmt.Sprintf("fleetc apply starts it after the apply: deployment group %s, config %s (docs/rollout.md).", r.DeploymentGroup, r.DeploymentConfig)
	return summary, detail
}

// eksRollout is how a changed eks Deployment replaces its pods.
func eksRollout(r *ir.Rollout) string {
	switch {
	case r == nil:
		return "one pod at a time, never below the running count"
	case r.Strategy == spec.StrategyAllAtOnce:
		return "all at once beside the running ones (maxSurge 100%), never below the running count"
	}
	return fmt.Sprintf("%d%% of the pods at a time, each batch ready for %s before the next, never below the running count", r.Percent, spec.FormatDuration(r.Interval))
}

// rolloutPath points a finding at the rollout setting, or at the class or workflow without one.
func rolloutPath(r *ir.Rollout, path string) string {
	if r != nil {
		return r.Path
	}
	return path
}

// configChange adds to a rolled-out lambda class's detail what becomes of the config object
// its running version reads when the change replaces it. Over a canary or linear shift,
// fleetc apply puts it back for the shift; an all-at-once deployment starts only after the
// apply, so a cold start of the running version in between finds nothing.
func configChange(a *ir.Agent, detail string) (Severity, string) {
	if terraform.KeepsOldConfig(a) {
		return Info, detail + fmt.Sprintf(" The runtime config changes too: Terraform deletes the object the running version reads, and fleetc apply puts it back (tagged %s=%s; the bucket expires it after %d days), so that version's cold starts read it for the whole shift.",
			terraform.RetainedConfigTag, terraform.RetainedConfigTagValue, terraform.RetainedConfigDays())
	}
	return Warning, detail + " The runtime config changes too: this apply deletes the config object the running version reads, and alias live leaves that version only once fleetc apply has started the deployment; a cold start of it in between fails. Apply at a quiet time."
}
