package examples

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// pinnedUses is an action pinned by full commit, its release in a comment: a tag can be
// moved to other code after review, a commit cannot.
var pinnedUses = regexp.MustCompile(`^\s*(- )?uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$`)

// Every action the workflows fleetc init writes is pinned by commit.
func TestWorkflowActionsArePinnedByCommit(t *testing.T) {
	n := 0
	eachWorkflow(t, func(name string, src []byte, _ workflow) {
		for i, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, "uses:") {
				n++
				if !pinnedUses.MatchString(line) {
					t.Errorf("%s:%d: %q is not pinned by commit (owner/repo@<40 hex> # vX.Y.Z)", name, i+1, strings.TrimSpace(line))
				}
			}
		}
	})
	if n == 0 {
		t.Fatal("no uses: lines found")
	}
}

// Each workflow's "Install fleetc" step installs only a commit or a release: with a
// branch, or nothing set, it fails before go install. The step's own script runs here
// under bash, with a go on PATH that records its arguments.
func TestWorkflowsInstallFleetcOnlyAtACommitOrRelease(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIPPED: bash not on PATH")
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	steps := 0
	eachWorkflow(t, func(name string, _ []byte, wf workflow) {
		if ref := wf.Env["FLEETC_REF"]; ref != "" {
			t.Errorf("%s: FLEETC_REF defaults to %q; leave it for the user to pin", name, ref)
		}
		for job, j := range wf.Jobs {
			for _, st := range j.Steps {
				if st.Name != "Install fleetc" {
					continue
				}
				steps++
				for ref, want := range map[string]string{
					"main": "", "": "", "v1.2": "", commit[:12]: "", commit + "\n": "",
					commit: "install github.com/fleetc/fleetc/cmd/fleetc@" + commit, "v0.2.0": "install github.com/fleetc/fleetc/cmd/fleetc@v0.2.0",
				} {
					got, out, err := runStep(t, st.Run, ref)
					if want == "" && (err == nil || got != "" || !strings.Contains(out, "FLEETC_REF must be a fleetc commit")) {
						t.Errorf("%s %s: FLEETC_REF=%q: go called with %q, %v, %s", name, job, ref, got, err, out)
					}
					if want != "" && (err != nil || got != want) {
						t.Errorf("%s %s: FLEETC_REF=%q: go called with %q, want %q (%v, %s)", name, job, ref, got, want, err, out)
					}
				}
			}
		}
	})
	if steps != 3 {
		t.Errorf("%d Install fleetc steps, want 3 (review, publish, deploy)", steps)
	}
}

type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name string `yaml:"name"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func eachWorkflow(t *testing.T, f func(name string, src []byte, wf workflow)) {
	t.Helper()
	names, err := fs.Glob(CI, "ci/*.yml")
	if err != nil || len(names) == 0 {
		t.Fatalf("workflows: %v %v", names, err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(CI, name)
		if err != nil {
			t.Fatal(err)
		}
		var wf workflow
		if err := yaml.Unmarshal(src, &wf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f(name, src, wf)
	}
}

// runStep runs a step's script as GitHub's bash shell does (-e), and returns what the fake
// go was called with.
func runStep(t *testing.T, script, ref string) (goArgs, output string, err error) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "go.args")
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte("#!/bin/sh\nprintf '%s' \"$*\" > "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "FLEETC_REF=" + ref}
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(log)
	return string(b), string(out), err
}
