package deploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTerraform stands in for the terraform CLI in the Ctrl-C test only: it answers
// `version -json` and `init`, and its `apply` reports one resource starting, then waits to be
// interrupted; on SIGINT it records the signal and exits as Terraform does after a graceful stop.
const fakeTerraform = `#!/bin/sh
case "$1" in
version) echo '{"terraform_version":"1.11.0","platform":"linux_amd64","provider_selections":{},"terraform_outdated":false}' ;;
init) exit 0 ;;
apply)
	trap 'echo SIGINT > "$FAKE_TF_MARK"; echo "{\"type\":\"diagnostic\",\"diagnostic\":{\"severity\":\"error\",\"summary\":\"operation canceled\"}}"; exit 1' INT
	echo '{"@message":"aws_sqs_queue.solver: Creating...","type":"apply_start","hook":{"resource":{"addr":"aws_sqs_queue.solver"}}}'
	sleep 30 >/dev/null 2>&1 & # not holding stdout: Go waits for the pipe to close
	wait
	echo NOT-INTERRUPTED > "$FAKE_TF_MARK" ;;
*) exit 3 ;;
esac
`

// TestInterruptStopsTerraformGracefully: Ctrl-C (the context ending) sends Terraform SIGINT,
// not SIGKILL, waits for it, and the error says where the state is.
func TestInterruptStopsTerraformGracefully(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	if err := os.WriteFile(bin, []byte(fakeTerraform), 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "mark")
	t.Setenv("FAKE_TF_MARK", mark)
	src, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(spec, bytes.ReplaceAll(src, []byte("FLEET"), []byte("unit")), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _, err := Prepare(context.Background(), Options{Spec: spec, Dir: filepath.Join(dir, "out"), TerraformBin: bin, GracePeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	progress := &notifyWriter{seen: make(chan struct{})}
	go func() {
		<-progress.seen // the apply is under way
		cancel()
	}()
	var diags bytes.Buffer
	err = w.Apply(ctx, "plan", progress, &diags)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), filepath.Join(w.TFDir, "terraform.tfstate")) ||
		!strings.Contains(err.Error(), "up to 10s to finish") {
		t.Fatalf("error %v", err)
	}
	got, _ := os.ReadFile(mark)
	if string(got) != "SIGINT\n" {
		t.Fatalf("terraform saw %q, want SIGINT", got)
	}
	if !strings.Contains(progress.String(), "[class solver] aws_sqs_queue.solver: Creating...") || !strings.Contains(diags.String(), "operation canceled") {
		t.Errorf("progress %q diagnostics %q", progress.String(), diags.String())
	}
}

type notifyWriter struct {
	bytes.Buffer
	seen chan struct{}
	once bool
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	k, err := n.Buffer.Write(p)
	if !n.once {
		n.once = true
		close(n.seen)
	}
	return k, err
}

// TestOverrideOnlyWithEndpoint: --endpoint writes the override beside the generated files;
// the next run without it removes the override, so Terraform targets AWS again, and the
// generated files are the same bytes either way.
func TestOverrideOnlyWithEndpoint(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	if err := os.WriteFile(bin, []byte(fakeTerraform), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(spec, bytes.ReplaceAll(src, []byte("FLEET"), []byte("unit")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	override := filepath.Join(out, "terraform", OverrideFile)
	w, _, err := Prepare(context.Background(), Options{Spec: spec, Dir: out, TerraformBin: bin, Endpoint: "http://127.0.0.1:4566"})
	if err != nil {
		t.Fatal(err)
	}
	withEndpoint, _ := os.ReadFile(filepath.Join(out, "terraform", "agent_solver.tf"))
	if b, err := os.ReadFile(override); err != nil || !bytes.Equal(b, w.Override.Bytes) {
		t.Fatalf("override not written: %v", err)
	}
	// Written as every output file is: data, not executable.
	if fi, err := os.Stat(override); err != nil || fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("override mode: %v %v", fi.Mode(), err)
	}
	if w, _, err := Prepare(context.Background(), Options{Spec: spec, Dir: out, TerraformBin: bin}); err != nil || w == nil || w.Override != nil {
		t.Fatalf("without --endpoint after a run with it: workspace %v, error %v; want a workspace without an override", w, err)
	}
	if _, err := os.Stat(override); !os.IsNotExist(err) {
		t.Fatalf("override left behind without --endpoint: %v", err)
	}
	without, _ := os.ReadFile(filepath.Join(out, "terraform", "agent_solver.tf"))
	if !bytes.Equal(withEndpoint, without) || !bytes.Contains(without, []byte("sqs_managed_sse_enabled    = true")) {
		t.Error("generated configuration differs with --endpoint")
	}
}

// An interrupted command's error names the grace period Terraform got (the default when none
// is set) and where the state is: the local file, or the configured backend. A failure
// without an interruption wraps Terraform's error and names the directory.
func TestTerraformErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		opts Options
		ctx  context.Context
		want string
	}{
		{"interrupted", Options{}, cancelled, "interrupted: terraform apply stopped (SIGINT, then up to " + DefaultGracePeriod.String() + " to finish in-flight calls); the state Terraform wrote is " +
			filepath.Join("/fleet/terraform", "terraform.tfstate")},
		{"interrupted, backend", Options{GracePeriod: 5 * time.Second, BackendConfig: []string{"bucket=b"}}, cancelled,
			"interrupted: terraform apply stopped (SIGINT, then up to 5s to finish in-flight calls); the state is in the configured backend"},
		{"failed", Options{}, context.Background(), "terraform apply in /fleet/terraform: boom"},
	} {
		w := &Workspace{TFDir: "/fleet/terraform", opts: tc.opts}
		err := w.tfErr(tc.ctx, "terraform apply", boom)
		if !strings.HasPrefix(err.Error(), tc.want) || errors.Is(err, ErrInterrupted) != (tc.ctx == cancelled) || errors.Is(err, boom) == (tc.ctx == cancelled) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
