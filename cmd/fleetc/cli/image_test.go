package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fleetc image build's usage is checked before any work: a base and somewhere for the image
// to go are required (exit 2); what image.Build refuses exits 1 with its reason and prints
// no digest. (cmd/fleetc/image's tests build, write, push and run the image itself.)
func TestImageBuildUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if code, out, errs := run(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errs)
	}
	spec := filepath.Join(dir, initSpec)
	sh, err := exec.LookPath("sh") // dynamically linked: refused as fleet-worker
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "oci")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{spec, "greeter", "-o", out}, exitUsage, "--base is required"},
		{[]string{spec, "greeter", "--base", "scratch"}, exitUsage, "say where the image goes: -o DIR, --tarball F or --push"},
		{[]string{spec, "--base", "scratch", "-o", out}, exitUsage, "name one fleet.yaml and one class"},
		{[]string{spec, "greeter", "--base", "Not A Ref!", "-o", out}, exitUsage, "--base: \"Not A Ref!\" is neither an image reference, oci:DIR, tar:FILE nor scratch"},
		{[]string{spec, "greeter", "--base", "scratch", "--worker", sh, "-o", out}, exitInvalid, "fleetc image build: fleet-worker " + sh + ": dynamically linked"},
	} {
		code, stdout, errs := run(t, append([]string{"image", "build"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", c.args, code, stdout, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused build wrote its layout")
	}
}
