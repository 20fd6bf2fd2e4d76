package deploy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/verifytest"
)

// environWith is this process's environment with set's variables put in (replaced where
// present), for Options.Environ. The emulator tests run in parallel (t.Parallel: each deploys
// or plans a fleet under a name of its own on the shared kumo, and spends its time waiting on
// kumo and the AWS provider), so none may change the process environment: t.Setenv refuses a
// parallel test, and os.Setenv would hand one test's proxy or profile to the others' terraform.
// Each passes its terraform environment instead: this, or Options.CLIConfigFile for the
// provider mirror alone.
func environWith(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		env = append(env, k+"="+set[k])
	}
	return env
}

// kumoRig is what an emulator test of this package starts from: terraform, kumo's endpoint,
// a directory of the test's own and in it a Terraform CLI config that installs the provider
// from the mirror (for Options.CLIConfigFile or TF_CLI_CONFIG_FILE).
type kumoRig struct{ bin, endpoint, dir, cliConfig string }

// newKumoRig skips the test when terraform, kumo or the provider mirror is missing (fails it
// under FLEETC_REQUIRE_TOOLS=1).
func newKumoRig(ctx context.Context, t *testing.T) kumoRig {
	t.Helper()
	bin, err := FindTerraform("")
	if err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: %v", verifytest.ErrToolMissing, err))
	}
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	rc, err := verifytest.MirrorCLIConfig(dir)
	verifytest.SkipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	return kumoRig{bin: bin, endpoint: endpoint, dir: dir, cliConfig: rc}
}
