package deploy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A fleet deployed to the emulator runs its workers here, with this machine's environment:
// a policy keyed only by api_key_env prepares (fleetc dev's path), while the same spec for
// AWS stops at M007, since nothing sets the variable there.
func TestEmulatorBuildTakesKeysFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	if err := os.WriteFile(bin, []byte(fakeTerraform), 0o755); err != nil {
		t.Fatal(err)
	}
	const spec = "../check/testdata/M007/fail.yaml"
	if _, ds, err := Prepare(context.Background(), Options{Spec: spec, Dir: filepath.Join(dir, "emu"), TerraformBin: bin, Endpoint: "http://127.0.0.1:4566"}); err != nil {
		t.Fatalf("on the emulator: %v %v", err, ds)
	}
	_, ds, err := Prepare(context.Background(), Options{Spec: spec, Dir: filepath.Join(dir, "aws"), TerraformBin: bin})
	var be *BuildError
	if !errors.As(err, &be) || len(ds) == 0 {
		t.Fatalf("for AWS: error %v, want a BuildError", err)
	}
	n := 0
	for _, d := range ds {
		if d.Code == "M007" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("for AWS: %d M007 findings, want 2: %v", n, ds)
	}
}
