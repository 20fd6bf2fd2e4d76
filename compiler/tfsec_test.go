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

// TestTfsecEveryExample runs tfsec over the Terraform of every example (and the kitchen
// sink, which creates a KMS key): no HIGH or CRITICAL finding that no inline tfsec:ignore
// accepts, and every ignore carries its reason. With the ignores removed tfsec finds the
// wildcards again, so the check is not vacuous: the ignores, not a blind tfsec, make it clean.
func TestTfsecEveryExample(t *testing.T) {
	for _, path := range examples(t) {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			set := buildFile(t, path)
			out := filepath.Join(t.TempDir(), "out")
			if err := artifact.WriteDir(out, set); err != nil {
				t.Fatal(err)
			}
			tf := filepath.Join(out, "terraform")
			findings, err := verifytest.Tfsec(tf)
			verifyOrSkip(t, "tfsec", err)
			for _, f := range findings {
				t.Errorf("tfsec: %v", f)
			}
			ignores := 0
			for _, p := range set.Paths() {
				b, _ := set.Get(p)
				for _, m := range ignoreRE.FindAllStringSubmatch(string(b), -1) {
					ignores++
					if why := strings.TrimSpace(m[2]); len(why) < 20 || strings.Contains(why, "NO REASON") {
						t.Errorf("%s: tfsec:ignore:%s without its reason: %q", p, m[1], why)
					}
				}
			}
			if ignores == 0 {
				return
			}
			// The same files without the ignore comments: tfsec must find what they accept.
			for _, p := range set.Paths() {
				if !strings.HasPrefix(p, "terraform/") {
					continue
				}
				b, _ := set.Get(p)
				if err := os.WriteFile(filepath.Join(out, p), ignoreRE.ReplaceAll(b, nil), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bare, err := verifytest.Tfsec(tf)
			if err != nil {
				t.Fatal(err)
			}
			if len(bare) == 0 {
				t.Errorf("%d ignores, yet tfsec finds nothing without them: is it checking anything?", ignores)
			}
		})
	}
}
