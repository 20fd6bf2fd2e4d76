package compiler_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/spec/diag"
)

// One Compile holds together what the commands read from it: every resource of the
// inventory is a block of the recorded module and is written in its .tf file, and every block
// of the module is in the inventory; each attribute's source is in its file, and each file
// it reads was generated; the contracts are the generated schemas byte for byte, one per
// event; the runtime configs are the runtime files.
func TestCompileResultIsConsistent(t *testing.T) {
	for _, path := range examples(t) {
		all, _, err := compiler.CompileAll(compiler.Input{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range all {
			name := strings.TrimSpace(path + " " + res.Env)
			if res.Files == nil {
				t.Fatalf("%s does not build: %v", name, res.Diagnostics)
			}
			checkModule(t, name, res.Files)
			checkContracts(t, name, res)
			for class, cfg := range res.Configs {
				if !slices.ContainsFunc(res.Files.Files(), func(f artifact.File) bool { return bytes.Equal(f.Bytes, cfg) && strings.HasSuffix(f.Path, ".json") }) {
					t.Errorf("%s: the runtime config of %s is no generated file", name, class)
				}
			}
		}
	}
}

// checkModule holds the inventory, the module and the .tf files to one another.
func checkModule(t *testing.T, name string, set *artifact.Set) {
	t.Helper()
	mod := set.Module()
	if len(mod.Inventory) == 0 {
		t.Fatalf("%s: empty inventory", name)
	}
	blocks := map[string]*artifact.Block{}
	for i := range mod.Blocks {
		b := &mod.Blocks[i]
		blocks[b.Address()] = b
		src, ok := set.Get(b.File)
		if !ok {
			t.Errorf("%s: %s is in %s, which was not generated", name, b.Address(), b.File)
			continue
		}
		for _, a := range b.Attrs {
			if !bytes.Contains(src, []byte(a.Src)) {
				t.Errorf("%s: %s.%s = %s is not in %s", name, b.Address(), a.Path, a.Src, b.File)
			}
			for _, in := range a.Inputs {
				if _, ok := set.Get(in.File); !ok {
					t.Errorf("%s: %s.%s reads %s, which was not generated", name, b.Address(), a.Path, in.File)
				}
			}
		}
		if b.Kind != artifact.KindOutput {
			if _, ok := set.Resource(b.Address()); !ok {
				t.Errorf("%s: %s is in the module, not in the inventory", name, b.Address())
			}
		}
	}
	for _, r := range mod.Inventory {
		b, ok := blocks[r.Address]
		if !ok || b.File != r.File || b.Type != r.Type {
			t.Errorf("%s: inventory %s (%s in %s) has no such block in the module", name, r.Address, r.Type, r.File)
			continue
		}
		src, _ := set.Get(r.File)
		if header := fmt.Sprintf("%s %q %q {", b.Kind, b.Type, b.Name); !bytes.Contains(src, []byte(header)) {
			t.Errorf("%s: %s is not written in %s", name, r.Address, r.File)
		}
	}
}

// checkContracts holds the contracts to the generated schemas and the fleet's events.
func checkContracts(t *testing.T, name string, res *compiler.Result) {
	t.Helper()
	if len(res.Contracts) != len(res.Fleet.Events) {
		t.Errorf("%s: %d contracts for %d events", name, len(res.Contracts), len(res.Fleet.Events))
	}
	for i, c := range res.Contracts {
		e := res.Fleet.Events[min(i, len(res.Fleet.Events)-1)]
		if c.DetailType != e.DetailType || c.Source != e.Source || c.Version != e.Version {
			t.Errorf("%s: contract %d is %s/%s v%d, event %s/%s v%d", name, i, c.Source, c.DetailType, c.Version, e.Source, e.DetailType, e.Version)
		}
		schema, ok := res.Files.Get(eventschema.SchemaPath(e))
		if !ok || !bytes.Equal(schema, c.Content) {
			t.Errorf("%s: contract %s is not the generated %s", name, c.DetailType, eventschema.SchemaPath(e))
		}
	}
}

// Compile stops where it is told: Checked generates nothing; Generated generates nothing for
// a fleet the rules object to, and Reviewed does, with the rules' findings kept.
func TestCompileStops(t *testing.T) {
	const spec = "check/testdata/M007/fail.yaml" // lowers; rule M007 objects to it
	for _, tc := range []struct {
		stop  compiler.Stop
		files bool
	}{{compiler.Checked, false}, {compiler.Generated, false}, {compiler.Reviewed, true}} {
		res, err := compiler.Compile(compiler.Input{Path: spec, Stop: tc.stop})
		if err != nil {
			t.Fatal(err)
		}
		if res.Fleet == nil || !res.Diagnostics.HasErrors() {
			t.Fatalf("stop %d: fleet %v, diagnostics %v: want a fleet with rule errors", tc.stop, res.Fleet != nil, res.Diagnostics)
		}
		if (res.Files != nil) != tc.files || (res.Contracts != nil) != (tc.files && len(res.Fleet.Events) > 0) {
			t.Errorf("stop %d: files %v contracts %d, want files %v", tc.stop, res.Files != nil, len(res.Contracts), tc.files)
		}
	}
	if _, err := compiler.Compile(compiler.Input{Source: []byte("fleet: x\n")}); err == nil {
		t.Error("a spec in memory without a name compiled")
	}
	// A path that cannot be read is a finding, as for every command, not an error.
	if res, err := compiler.Compile(compiler.Input{Path: ""}); err != nil || !slices.ContainsFunc(res.Diagnostics, func(d *diag.Diagnostic) bool { return d.Code == "P009" }) {
		t.Errorf("empty path: %v, %v; want a P009 finding", err, res)
	}
}

// Each backend writes only under its own directories, so the list of backends says where
// every generated file comes from; a backend without codes of its own shares a directory
// with the backend whose codes it reports.
func TestBackendsWriteUnderTheirDirs(t *testing.T) {
	for _, path := range examples(t) {
		all, _, err := compiler.CompileAll(compiler.Input{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range all {
			written := 0
			for _, b := range compiler.Backends() {
				files, ds := b.Generate(res.Fleet, res.Configs)
				if ds.HasErrors() {
					t.Fatalf("%s: %s: %v", path, b.Name, ds)
				}
				for _, f := range files {
					if !slices.ContainsFunc(b.Dirs, func(d string) bool { return strings.HasPrefix(f.Path, d+"/") }) {
						t.Errorf("%s: backend %s wrote %s, outside %v", path, b.Name, f.Path, b.Dirs)
					}
					if got, _ := res.Files.Get(f.Path); !bytes.Equal(got, f.Bytes) {
						t.Errorf("%s: backend %s alone writes %s differently from Compile", path, b.Name, f.Path)
					}
				}
				written += len(files)
			}
			if written != len(res.Files.Paths()) {
				t.Errorf("%s: the backends write %d files, Compile %d", path, written, len(res.Files.Paths()))
			}
		}
	}
}
