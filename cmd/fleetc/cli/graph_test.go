package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/jsonreport"
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
	code, out, _ = run(t, "graph", "--format", "json", research)
	var doc struct {
		FormatVersion int `json:"format_version"`
		Nodes         []struct {
			Key       string   `json:"key"`
			Resources []string `json:"resources"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.FormatVersion != jsonreport.FormatVersion {
		t.Fatalf("graph --format json: exit %d, %v\n%s", code, err, out)
	}
	i := slices.IndexFunc(doc.Nodes, func(n struct {
		Key       string   `json:"key"`
		Resources []string `json:"resources"`
	}) bool {
		return n.Key == "dlq:researcher"
	})
	if i < 0 || !slices.Equal(doc.Nodes[i].Resources, []string{"aws_sqs_queue.researcher_dlq", "aws_sqs_queue_redrive_allow_policy.researcher_dlq"}) {
		t.Errorf("graph --format json: the researcher DLQ's resources are not its inventory's:\n%s", out)
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
