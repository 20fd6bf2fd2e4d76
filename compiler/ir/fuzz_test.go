package ir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// FuzzLoadAndLower: whatever the bytes, loading and lowering never panic or hang, and a
// spec that does not load always says why, with a position.
//
//	go test ./compiler/ir -run '^$' -fuzz FuzzLoadAndLower -fuzztime 10m
func FuzzLoadAndLower(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad/*.yaml")
	examples, _ := filepath.Glob("../../examples/*/fleet.yaml")
	for _, p := range append(seeds, examples...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, ds := spec.Load("fuzz.yaml", src)
		for _, d := range ds {
			if d.Subject == nil {
				t.Fatalf("diagnostic without position: %v", d)
			}
		}
		if file == nil || file.Fleet == nil {
			if !ds.HasErrors() {
				t.Fatal("no spec and no error")
			}
			return
		}
		if ds.HasErrors() && len(file.Removed) == 0 {
			t.Fatal("a spec came back together with errors but without leaving out the parts that have them")
		}
		_, lds := ir.Lower(file)
		for _, d := range lds {
			if d.Subject == nil {
				t.Fatalf("lowering diagnostic without position: %v", d)
			}
		}
	})
}
