package step_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTransportsDoNotImportWorker holds the layering this package exists for: the Lambda,
// AgentCore and dispatcher transports reach the step pipeline through step.Worker, so none
// of them (nor this package) links the worker and the handlers, stores and model router
// behind it.
func TestTransportsDoNotImportWorker(t *testing.T) {
	const worker = "github.com/fleetc/fleetc/runtime/worker"
	for _, pkg := range []string{"./", "../lambda", "../agentcore", "../dispatch"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == worker || strings.HasPrefix(dep, worker+"/") {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}
