package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
)

// fleetc init writes a project that validates and builds, for every runtime, with the CI
// workflows and handler image of examples/, and never overwrites.
func TestInit(t *testing.T) {
	for _, rt := range []string{"lambda", "eks", "agentcore"} {
		dir := filepath.Join(t.TempDir(), "hello")
		code, out, errs := run(t, "init", "--runtime", rt, dir)
		if code != 0 || !strings.Contains(out, "Next: fleetc validate "+filepath.Join(dir, initSpec)) {
			t.Fatalf("%s: exit %d\n%s%s", rt, code, out, errs)
		}
		spec := filepath.Join(dir, initSpec)
		if code, _, errs := run(t, "validate", "--strict", spec); code != 0 {
			t.Errorf("%s starter does not validate:\n%s", rt, errs)
		}
		if code, _, errs := run(t, "build", spec, "-o", filepath.Join(dir, initOut)); code != 0 {
			t.Errorf("%s starter does not build:\n%s", rt, errs)
		}
		if code, out, _ := run(t, "fmt", "--check", spec); code != 0 {
			t.Errorf("%s starter is not formatted: %s", rt, out)
		}
		src, _ := os.ReadFile(spec)
		if _, f, _ := compiler.Load(spec); f == nil || len(f.Agents) != 1 || f.Agents[0].Runtime != rt || !bytes.Contains(src, []byte("\n# ")) {
			t.Errorf("%s starter: not one commented %s class", rt, rt)
		}
		for got, want := range map[string]string{
			".github/workflows/fleet-review.yml": "../../../examples/ci/fleet-review.yml",
			".github/workflows/fleet-deploy.yml": "../../../examples/ci/fleet-deploy.yml",
			"handler/Dockerfile":                 "../../../examples/images/python/Dockerfile",
			"handler/handler.py":                 "../../../examples/images/python/handler.py",
		} {
			g, _ := os.ReadFile(filepath.Join(dir, got))
			w, _ := os.ReadFile(want)
			if len(w) == 0 || !bytes.Equal(g, w) {
				t.Errorf("%s: %s is not %s", rt, got, want)
			}
		}
		// The workflows' paths are the ones init uses.
		wf, _ := os.ReadFile(filepath.Join(dir, ".github/workflows/fleet-deploy.yml"))
		if !bytes.Contains(wf, []byte("FLEET_SPEC: "+initSpec)) || !bytes.Contains(wf, []byte("FLEET_OUT: "+initOut)) || !bytes.Contains(wf, []byte("HANDLER_DIR: "+initHandler)) {
			t.Errorf("fleet-deploy.yml does not use init's layout")
		}
		// A second init writes nothing.
		os.WriteFile(spec, []byte("mine"), 0o644)
		if code, _, errs := run(t, "init", dir); code != 1 || !strings.Contains(errs, "already exists; nothing was written") {
			t.Errorf("re-init: exit %d %s", code, errs)
		}
		if b, _ := os.ReadFile(spec); string(b) != "mine" {
			t.Error("init overwrote fleet.yaml")
		}
	}
	if code, _, _ := run(t, "init", "--runtime", "ecs", t.TempDir()); code != exitUsage {
		t.Errorf("--runtime ecs: exit %d", code)
	}
}

