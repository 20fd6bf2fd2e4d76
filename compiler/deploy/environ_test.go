package deploy

import (
	"maps"
	"os"
	"slices"
	"strings"
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
