package dev

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/internal/tfmirror"
)

// With no Terraform CLI config of the user's (TF_CLI_CONFIG_FILE naming a file that does not
// exist, as on this project's machines, and no ~/.terraformrc), dev writes one for the
// provider mirror and the terraform it runs installs the provider offline: every request off
// the machine goes to a dead proxy, so `terraform init` without dev's config fails reaching
// registry.terraform.io, also when dev's directory is relative (`-o out`, the default; dev once
// gave terraform out/dev/terraformrc, which terraform, in out/terraform, did not find). A
// config of the user's is left alone.
func TestTerraformConfigForMirror(t *testing.T) {
	mirror, err := tfmirror.Find()
	if err != nil || mirror == "" {
		t.Skipf("no provider mirror (%s or %s): %v", tfmirror.EnvMirror, tfmirror.DefaultDir, err)
	}
	bin, err := deploy.FindTerraform("")
	if err != nil {
		t.Skip(err)
	}
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, envCLIConfig: filepath.Join(home, "missing.tfrc"), "TF_PLUGIN_CACHE_DIR": "",
		"HTTPS_PROXY": "http://127.0.0.1:1", "https_proxy": "http://127.0.0.1:1", "NO_PROXY": "", "no_proxy": "",
	} {
		t.Setenv(k, v)
	}
	spec, err := filepath.Abs("../../../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	t.Chdir(cwd)
	dir := filepath.Join(cwd, "out", "dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path, note, err := terraformConfig(filepath.Join("out", "dev"))
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "terraformrc") || !strings.Contains(note, path) || !strings.Contains(note, mirror) {
		t.Fatalf("terraformConfig = %q, note %q; want %s/terraformrc and a note naming it and %s", path, note, dir, mirror)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, _, err := deploy.Prepare(ctx, deploy.Options{Spec: spec, Dir: "out", TerraformBin: bin, CLIConfigFile: path}); err != nil {
		t.Fatalf("terraform init with dev's config: %v", err)
	}

	// The user's own config wins: the file TF_CLI_CONFIG_FILE names, else ~/.terraformrc.
	own := filepath.Join(home, "own.tfrc")
	if err := os.WriteFile(own, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envCLIConfig, own)
	if p, n, err := terraformConfig(t.TempDir()); p != "" || n != "" || err != nil {
		t.Errorf("with %s=%s: terraformConfig = %q, %q, %v; want the user's", envCLIConfig, own, p, n, err)
	}
	t.Setenv(envCLIConfig, "")
	if err := os.WriteFile(filepath.Join(home, ".terraformrc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, n, err := terraformConfig(t.TempDir()); p != "" || n != "" || err != nil {
		t.Errorf("with ~/.terraformrc: terraformConfig = %q, %q, %v; want the user's", p, n, err)
	}
}
