package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanRefusesScalerRoleInAnotherAccount: the TriggerAuthentications name the KEDA scaler
// role in the account of worker.eks.keda_operator_role; planning in another account (kumo's
// is 000000000000) stops at the role's precondition, before anything is created.
//
// The emulator override's kumo-account gap leaves that role out on kumo (Terraform cannot
// override a precondition, and no KEDA operator runs there), so a plan with --endpoint
// would never reach it. This test plans with every other gap applied and that one removed
// from KumoGaps: the precondition, as generated for AWS, runs against kumo's STS account.
// Sequential, since this package's emulator loops read KumoGaps, in parallel, after it (it
// was cmd/fleetc/cli's, whose emulator loops waited for it).
func TestPlanRefusesScalerRoleInAnotherAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("terraform plan against kumo")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := newKumoRig(ctx, t)
	gaps := KumoGaps
	t.Cleanup(func() { KumoGaps = gaps })
	KumoGaps = slices.DeleteFunc(slices.Clone(gaps), func(g Gap) bool { return g.ID == "kumo-account" })
	if len(KumoGaps) != len(gaps)-1 {
		t.Fatal("no kumo-account gap to remove")
	}

	src, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("acct%d", time.Now().UnixNano()%1_000_000_000)
	spec := strings.Replace(strings.ReplaceAll(string(src), "FLEET", name),
		"arn:aws:iam::000000000000:role/keda-operator", "arn:aws:iam::111122223333:role/keda-operator", 1)
	specPath := filepath.Join(k.dir, "fleet.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	w, ds, err := Prepare(ctx, Options{Spec: specPath, Dir: filepath.Join(k.dir, "out"), TerraformBin: k.bin, Endpoint: k.endpoint, Emulator: Kumo, CLIConfigFile: k.cliConfig})
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	_, err = w.Plan(ctx, filepath.Join(k.dir, "plan.tfplan"), false)
	want := "The TriggerAuthentications name arn:aws:iam::111122223333:role/" + name + "-keda-scaler"
	if err == nil || !strings.Contains(strings.Join(strings.Fields(err.Error()), " "), want) {
		t.Fatalf("plan in the wrong account: %v, want an error with %q", err, want)
	}
}
