package deploy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// After Apply, later terraform commands' stdout is no longer streamed as apply progress:
// `terraform output -json` used to land in the streamer and each line of its indented JSON
// was printed to stderr as an unparsable message. Real terraform, on a configuration that
// needs no provider download (terraform_data is built in).
func TestApplyThenOutputsPrintsNothingExtra(t *testing.T) {
	bin, err := FindTerraform("")
	if err != nil {
		t.Skipf("SKIPPED, CHECKER NOT AVAILABLE: %v", err)
	}
	dir := t.TempDir()
	main := `resource "terraform_data" "queue" {
  input = "q"
}

output "queues" {
  value = { a = terraform_data.queue.output, b = ["x", "y"] }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Dir: dir, TFDir: dir, groups: map[string]string{}}
	if w.tf, err = tfexec.NewTerraform(dir, bin); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w.tf.Init(ctx); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "p.tfplan")
	if _, err := w.tf.Plan(ctx, tfexec.Out(plan)); err != nil {
		t.Fatal(err)
	}
	var progress, diags bytes.Buffer
	if err := w.Apply(ctx, plan, &progress, &diags); err != nil {
		t.Fatal(err)
	}
	outs, err := w.Outputs(ctx)
	if err != nil || len(outs) != 1 || !strings.Contains(string(outs[0].Value), `"b":["x","y"]`) {
		t.Fatalf("outputs %v, %v", outs, err)
	}
	if !strings.Contains(progress.String(), "terraform_data.queue: Creation complete") {
		t.Errorf("no progress:\n%s", progress.String())
	}
	if diags.Len() != 0 {
		t.Errorf("stderr after apply and outputs:\n%s", diags.String())
	}
}
