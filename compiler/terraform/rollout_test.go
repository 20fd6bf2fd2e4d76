package terraform

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/internal/verifytest"
)

const rolloutSpec = "testdata/rollout/fleet.yaml"

// TestRolloutValidates runs terraform validate with the real hashicorp/aws 5.100.0 provider
// over a fleet with every rollout (canary, linear and all-at-once lambda classes, an eks
// class, both workflows behind aliases). The 6.x schema subset fleetc's other checks use
// has no aws_codedeploy_* type, so only the real provider checks the CodeDeploy blocks.
func TestRolloutValidates(t *testing.T) {
	root := writeOut(t, lower(t, rolloutSpec))
	dir := filepath.Join(root, Dir)
	if err := verifytest.TerraformFmt(dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform fmt: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("%v", err)
	}
}

// TestRolloutLambda holds a rolled-out class to the shape the rollout relies on: Terraform
// publishes versions but never moves the alias (CodeDeploy does), every caller names the
// alias, and the deployment group shifts as the spec says, gated by the class's alarms.
func TestRolloutLambda(t *testing.T) {
	files := generate(t, lower(t, rolloutSpec))
	h := parseFiles(t, files, "agent_classify.tf", "agent_enrich.tf", "rollout.tf", "workflows.tf", "outputs.tf")

	fn := h.block(t, "resource", "aws_lambda_function", "classify")
	if got := h.src(fn.Body.Attributes["publish"].Expr); got != "true" {
		t.Errorf("classify: publish = %s, want true", got)
	}
	al := h.block(t, "resource", "aws_lambda_alias", "classify")
	if got := h.str(t, al, "name"); got != "live" {
		t.Errorf("alias name = %q", got)
	}
	if got := h.src(al.Body.Attributes["function_version"].Expr); got != "aws_lambda_function.classify.version" {
		t.Errorf("alias function_version = %s", got)
	}
	if got := squash(h.src(h.blockIn(t, al, "lifecycle").Body.Attributes["ignore_changes"].Expr)); got != "[function_version, routing_config]" {
		t.Errorf("alias ignore_changes = %s: Terraform would move the alias and undo CodeDeploy's shift", got)
	}
	esm := h.block(t, "resource", "aws_lambda_event_source_mapping", "classify")
	if got := h.src(esm.Body.Attributes["function_name"].Expr); got != "aws_lambda_alias.classify.arn" {
		t.Errorf("event source mapping function_name = %s, want the alias", got)
	}

	dg := h.block(t, "resource", "aws_codedeploy_deployment_group", "classify")
	if got := h.src(dg.Body.Attributes["deployment_config_name"].Expr); got != "aws_codedeploy_deployment_config.canary_10pct_5m.id" {
		t.Errorf("deployment_config_name = %s", got)
	}
	alarms := squash(h.src(h.blockIn(t, dg, "alarm_configuration").Body.Attributes["alarms"].Expr))
	if want := `["triage-classify-live-errors", "triage-classify-age", "triage-classify-dlq-depth", "triage-classify-stalled"]`; alarms != want {
		t.Errorf("gate alarms %s, want %s", alarms, want)
	}
	// Each named alarm is one the configuration creates.
	for _, name := range []string{"triage-classify-live-errors", "triage-classify-age", "triage-classify-dlq-depth", "triage-classify-stalled"} {
		found := false
		for _, b := range h.body {
			if b.Type == "resource" && len(b.Labels) == 2 && b.Labels[0] == "aws_cloudwatch_metric_alarm" {
				if an, ok := b.Body.Attributes["alarm_name"]; ok && h.src(an.Expr) == `"`+name+`"` {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("gate alarm %s is not generated", name)
		}
	}
	rb := h.blockIn(t, dg, "auto_rollback_configuration")
	if got := squash(h.src(rb.Body.Attributes["events"].Expr)); got != `["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"]` {
		t.Errorf("rollback events = %s", got)
	}
	for name, want := range map[string][2]string{"canary_10pct_5m": {"time_based_canary", "TimeBasedCanary"}, "linear_20pct_2m": {"time_based_linear", "TimeBasedLinear"}} {
		dc := h.block(t, "resource", "aws_codedeploy_deployment_config", name)
		trc := h.blockIn(t, dc, "traffic_routing_config")
		if got := h.str(t, trc, "type"); got != want[1] {
			t.Errorf("%s: type %q, want %q", name, got, want[1])
		}
		b := h.blockIn(t, trc, want[0])
		pct, iv := h.src(b.Body.Attributes["percentage"].Expr), h.src(b.Body.Attributes["interval"].Expr)
		if name == "canary_10pct_5m" && (pct != "10" || iv != "5") || name == "linear_20pct_2m" && (pct != "20" || iv != "2") {
			t.Errorf("%s: percentage %s interval %s", name, pct, iv)
		}
	}
	// The all-at-once class uses CodeDeploy's predefined configuration: no custom one.
	ht := parseFiles(t, files, "agent_tag.tf")
	tag := ht.block(t, "resource", "aws_codedeploy_deployment_group", "tag")
	if got := ht.str(t, tag, "deployment_config_name"); got != "CodeDeployDefault.LambdaAllAtOnce" {
		t.Errorf("tag: deployment_config_name = %q", got)
	}

	// The express workflow invokes the alias, and may invoke only it.
	st := h.statements(t, "quick_triage_sfn")["InvokeClassFunctions"]
	if want := `["${aws_lambda_function.classify.arn}:live", "${aws_lambda_function.enrich.arn}:live"]`; squash(st.resources) != want {
		t.Errorf("InvokeClassFunctions resources = %s, want %s", squash(st.resources), want)
	}
	sm := h.block(t, "resource", "aws_sfn_state_machine", "quick_triage")
	if def := squash(h.src(sm.Body.Attributes["definition"].Expr)); !strings.Contains(def, "= aws_lambda_alias.classify.arn") {
		t.Errorf("definition variables do not name the alias: %s", def)
	}
	if got := h.src(sm.Body.Attributes["publish"].Expr); got != "true" {
		t.Errorf("state machine publish = %s", got)
	}
	sa := h.block(t, "resource", "aws_sfn_alias", "quick_triage")
	rc := h.blockIn(t, sa, "routing_configuration")
	if got := h.src(rc.Body.Attributes["state_machine_version_arn"].Expr); got != "aws_sfn_state_machine.quick_triage.state_machine_version_arn" {
		t.Errorf("sfn alias routes to %s", got)
	}
	out := h.block(t, "output", "state_machine_alias_arns")
	if v := squash(h.src(out.Body.Attributes["value"].Expr)); !strings.Contains(v, `"quick-triage" = aws_sfn_alias.quick_triage.arn`) {
		t.Errorf("state_machine_alias_arns = %s", v)
	}
}

// TestNoRolloutNoAlias: a class without rollout keeps today's shape (no version, no alias).
func TestNoRolloutNoAlias(t *testing.T) {
	files := generate(t, example(t, "express-triage"))
	for _, f := range files {
		for _, s := range []string{"aws_lambda_alias", "aws_sfn_alias", "aws_codedeploy", "publish ", "publish="} {
			if strings.Contains(string(f.Bytes), s) {
				t.Errorf("%s holds %s without a rollout", f.Path, s)
			}
		}
	}
}
