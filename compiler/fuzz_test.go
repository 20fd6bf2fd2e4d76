package compiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetc/fleetc/compiler"
)

// FuzzCompile drives the whole pipeline — load, lower, rules, every backend — on arbitrary
// bytes: it never panics, every diagnostic has a position, and output is produced only for
// specs without errors.
//
//	go test ./compiler -run '^$' -fuzz FuzzCompile -fuzztime 10m
func FuzzCompile(f *testing.F) {
	var seeds []string
	for _, g := range []string{"../examples/*/fleet.yaml", "ir/testdata/bad/*.yaml", "check/testdata/*/*.yaml"} {
		m, _ := filepath.Glob(g)
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, fleet, ds := compiler.LoadBytes("fuzz.yaml", src)
		for _, d := range ds {
			if d.Subject == nil {
				t.Fatalf("diagnostic without position: %v", d)
			}
		}
		if fleet == nil || ds.HasErrors() {
			return
		}
		set, gds := compiler.Generate(fleet)
		for _, d := range gds {
			if d.Subject == nil {
				t.Fatalf("generation diagnostic without position: %v", d)
			}
		}
		if !gds.HasErrors() && len(set.Paths()) == 0 {
			t.Fatal("a valid spec generated nothing")
		}
	})
}
