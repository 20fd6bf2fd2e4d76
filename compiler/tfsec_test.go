package compiler_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// ignoreRE is an inline tfsec:ignore comment and the reason written after it.
var ignoreRE = regexp.MustCompile(`(?m)^\s*# tfsec:ignore:([a-z0-9-]+)(.*)$`)

// TestTfsecEveryExample runs tfsec over the Terraform of every example and the kitchen sink
// (which creates a KMS key), one directory each under one root, in one run: no HIGH or
// CRITICAL finding that no inline tfsec:ignore accepts, and every ignore carries its reason.
// The kitchen sink again without the ignore comments: tfsec finds what they accept, so the
// check is not vacuous (the ignores, not a blind tfsec, make it clean).
func TestTfsecEveryExample(t *testing.T) {
	root := t.TempDir()
	sets := map[string]*artifact.Set{}
	for _, path := range examples(t) {
		name := filepath.Base(filepath.Dir(path))
		set := buildFile(t, path)
		sets[name] = set
		if err := artifact.WriteDir(filepath.Join(root, name), set); err != nil {
			t.Fatal(err)
		}
		ignores := 0
		for _, p := range set.Paths() {
			b, _ := set.Get(p)
			for _, m := range ignoreRE.FindAllStringSubmatch(string(b), -1) {
				ignores++
				if why := strings.TrimSpace(m[2]); len(why) < 20 || strings.Contains(why, "NO REASON") {
					t.Errorf("%s/%s: tfsec:ignore:%s without its reason: %q", name, p, m[1], why)
				}
			}
		}
		if ignores == 0 {
			t.Errorf("%s: no tfsec:ignore at all; the wildcard statements lost their reasons?", name)
		}
	}
	findings, err := verifytest.Tfsec(root)
	verifyOrSkip(t, "tfsec", err)
	for _, f := range findings {
		t.Errorf("tfsec: %s: %v", strings.TrimPrefix(f.Location.Filename, root+"/"), f)
	}

	bare := filepath.Join(t.TempDir(), "bare")
	set := sets["kitchen-sink"]
	for _, p := range set.Paths() {
		if !strings.HasPrefix(p, "terraform/") {
			continue
		}
		b, _ := set.Get(p)
		full := filepath.Join(bare, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, ignoreRE.ReplaceAll(b, nil), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := verifytest.Tfsec(bare)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Error("without its tfsec:ignore comments the kitchen sink has no finding: is tfsec checking anything?")
	}
}
