package dev

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// TestDevStarterProject is issue 35's first hour: `fleetc init` into an empty directory, then
// `fleetc dev` on the spec it wrote, then the `fleetc send` hint dev prints, run as printed.
// The first event completes with nothing dead-lettered, through the starter's own
// handler/handler.py (python3 /app/handler.py in the spec, run from the project's handler/):
// no stand-in, no edit.
func TestDevStarterProject(t *testing.T) {
	t.Parallel() // a dev session on the shared kumo under a fleet name of its own: it overlaps the other
	endpoint := devtest.Env(t)
	if _, err := exec.LookPath("python3"); err != nil {
		verifytest.SkipIfMissing(t, err)
	}
	fleetc, _ := devtest.Binaries(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "hello")
	if out, err := exec.Command(fleetc, "init", project).CombinedOutput(); err != nil {
		t.Fatalf("fleetc init: %v\n%s", err, out)
	}
	// A fleet name of its own, so runs sharing kumo never collide (the only edit: names).
	spec := filepath.Join(project, "fleet", "fleet.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	name := "st" + strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	b = []byte(strings.Replace(strings.Replace(string(b), "fleet: hello", "fleet: "+name, 1), "name: hello", "name: "+name, 1))
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var extra []string
	if rie, err := verifytest.Tool("aws-lambda-rie"); err == nil {
		extra = append(extra, "--rie-bin", rie)
	}
	s := devtest.Start(t, spec, filepath.Join(dir, "out"), endpoint, extra...)

	local := filepath.Join(project, "handler", "handler.py")
	if want := "handler runs as: python3 " + local; !strings.Contains(s.Log(), want) {
		t.Errorf("dev did not print the local command line %q:\n%s", want, s.Log())
	}
	hint := regexp.MustCompile(`(?m)^  (fleetc send .*)$`).FindStringSubmatch(s.Log())
	if hint == nil {
		t.Fatalf("dev printed no fleetc send hint:\n%s", s.Log())
	}
	args := strings.Fields(hint[1])[1:]
	send := exec.Command(fleetc, args...)
	send.Env = append(os.Environ(), "FLEETC_AWS_ENDPOINT=")
	if out, err := send.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", hint[1], err, out)
	}
	s.WaitFor(t, "the starter's first event completed", 2*time.Minute, func() bool {
		f := s.Fleet(t)
		return f.Ledger.Completed == 1 || f.Ledger.DeadLettered > 0
	})
	f := s.Fleet(t)
	if f.Ledger.Completed != 1 || f.Ledger.DeadLettered != 0 {
		t.Fatalf("the starter's first event: completed %d, dead-lettered %d (want 1, 0):\n%s", f.Ledger.Completed, f.Ledger.DeadLettered, s.Log())
	}
	if strings.Contains(s.Log(), "stand-in handler") {
		t.Errorf("a stand-in answered instead of the starter's handler.py:\n%s", s.Log())
	}
	s.Stop(t)
}
