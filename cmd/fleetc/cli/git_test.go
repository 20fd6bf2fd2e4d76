package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir with a fixed identity, failing the test on error.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// A pull request commits a fake repository (HEAD, objects/, refs/, a config naming the
// checkout as its work tree) in the spec's directory, whose HEAD~1 holds the pull request's
// own spec. `fleetc diff --base HEAD~1` must still read the checkout's real base, so the
// breaking change is seen; before, `git -C <spec dir>` discovered the fake and saw none.
func TestFakeRepositoryBesideTheSpecCannotChooseTheBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	changed := []byte(strings.Replace(string(src), researcherFIFO, "    step: { p95: 90s, max: 10m }", 1))

	// The attacker's repository: two commits, both with the changed spec.
	fake := t.TempDir()
	gitIn(t, fake, "init", "-q")
	write(t, filepath.Join(fake, "deploy", "fleet.yaml"), changed)
	gitIn(t, fake, "add", ".")
	gitIn(t, fake, "commit", "-q", "-m", "one")
	gitIn(t, fake, "commit", "-q", "--allow-empty", "-m", "two")

	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	spec := filepath.Join(dir, "deploy", "fleet.yaml")
	write(t, spec, src)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	// The pull request: the breaking change, and the fake repository beside the spec.
	write(t, spec, changed)
	if out, err := exec.Command("cp", "-r", filepath.Join(fake, ".git", "HEAD"), filepath.Join(fake, ".git", "objects"), filepath.Join(fake, ".git", "refs"), filepath.Join(dir, "deploy")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	write(t, filepath.Join(dir, "deploy", "config"), []byte("[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = false\n"))
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "pull request")

	t.Chdir(dir)
	for _, args := range [][]string{
		{"diff", "--base", "HEAD~1", "deploy/fleet.yaml", "--fail-on", "replacement"},
		{"diff", "--base", "HEAD~1", spec, "--fail-on", "replacement"},
	} {
		code, out, errs := run(t, args...)
		if code != 1 || !strings.Contains(out, "aws_sqs_queue.researcher will be destroyed and re-created") {
			t.Errorf("fleetc %v: exit %d, want 1 and the replacement\n%s%s", args, code, out, errs)
		}
	}
	// Run from inside the fake repository's directory, git refuses to take it as a repository.
	t.Chdir(filepath.Join(dir, "deploy"))
	if code, out, errs := run(t, "diff", "--base", "HEAD~1", "fleet.yaml"); code == 1 || code == 0 && strings.Contains(out, "no changes") {
		t.Errorf("from the fake directory: exit %d\n%s%s", code, out, errs)
	}
}

// A spec outside the working directory's work tree is refused, not read from another repository.
func TestSpecOutsideTheWorkTreeIsRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	other := t.TempDir()
	gitIn(t, other, "init", "-q")
	spec := filepath.Join(other, "fleet.yaml")
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	write(t, spec, src)
	gitIn(t, other, "add", ".")
	gitIn(t, other, "commit", "-q", "-m", "base")

	here := t.TempDir()
	gitIn(t, here, "init", "-q")
	t.Chdir(here)
	code, _, errs := run(t, "diff", "--base", "HEAD", spec)
	if code != exitUsage || !strings.Contains(errs, "is outside the git work tree") {
		t.Errorf("exit %d\n%s", code, errs)
	}
	for _, ref := range []string{"--output=/tmp/x", "HEAD:other.yaml"} {
		if code, _, errs := run(t, "diff", "--base", ref, spec); code != exitUsage || !strings.Contains(errs, "is not a git revision") {
			t.Errorf("--base %s: exit %d\n%s", ref, code, errs)
		}
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
