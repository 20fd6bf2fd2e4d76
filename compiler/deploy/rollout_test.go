package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// rolloutSpec has every rollout: lambda classes behind alias live with CodeDeploy groups, an
// eks class, and workflows behind sfn aliases.
const rolloutSpec = "../terraform/testdata/rollout/fleet.yaml"

// TestRolloutOverride: kumo has no CodeDeploy, no Lambda versions or aliases and no state
// machine versions or aliases, so the override leaves them out and points what names an
// alias at the function or state machine itself; the AWS configuration is unchanged
// (TestEmulatorOverrideLeavesAWSOutputUnchanged runs over rolloutSpec too).
func TestRolloutOverride(t *testing.T) {
	o, err := EmulatorOverride(generate(t, rolloutSpec), "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	f, ds := hclsyntax.ParseConfig(o.Bytes, OverrideFile, hcl.InitialPos)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	blocks := map[string]*hclsyntax.Body{}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		blocks[strings.Join(append([]string{b.Type}, b.Labels...), " ")] = b.Body
	}
	// attr is the source of one attribute of an override block.
	attr := func(block, name string) string {
		t.Helper()
		b := blocks[block]
		if b == nil {
			t.Fatalf("no override block %q in\n%s", block, o.Bytes)
		}
		a, ok := b.Attributes[name]
		if !ok {
			return ""
		}
		r := a.Expr.Range()
		return string(o.Bytes[r.Start.Byte:r.End.Byte])
	}
	if got := attr("resource aws_lambda_event_source_mapping classify", "function_name"); got != "aws_lambda_function.classify.arn" {
		t.Errorf("event source mapping calls %s on the emulator, want the function", got)
	}
	def := attr("resource aws_sfn_state_machine quick_triage", "definition")
	if !strings.Contains(def, "aws_lambda_function.classify.arn") || strings.Contains(def, "aws_lambda_alias") {
		t.Errorf("express definition still names the alias on the emulator: %s", def)
	}
	if got := attr("resource aws_sfn_state_machine quick_triage", "publish"); got != "null" {
		t.Errorf("state machine publish = %q on the emulator, want null", got)
	}
	if got := attr("resource aws_lambda_function classify", "publish"); got != "null" {
		t.Errorf("function publish = %q on the emulator, want null", got)
	}
	if got := attr("output state_machine_alias_arns", "value"); !strings.Contains(got, "aws_sfn_state_machine.quick_triage.arn") || strings.Contains(got, "aws_sfn_alias") {
		t.Errorf("state_machine_alias_arns on the emulator = %s", got)
	}
	if got := attr("output lambda_live_versions", "value"); !strings.Contains(got, "aws_lambda_function.classify.version") || strings.Contains(got, "aws_lambda_alias") {
		t.Errorf("lambda_live_versions on the emulator = %s, want the function's version", got)
	}
	for _, gone := range []string{"resource aws_lambda_alias classify", "resource aws_sfn_alias bulk_tag", "resource aws_codedeploy_app workers",
		"resource aws_codedeploy_deployment_group classify", "resource aws_codedeploy_deployment_config canary_10pct_5m"} {
		if got := attr(gone, "count"); got != "0" {
			t.Errorf("%s: count = %q, want 0", gone, got)
		}
	}
	if !slices.ContainsFunc(o.Omissions, func(om Omission) bool {
		return om.Gap == "lambda-alias" && om.Address == "aws_lambda_event_source_mapping.classify" && strings.Contains(om.What, "aws_lambda_function.classify")
	}) {
		t.Errorf("omissions do not say the mapping calls the function: %+v", o.Omissions)
	}
}

// TestRolloutAppliesOnKumo applies the rollout fleet to kumo with the real terraform and
// hashicorp/aws provider through the override, as `fleetc apply --endpoint` and `fleetc dev`
// do, reads the outputs (the alias output names the state machines), finds no drift on a
// second plan, and destroys it.
func TestRolloutAppliesOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see environWith
	if testing.Short() {
		t.Skip("terraform apply against kumo takes minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	k := newKumoRig(ctx, t)
	bin, endpoint, tmp, rc := k.bin, k.endpoint, k.dir, k.cliConfig
	src, err := os.ReadFile(rolloutSpec)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "ro" + hex.EncodeToString(b)
	specPath := filepath.Join(tmp, "fleet.yaml")
	if err := os.WriteFile(specPath, []byte(strings.ReplaceAll(string(src), "triage", name)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _, err := Prepare(ctx, Options{Spec: specPath, Dir: filepath.Join(tmp, "out"), TerraformBin: bin, Endpoint: endpoint, CLIConfigFile: rc})
	if err != nil {
		t.Fatal(err)
	}
	var progress, diags strings.Builder
	destroy := func() {
		plan := filepath.Join(tmp, "destroy.tfplan")
		if _, err := w.Plan(ctx, plan, true); err != nil {
			t.Errorf("destroy plan: %v", err)
			return
		}
		if err := w.Apply(ctx, plan, &progress, &diags); err != nil {
			t.Errorf("destroy: %v\n%s", err, diags.String())
		}
	}
	plan := filepath.Join(tmp, "plan.tfplan")
	if _, err := w.Plan(ctx, plan, false); err != nil {
		t.Fatalf("plan against kumo: %v", err)
	}
	defer destroy()
	if err := w.Apply(ctx, plan, &progress, &diags); err != nil {
		t.Fatalf("apply against kumo: %v\n%s", err, diags.String())
	}
	outs, err := w.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]map[string]any{}
	for _, o := range outs {
		var v map[string]any
		if json.Unmarshal(o.Value, &v) == nil {
			values[o.Name] = v
		}
	}
	aliases, machines := values["state_machine_alias_arns"], values["state_machine_arns"]
	if len(aliases) != 2 || aliases["quick-"+name] == nil && aliases["quick-triage"] == nil {
		t.Errorf("state_machine_alias_arns = %v", aliases)
	}
	for wf, arn := range aliases {
		if machines[wf] != arn {
			t.Errorf("on the emulator, alias output of %s = %v, want the state machine %v", wf, arn, machines[wf])
		}
	}
	s, err := w.Plan(ctx, filepath.Join(tmp, "again.tfplan"), false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Changes); n != 0 {
		t.Errorf("second plan on the emulator has %d changes: %+v", n, s.Changes)
	}
}
