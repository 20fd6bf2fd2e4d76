package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
)

// ciStep is the run script of the named step of examples/ci/fleet-review.yml, and its env.
func ciStep(t *testing.T, name string) (script string, env map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../../../examples/ci/fleet-review.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []struct{ Name, Run string } `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.Name == name {
				return s.Run, wf.Env
			}
		}
	}
	t.Fatalf("no step %q", name)
	return "", nil
}

// The CI example's drift gate compares with a committed output directory: its guard step
// passes on a repository that commits FLEET_OUT and fails, saying why, on one that ignores it.
func TestCIExampleOutputIsCommitted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	script, env := ciStep(t, "Generated output is committed")
	if script == "" || env["FLEET_OUT"] == "" || env["FLEET_OUT"] == "out" {
		t.Fatalf("FLEET_OUT %q, script %q", env["FLEET_OUT"], script)
	}
	src, _ := os.ReadFile("../../../examples/minimal/fleet.yaml")
	repo := func(ignore string) string {
		dir := t.TempDir()
		git := func(args ...string) {
			c := exec.Command("git", args...)
			c.Dir = dir
			c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q")
		os.MkdirAll(filepath.Join(dir, filepath.Dir(env["FLEET_SPEC"])), 0o755)
		os.WriteFile(filepath.Join(dir, env["FLEET_SPEC"]), src, 0o644)
		os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(ignore), 0o644)
		if code, _, errs := run(t, "build", filepath.Join(dir, env["FLEET_SPEC"]), "-o", filepath.Join(dir, env["FLEET_OUT"])); code != 0 {
			t.Fatal(errs)
		}
		git("add", "-A")
		git("commit", "-qm", "fleet")
		return dir
	}
	step := func(dir string) (string, error) {
		c := exec.Command("bash", "-euo", "pipefail", "-c", script)
		c.Dir = dir
		c.Env = append(os.Environ(), "FLEET_SPEC="+env["FLEET_SPEC"], "FLEET_OUT="+env["FLEET_OUT"])
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := step(repo("/out/\n")); err != nil {
		t.Errorf("committed output refused: %v\n%s", err, out)
	}
	if out, err := step(repo(env["FLEET_OUT"] + "/\n")); err == nil || !strings.Contains(out, "is not committed (or is git-ignored)") {
		t.Errorf("ignored output accepted: %v\n%s", err, out)
	}
}

// The review workflow fleetc init writes runs each FLEET_INVOKE class's handler once with
// fleetc invoke: on the starter project, as written, the step passes (the starter's
// handler.py answers the example); a handler whose result breaks nothing but exits non-zero
// fails it.
func TestCIExampleInvokesHandlers(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	spec := initStarter(t)
	project := filepath.Dir(filepath.Dir(spec))
	script, env := ciStep(t, "Handlers answer their contracts")
	if env["FLEET_INVOKE"] != "greeter" || env["FLEET_SPEC"] != initSpec {
		t.Fatalf("FLEET_INVOKE %q FLEET_SPEC %q: not the starter's class and spec", env["FLEET_INVOKE"], env["FLEET_SPEC"])
	}
	fleetc, _ := devtest.Binaries(t)
	step := func() (string, error) {
		c := exec.Command("bash", "-euo", "pipefail", "-c", script)
		c.Dir = project
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(fleetc)+":"+os.Getenv("PATH"), "FLEET_SPEC="+env["FLEET_SPEC"], "FLEET_INVOKE="+env["FLEET_INVOKE"])
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := step(); err != nil || !strings.Contains(out, `"greeting": "hello, name-example"`) {
		t.Errorf("the starter's handler failed the review step: %v\n%s", err, out)
	}
	py := filepath.Join(project, initHandler, "handler.py")
	if err := os.WriteFile(py, []byte("import sys\nsys.exit(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := step(); err == nil || !strings.Contains(out, "fleetc invoke: greeter: the step would be") {
		t.Errorf("a failing handler passed the review step: %v\n%s", err, out)
	}
}
