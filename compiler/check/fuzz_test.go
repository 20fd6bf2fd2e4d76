package check

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// FuzzCheck runs the catalog over any spec that loads and lowers: no rule may crash
// (Run turns a panic into an "internal error" finding) and every finding has a pointer.
// Seeds: every fixture and example. go test ./compiler/check -fuzz FuzzCheck
func FuzzCheck(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	examples, _ := filepath.Glob("../../examples/*/fleet.yaml")
	for _, p := range append(seeds, examples...) {
		f.Add(mustReadF(f, p))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, ds := spec.Load("fuzz.yaml", src)
		if file == nil || ds.HasErrors() {
			return
		}
		fl, lds := ir.Lower(file)
		if lds.HasErrors() {
			return
		}
		for _, d := range Run(fl) {
			if strings.Contains(d.Summary, "internal error") {
				t.Fatalf("rule crashed: %v", d.Summary)
			}
			if d.Path != "" && !strings.HasPrefix(d.Path, "/") {
				t.Fatalf("%s: bad pointer %q", d.Code, d.Path)
			}
		}
	})
}
