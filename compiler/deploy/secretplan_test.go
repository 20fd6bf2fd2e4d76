package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// keyedSpec is the e2e fleet plus a Lambda class, caller, that calls an openai/ policy
// keyed by a Secrets Manager secret (api_key_env for fleetc dev beside it) and whose exec
// handler reads a second secret of its own (handler.secrets). A Lambda class's runtime
// config is an S3 object whose content is in the plan: the references travel through it.
func keyedSpec(src, name string) string {
	return strings.Replace(strings.ReplaceAll(src, "FLEET", name), "agents:\n", fmt.Sprintf(`models:
  keyed:
    targets: [openai/gpt-4o-mini]
    base_url: https://api.openai.com/v1
    api_key_env: PLAN_TEST_OPENAI_KEY
    api_key: { secret: %[1]s/openai, json_key: api_key }
    max_in_flight: 10
agents:
  caller:
    runtime: lambda
    image: 000000000000.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0
    consumes: { event: task.requested }
    step: { p95: 2s, max: 2m }
    handler:
      exec: ["/bin/cat"]
      secrets:
        VENDOR_TOKEN: { secret: %[1]s/vendor }
    model: keyed
`, name), 1)
}

// TestSecretValuesNeverInPlan: with both secrets' values in kumo's Secrets Manager and the
// model key also in the shell that plans (the variable api_key_env names), `terraform plan`
// with the real Terraform and AWS provider against kumo, its saved plan's `terraform show`
// and `terraform show -json` hold the secrets' references and never a value: fleetc writes
// references only, and no generated data source reads a secret.
func TestSecretValuesNeverInPlan(t *testing.T) {
	t.Parallel() // an emulator loop: see environWith
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := newKumoRig(ctx, t)
	bin, endpoint, tmp, rc := k.bin, k.endpoint, k.dir, k.cliConfig
	name := fmt.Sprintf("sp%d", time.Now().UnixNano()%1_000_000_000)
	modelKey, vendorToken := "sk-plan-model-"+name+"-x9", "vt-plan-vendor-"+name+"-y8"
	environ := environWith(map[string]string{"TF_CLI_CONFIG_FILE": rc, EnvEndpoint: "", "PLAN_TEST_OPENAI_KEY": modelKey})
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	sm := secretsmanager.NewFromConfig(cfg)
	for id, value := range map[string]string{name + "/openai": fmt.Sprintf(`{"api_key":%q}`, modelKey), name + "/vendor": vendorToken} {
		if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}

	src, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(tmp, "fleet.yaml")
	if err := os.WriteFile(specPath, []byte(keyedSpec(string(src), name)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, ds, err := Prepare(ctx, Options{Spec: specPath, Dir: filepath.Join(tmp, "out"), TerraformBin: bin, Endpoint: endpoint, Environ: environ})
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	var planOut bytes.Buffer
	w.tf.SetStdout(&planOut)
	planFile := filepath.Join(tmp, "plan.tfplan")
	if _, err := w.Plan(ctx, planFile, false); err != nil {
		t.Fatalf("plan against kumo: %v", err)
	}
	w.tf.SetStdout(nil)
	human, err := w.tf.ShowPlanFileRaw(ctx, planFile)
	if err != nil {
		t.Fatal(err)
	}
	show := exec.CommandContext(ctx, bin, "show", "-json", planFile)
	show.Dir = w.TFDir
	for k, v := range terraformEnv(environ, endpoint) {
		show.Env = append(show.Env, k+"="+v)
	}
	showJSON, err := show.Output()
	if err != nil {
		t.Fatalf("terraform show -json: %v", err)
	}

	for what, out := range map[string]string{"plan output": planOut.String(), "terraform show": human, "terraform show -json": string(showJSON)} {
		// The references are there (the grants name both secrets): the check looks where a
		// value would be.
		refs := []string{":secret:" + name + "/openai-??????", ":secret:" + name + "/vendor-??????"}
		if what == "terraform show -json" { // caller's runtime config object, JSON in a JSON string
			refs = append(refs, `\"secret\": \"`+name+`/vendor\"`)
		}
		for _, ref := range refs {
			if what != "plan output" && !strings.Contains(out, ref) {
				t.Errorf("%s does not name %s: the plan is not of the keyed fleet", what, ref)
			}
		}
		for _, v := range []string{modelKey, vendorToken} {
			if strings.Contains(out, v) {
				t.Errorf("%s holds a secret's value", what)
			}
		}
	}
	if !strings.Contains(planOut.String(), "Plan:") {
		t.Errorf("the plan output is not terraform plan's:\n%s", planOut.String())
	}
}
