package cli

import (
	"os"
	"strings"
	"testing"
)

func TestGraph(t *testing.T) {
	code, out, errs := run(t, "graph", research)
	if code != 0 || !strings.HasPrefix(out, "flowchart LR\n") {
		t.Fatalf("graph: exit %d\n%s%s", code, out, errs)
	}
	golden, err := os.ReadFile("../../../compiler/graph/testdata/research-fleet.mmd")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(golden) {
		t.Errorf("fleetc graph differs from compiler/graph/testdata/research-fleet.mmd:\n%s", out)
	}
	code, out, _ = run(t, "graph", "--format", "dot", research)
	if code != 0 || !strings.HasPrefix(out, "digraph fleet {") {
		t.Errorf("graph --format dot: exit %d\n%s", code, out)
	}
	if code, _, _ := run(t, "graph"); code != 2 {
		t.Errorf("graph without a file: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "graph", "--format", "svg", research); code != 2 {
		t.Errorf("graph --format svg: exit %d, want 2", code)
	}
	code, out, errs = run(t, "graph", "../../../compiler/ir/testdata/bad/undefined-model.yaml")
	if code != 1 || out != "" || !strings.Contains(errs, "P005") {
		t.Errorf("graph of a bad spec: exit %d, stdout %q, stderr %q; want 1, nothing, the diagnostics", code, out, errs)
	}
}
