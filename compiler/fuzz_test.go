package compiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

// FuzzCompile drives the whole pipeline — load, lower, rules, every backend — on arbitrary
// bytes: it never panics, every diagnostic has a position, output is produced only for specs
// without errors, and that output is deterministic: a second build, and a build with every
// YAML mapping reversed, give the same bytes. The seeds (examples, kitchen sink, every rule
// and bad-spec fixture) run in every go test.
//
//	go test ./compiler -run '^$' -fuzz FuzzCompile -fuzztime 10m
func FuzzCompile(f *testing.F) {
	var seeds []string
	for _, g := range []string{"../examples/*/fleet.yaml", "ir/testdata/bad/*.yaml", "check/testdata/*/*.yaml", kitchenSink} {
		m, _ := filepath.Glob(g)
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// A spec with environments (examples/environments is a seed) is compiled in one of
		// them, so selecting and merging is fuzzed too.
		env := irtest.FirstEnvOfSource(src)
		_, fleet, ds := compiler.LoadBytesEnv("fuzz.yaml", src, env)
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
		if gds.HasErrors() {
			return
		}
		if len(set.Paths()) == 0 {
			t.Fatal("a valid spec generated nothing")
		}
		err := checkDeterministic("fuzz.yaml", src, 2, true, func(src []byte) *artifact.Set {
			_, fleet, ds := compiler.LoadBytesEnv("fuzz.yaml", src, env)
			if fleet == nil || ds.HasErrors() {
				return nil
			}
			set, gds := compiler.Generate(fleet)
			if gds.HasErrors() {
				return nil
			}
			return set
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
