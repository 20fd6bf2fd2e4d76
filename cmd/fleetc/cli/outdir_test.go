package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The generated pull-request workflow runs `build --check` on a checkout a fork may have
// written, output directory included. A link committed there and named in the manifest
// made --check print /proc/self/environ as a diff, and made a plain build delete files
// through a linked directory (issue #32).

// builtOutput builds the research example into out/ of a fresh working directory.
func builtOutput(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("fleet.yaml", src, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "build", "fleet.yaml", "-o", "out"); code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	return "out"
}

func appendManifest(t *testing.T, out, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(out, ".fleetc-manifest"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestBuildCheckPrintsNoLinkedFile(t *testing.T) {
	secrets := environSecrets(t)
	out := builtOutput(t)
	for _, link := range []string{"x", "terraform/fleetc_emulator_x.tf"} {
		if err := os.Symlink("/proc/self/environ", filepath.Join(out, link)); err != nil {
			t.Fatal(err)
		}
	}
	appendManifest(t, out, "x")
	check := func(what string) {
		code, stdout, stderr := runBounded(t, 20*time.Second, "build", "--check", "fleet.yaml", "-o", out)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d", what, code, exitUsage)
		}
		for name, s := range secrets {
			if strings.Contains(stdout+stderr, s) {
				t.Errorf("%s: build --check printed the value of $%s", what, name)
			}
		}
		if !strings.Contains(stderr, "symbolic link") {
			t.Errorf("%s: no word of the link:\n%.500s", what, stderr)
		}
	}
	check("a link named in the manifest")
	// The emulator files are read by name, manifest or not.
	if err := os.WriteFile(filepath.Join(out, ".fleetc-manifest"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	check("a link where an emulator file lies")
}

func TestBuildDeletesNothingThroughALink(t *testing.T) {
	out := builtOutput(t)
	if err := os.Mkdir("victim", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("victim/keep", []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../victim", filepath.Join(out, "vd")); err != nil {
		t.Fatal(err)
	}
	appendManifest(t, out, "vd/keep")
	code, _, stderr := run(t, "build", "fleet.yaml", "-o", out)
	if code != exitUsage || !strings.Contains(stderr, `.fleetc-manifest:`) || !strings.Contains(stderr, `"vd" is a symbolic link`) {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	if b, err := os.ReadFile("victim/keep"); err != nil || string(b) != "precious" {
		t.Errorf("the file behind the link: %q, %v", b, err)
	}
}
