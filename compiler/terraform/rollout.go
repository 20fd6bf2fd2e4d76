package terraform

import (
	"fmt"
	"slices"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// The outputs a rollout's deployment reads (compiler/deploy starts it after apply).
const (
	OutputCodeDeployApp       = "codedeploy_app"
	OutputDeploymentGroups    = "codedeploy_deployment_groups"
	OutputPublishedVersions   = "lambda_published_versions"
	OutputLiveVersions        = "lambda_live_versions"
	OutputStateMachineAliases = "state_machine_alias_arns"
)

// FunctionAddress is the Terraform address of a lambda class's function.
func FunctionAddress(a *ir.Agent) string { return "aws_lambda_function." + local(a.Name) }

// PartRollout owns rollout.tf: the fleet's CodeDeploy application, its service role and the
// deployment configurations its lambda classes' rollouts name.
const PartRollout = "rollout"

// codeDeployLocal is the Terraform name of the fleet-wide CodeDeploy blocks.
const codeDeployLocal = "workers"

// The CodeDeploy values a Lambda deployment group with traffic shifting takes.
const (
	computePlatformLambda = "Lambda"
	// Lambda deployments are blue/green with traffic control: CodeDeploy moves the alias.
	deploymentTypeBlueGreen = "BLUE_GREEN"
	deploymentWithTraffic   = "WITH_TRAFFIC_CONTROL"
)

// trafficRouting is CodeDeploy's name of each shifting strategy, and the block carrying it.
var trafficRouting = map[spec.Strategy]struct{ typ, block string }{
	spec.StrategyCanary: {"TimeBasedCanary", "time_based_canary"},
	spec.StrategyLinear: {"TimeBasedLinear", "time_based_linear"},
}

// rolloutEvents roll a deployment back: it failed, or a gate alarm stopped it.
var rolloutEvents = []string{"DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"}

// liveAlias emits the alias callers of a rolled-out class function name, and returns its
// ARN. Terraform creates it on the first version and never moves it: publish = true makes
// every apply that changes the function a new version, and a CodeDeploy deployment (docs/rollout.md)
// shifts the alias to it, so ignore_changes keeps Terraform from undoing or racing that shift.
func (g *gen) liveAlias(fl *file, a *ir.Agent, n string) tokens {
	g.claim("aws_lambda_alias", n, a.Rollout.Path)
	al := fl.resource("aws_lambda_alias", n,
		"The version callers run: moved only by a CodeDeploy deployment ("+a.Rollout.Describe()+"), rolled back on a gate alarm.")
	al.set("name", str(ir.LiveAlias))
	al.set("function_name", ref("aws_lambda_function", n, "arn"))
	al.set("function_version", ref("aws_lambda_function", n, "version"))
	al.nested("lifecycle").set("ignore_changes", list(leaf("function_version"), leaf("routing_config")))
	return ref("aws_lambda_alias", n, "arn")
}

// aliasARN is a rolled-out class function's live alias ARN spelled from the function's ARN,
// for policies: a qualified invoke is authorised against the qualified ARN only, and a
// policy document naming the alias resource would be the emulator's to rewrite.
func aliasARN(n string) tokens {
	return tmpl(interp(ref("aws_lambda_function", n, "arn")), lit(":"+ir.LiveAlias))
}

// functionTarget is what callers of class a's function name: its live alias when it rolls
// out, else the function.
func functionTarget(a *ir.Agent) tokens {
	n := local(a.Name)
	if a.Rollout != nil {
		return ref("aws_lambda_alias", n, "arn")
	}
	return ref("aws_lambda_function", n, "arn")
}

// functionPolicyTarget is functionTarget for a policy's resources.
func functionPolicyTarget(a *ir.Agent) tokens {
	n := local(a.Name)
	if a.Rollout != nil {
		return aliasARN(n)
	}
	return ref("aws_lambda_function", n, "arn")
}

// liveErrorsAlarm alarms when the live alias's invocations fail (the worker crashes, times
// out or cannot start): the gate that catches a bad version, which a canary sends only a share
// of the traffic to, before the queue alarms see it.
func (g *gen) liveErrorsAlarm(fl *file, a *ir.Agent, n string) {
	g.claim("aws_cloudwatch_metric_alarm", n+"_live_errors", a.Rollout.Path)
	al := fl.resource("aws_cloudwatch_metric_alarm", n+"_live_errors")
	al.set("alarm_name", str(liveErrorsAlarm(a)))
	al.set("alarm_description", str("A "+a.Name+" invocation through alias "+ir.LiveAlias+" failed (crash, timeout or failed start): CodeDeploy stops the shift and rolls back."))
	al.set("namespace", str("AWS/Lambda"))
	al.set("metric_name", str("Errors"))
	al.set("dimensions", object(
		kv{"FunctionName", str(a.Lambda.FunctionName)},
		kv{"Resource", str(a.Lambda.FunctionName + ":" + ir.LiveAlias)},
	))
	al.set("statistic", str("Sum"))
	al.set("period", num(60))
	al.set("evaluation_periods", num(1))
	al.set("comparison_operator", str("GreaterThanThreshold"))
	al.set("threshold", num(0))
	al.set("treat_missing_data", str("notBreaching"))
	g.alarmNotify(al)
}

// The names of a class's alarms, spelled once for the alarms and the deployment group.
func ageAlarm(q ir.Queue) string             { return q.Name + "-age" }
func stallAlarm(q ir.Queue) string           { return q.Name + "-stalled" }
func depthAlarmName(queueName string) string { return queueName + "-depth" }
func liveErrorsAlarm(a *ir.Agent) string {
	return a.Lambda.FunctionName + "-" + ir.LiveAlias + "-errors"
}

// gateAlarms are the alarms that stop a class's deployment: its live alias's errors, then the
// class's queue alarms (age, dead letters, stall), by name; and their resources. The names are
// literals, not references, so the group can be left out wherever the alarms are (an
// emulator without CloudWatch alarms) without a reference inside a nested block to rewrite;
// depends_on orders the alarms first.
func gateAlarms(a *ir.Agent) (names, resources []tokens) {
	n := local(a.Name)
	for _, al := range []struct{ local, name string }{
		{n + "_live_errors", liveErrorsAlarm(a)}, {n + "_age", ageAlarm(a.Queue)},
		{n + "_dlq_depth", depthAlarmName(a.DLQ.Name)}, {n + "_stalled", stallAlarm(a.Queue)},
	} {
		names = append(names, str(al.name))
		resources = append(resources, ref("aws_cloudwatch_metric_alarm", al.local))
	}
	return names, resources
}

// deploymentGroup emits the class's CodeDeploy deployment group: the deployment that moves
// its live alias shifts traffic as the rollout says, stops on any gate alarm and rolls back.
func (g *gen) deploymentGroup(fl *file, a *ir.Agent, n string) {
	r := a.Rollout
	g.claim("aws_codedeploy_deployment_group", n, r.Path)
	dg := fl.resource("aws_codedeploy_deployment_group", n,
		"Deploys a new version of "+a.Lambda.FunctionName+" by moving alias "+ir.LiveAlias+": "+r.Describe()+".")
	dg.set("app_name", ref("aws_codedeploy_app", codeDeployLocal, "name"))
	dg.set("deployment_group_name", str(r.DeploymentGroup))
	dg.set("service_role_arn", ref("aws_iam_role", codeDeployLocal+"_codedeploy", "arn"))
	if r.Strategy == spec.StrategyAllAtOnce {
		dg.set("deployment_config_name", str(r.DeploymentConfig))
	} else {
		dg.set("deployment_config_name", ref("aws_codedeploy_deployment_config", configLocal(r), "id"))
	}
	st := dg.nested("deployment_style")
	st.set("deployment_option", str(deploymentWithTraffic))
	st.set("deployment_type", str(deploymentTypeBlueGreen))
	ac := dg.nested("alarm_configuration")
	ac.set("enabled", boolean(true))
	names, alarms := gateAlarms(a)
	ac.set("alarms", list(names...))
	rb := dg.nested("auto_rollback_configuration")
	rb.set("enabled", boolean(true))
	rb.set("events", strs(rolloutEvents...))
	dg.set("depends_on", list(alarms...))
}

// rollout emits rollout.tf when a lambda class rolls out: the CodeDeploy application, its
// service role and one deployment configuration per distinct shifting rollout.
func (g *gen) rollout() {
	classes := g.f.RolloutLambdas()
	if len(classes) == 0 {
		return
	}
	fl := g.file("rollout.tf").owner(PartRollout, classes[0].Rollout.Path)
	g.claim("aws_codedeploy_app", codeDeployLocal, classes[0].Rollout.Path)
	app := fl.resource("aws_codedeploy_app", codeDeployLocal, "The fleet's Lambda deployments: one deployment group per class with a rollout.")
	app.set("name", str(ir.CodeDeployApp(g.f)))
	app.set("compute_platform", str(computePlatformLambda))

	var aliases []tokens
	seen := map[string]bool{}
	for _, a := range classes {
		n := local(a.Name)
		aliases = append(aliases, ref("aws_lambda_function", n, "arn"), aliasARN(n))
		r := a.Rollout
		if r.Strategy == spec.StrategyAllAtOnce || seen[r.DeploymentConfig] {
			continue
		}
		seen[r.DeploymentConfig] = true
		g.deploymentConfig(fl, r)
	}
	st := []stmt{
		{sid: "MoveLiveAliases", actions: []string{"lambda:GetAlias", "lambda:GetProvisionedConcurrencyConfig", "lambda:UpdateAlias"}, resources: aliases},
		{sid: "ReadGateAlarms", actions: []string{"cloudwatch:DescribeAlarms"}, resources: []tokens{str("*")}},
	}
	trust := serviceTrust("codedeploy.amazonaws.com", true, nil, "sts:AssumeRole")
	g.role(fl, codeDeployLocal+"_codedeploy", ir.CodeDeployRoleName(g.f), classes[0].Rollout.Path, trust, st,
		"Role CodeDeploy assumes to shift the classes' live aliases and read their gate alarms, nothing else.")
}

// deploymentConfig emits one custom Lambda deployment configuration. Configurations are
// immutable and named by what they do (ir.deploymentConfigName): a changed rollout is a new
// one, created before the group moves to it and the old one deleted.
func (g *gen) deploymentConfig(fl *file, r *ir.Rollout) {
	n := configLocal(r)
	g.claim("aws_codedeploy_deployment_config", n, r.Path)
	dc := fl.resource("aws_codedeploy_deployment_config", n)
	dc.set("deployment_config_name", str(r.DeploymentConfig))
	dc.set("compute_platform", str(computePlatformLambda))
	tr := trafficRouting[r.Strategy]
	trc := dc.nested("traffic_routing_config")
	trc.set("type", str(tr.typ))
	b := trc.nested(tr.block)
	b.set("interval", num(r.IntervalUnits()))
	b.set("percentage", num(int64(r.Percent)))
	dc.nested("lifecycle").set("create_before_destroy", boolean(true))
}

// configLocal is the Terraform name of a rollout's deployment configuration: canary_10pct_5m.
func configLocal(r *ir.Rollout) string {
	return fmt.Sprintf("%s_%dpct_%dm", r.Strategy, r.Percent, r.IntervalUnits())
}

// rolloutWorkflows are the workflows published behind an alias, in the fleet's order.
func rolloutWorkflows(f *ir.Fleet) []*ir.Workflow {
	return slices.DeleteFunc(slices.Clone(f.Workflows), func(w *ir.Workflow) bool { return w.Rollout == nil })
}