// fleetc fmt keeps comments, blank lines between sections and meaning (the build output of
// the formatted spec is byte for byte the original's), and is idempotent.
func TestFmt(t *testing.T) {
	paths, _ := filepath.Glob("../../../examples/*/fleet.yaml")
	for _, p := range paths {
		src, _ := os.ReadFile(p)
		f := filepath.Join(t.TempDir(), "fleet.yaml")
		os.WriteFile(f, src, 0o644)
		copyPrompts(t, p, filepath.Dir(f))
		if code, _, _ := run(t, "fmt", "--check", f); code != 1 && !bytes.Equal(mustFormat(t, src), src) {
			t.Errorf("%s: --check exit %d on an unformatted file", p, code)
		}
		if code, _, errs := run(t, "fmt", f); code != 0 {
			t.Fatalf("%s: %s", p, errs)
		}
		got, _ := os.ReadFile(f)
		if strings.Count(string(got), "#") != strings.Count(string(src), "#") || strings.Count(string(got), "\n\n") != strings.Count(string(src), "\n\n") {
			t.Errorf("%s: comments or blank lines lost:\n%s", p, got)
		}
		as, ads, aerr := compiler.CompileAll(compiler.Input{Path: p}) // every environment of a spec that has them
		bs, bds, berr := compiler.CompileAll(compiler.Input{Path: f})
		if aerr != nil || berr != nil || len(as) != len(bs) || ads.HasErrors() || bds.HasErrors() {
			t.Fatalf("%s: build failed after fmt: %v %v %v", p, aerr, berr, bds)
		}
		for i := range as {
			a, b := as[i].Files, bs[i].Files
			for _, path := range a.Paths() {
				x, _ := a.Get(path)
				y, _ := b.Get(path)
				if !bytes.Equal(x, y) {
					t.Errorf("%s: fmt changed what %s/%s builds", p, as[i].Env, path)
				}
			}
		}
		if code, out, _ := run(t, "fmt", "--check", f); code != 0 || out != "" {
			t.Errorf("%s: not idempotent: %s", p, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("a: [\n"), 0o644)
	if code, _, errs := run(t, "fmt", bad); code != 1 || !strings.Contains(errs, "fleetc validate") {
		t.Errorf("unparsable: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(bad); string(b) != "a: [\n" {
		t.Error("fmt rewrote a file it could not parse")
	}
}

// fmt --check lists an unformatted file and exits 1, and leaves it byte for byte as it was
// (a CI gate writes nothing); fmt without --check then rewrites it.
func TestFmtCheckWritesNothing(t *testing.T) {
	src := []byte("version: 1\nfleet: f   # a comment\nagents:\n    a:\n        runtime: lambda\n")
	if bytes.Equal(mustFormat(t, src), src) {
		t.Fatal("the fixture is already formatted")
	}
	f := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(f, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "fmt", "--check", f); code != 1 || strings.TrimSpace(out) != f {
		t.Errorf("--check: exit %d, listed %q", code, out)
	}
	if got, _ := os.ReadFile(f); !bytes.Equal(got, src) {
		t.Errorf("--check rewrote the file:\n%s", got)
	}
	if code, _, errs := run(t, "fmt", f); code != 0 {
		t.Fatalf("fmt: exit %d %s", code, errs)
	}
	if got, _ := os.ReadFile(f); !bytes.Equal(got, mustFormat(t, src)) {
		t.Errorf("fmt wrote:\n%s", got)
	}
}

func mustFormat(t *testing.T, src []byte) []byte {
	t.Helper()
	b, err := formatYAML(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// init's .gitignore keeps Terraform's working files out of git wherever plan runs (build's
// hint's working directory, or the generated directory itself, as the CI workflow plans in
// it) and never the generated files the review workflow's drift check needs committed; into
// a directory with a .gitignore it appends what is missing, keeping the user's lines.
func TestInitGitignore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n*.tfstate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "init", dir); code != 0 || !strings.Contains(out, "updated "+filepath.Join(dir, ".gitignore")) {
		t.Fatalf("init into a directory with a .gitignore: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "build", filepath.Join(dir, initSpec), "-o", filepath.Join(dir, initOut)); code != 0 {
		t.Fatal(errs)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if !strings.HasPrefix(string(b), "node_modules/\n*.tfstate\n") || strings.Count(string(b), "*.tfstate\n") != 1 {
		t.Errorf("the user's lines are not kept once each:\n%s", b)
	}
	if c := exec.Command("git", "init", "-q", dir); c.Run() != nil {
		t.Fatal("git init")
	}
	ignored := func(p string) bool {
		c := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		c.Dir = dir
		return c.Run() == nil
	}
	for _, p := range []string{
		"fleet/" + deployWorkDir + "/terraform/terraform.tfstate",
		"fleet/" + deployWorkDir + "/terraform/.terraform/providers/x",
		initOut + "/terraform/terraform.tfstate",
		initOut + "/terraform/terraform.tfstate.backup",
		initOut + "/terraform/.terraform/terraform.tfstate",
		initOut + "/terraform/fleetc_emulator_override.tf",
		initOut + "/terraform/" + deploy.EmulatorFilePrefix + "flow.asl.json",
		"fleet.tfplan",
		defaultOut + "/runtime/greeter.json",
	} {
		if !ignored(p) {
			t.Errorf("%s is not ignored", p)
		}
	}
	for _, p := range []string{initOut + "/.fleetc-manifest", initOut + "/terraform/versions.tf", initOut + "/runtime/greeter.json", initSpec, "handler/handler.py"} {
		if ignored(p) {
			t.Errorf("%s is ignored; it must be committed", p)
		}
	}
	// A second run of writeIgnore adds nothing.
	var out bytes.Buffer
	if err := writeIgnore(dir, &out); err != nil || out.Len() != 0 {
		t.Errorf("writeIgnore again: %v %q", err, out.String())
	}
	if b2, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); !bytes.Equal(b, b2) {
		t.Errorf("writeIgnore again changed .gitignore:\n%s", b2)
	}
}
