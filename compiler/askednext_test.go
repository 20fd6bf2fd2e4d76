package compiler_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// askedNext is issue 38's spec: an approval step, a schedule, a fairness key and a lambda
// canary in one fleet (examples/approvals grown by the other two).
const askedNext = "testdata/asked-next/fleet.yaml"

// TestAskedNextValidates builds issue 38's spec and has the real consumers accept it all
// together: the hashicorp/aws 5.100 provider's terraform validate (the CodeDeploy types are
// not in the 6.x schema subset the kitchen sink is held to), asl-validator and kubeconform.
// It also holds that each capability is there: the approval state waits for a task token,
// the schedule is a Scheduler schedule, the eks class's runtime config carries its fairness
// key, and the lambda class has its CodeDeploy deployment group behind alias live.
func TestAskedNextValidates(t *testing.T) {
	set := buildFile(t, askedNext)
	out := filepath.Join(t.TempDir(), "out")
	if err := artifact.WriteDir(out, set); err != nil {
		t.Fatal(err)
	}
	has := func(path, want string) {
		t.Helper()
		b, ok := set.Get(path)
		if !ok || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (present: %v)", path, want, ok)
		}
	}
	has("statemachines/refund.asl.json", "waitForTaskToken")
	has("terraform/schedules.tf", `resource "aws_scheduler_schedule"`)
	has("runtime/draft.json", `"fairness"`)
	has("terraform/agent_pay.tf", `resource "aws_codedeploy_deployment_group" "pay"`)
	has("terraform/agent_pay.tf", `resource "aws_lambda_alias" "pay"`)

	var manifests []string
	for _, p := range set.Paths() {
		full := filepath.Join(out, filepath.FromSlash(p))
		switch {
		case strings.HasPrefix(p, "statemachines/") && strings.HasSuffix(p, ".asl.json"):
			verifyOrSkip(t, p, verifytest.ASL(full))
		case strings.HasPrefix(p, "k8s/"):
			manifests = append(manifests, full)
		}
	}
	if len(manifests) == 0 {
		t.Error("no manifests for the eks class")
	}
	verifyOrSkip(t, "k8s", verifytest.Kubeconform(manifests...))
	verifyOrSkip(t, "terraform fmt", verifytest.TerraformFmt(filepath.Join(out, "terraform")))
	verifyOrSkip(t, "terraform validate", verifytest.TerraformValidateOut(context.Background(), out, "terraform"))
	if _, err := os.Stat(filepath.Join(out, "terraform", "rollout.tf")); err != nil {
		t.Errorf("no rollout.tf: %v", err)
	}
}
