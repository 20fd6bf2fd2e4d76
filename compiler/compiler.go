// Package compiler drives fleetc: load → lower → check → generate. Every backend is a pure
// function of the IR; this package only sequences them and collects their files.
package compiler

import (
	"sync"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/asl"
	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/keda"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Load reads, validates and resolves a spec. The fleet is nil when the spec has errors
// that stop lowering (syntax, schema); rule findings come back with a usable fleet.
func Load(path string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	return lower(file, ds)
}

// LoadBytes is Load for a spec held in memory; name is used in diagnostics.
func LoadBytes(name string, src []byte) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	file, ds := spec.Load(name, src)
	return lower(file, ds)
}

func lower(file *spec.File, ds diag.Diagnostics) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	if file == nil || ds.HasErrors() {
		return file, nil, ds
	}
	fleet, lds := ir.Lower(file)
	ds = append(ds, lds...)
	if lds.HasErrors() {
		return file, nil, ds.Sorted()
	}
	cds := check.Run(fleet)
	file.Index.Locate(cds)
	return file, fleet, append(ds, cds...).Sorted()
}

// backends returns the generators in output order; each owns a distinct output directory.
// The runtime configs are rendered once, before them: they are written as runtime/<class>.json
// and the same bytes go to the backends that embed or measure them, so no backend imports
// another and the copies cannot differ.
func backends(f *ir.Fleet, configs runtimeconfig.Configs) []func() ([]artifact.File, diag.Diagnostics) {
	return []func() ([]artifact.File, diag.Diagnostics){
		func() ([]artifact.File, diag.Diagnostics) { return terraform.Generate(f, configs) },
		func() ([]artifact.File, diag.Diagnostics) { return asl.Generate(f) },
		func() ([]artifact.File, diag.Diagnostics) { return asl.GenerateInputs(f) },
		func() ([]artifact.File, diag.Diagnostics) { return keda.Generate(f, configs) },
		func() ([]artifact.File, diag.Diagnostics) { return eventschema.Generate(f) },
		func() ([]artifact.File, diag.Diagnostics) { return runtimeconfig.Files(f, configs), nil },
	}
}

// Generate runs every backend over the fleet and returns all generated files.
func Generate(f *ir.Fleet) (*artifact.Set, diag.Diagnostics) {
	configs, ds := runtimeconfig.RenderAll(f)
	// Backends are pure functions of the IR (and the rendered configs): run them concurrently,
	// collect in a fixed order.
	type result struct {
		files []artifact.File
		ds    diag.Diagnostics
	}
	gens := backends(f, configs)
	results := make([]result, len(gens))
	var wg sync.WaitGroup
	for i, gen := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].files, results[i].ds = gen()
		}()
	}
	wg.Wait()
	set, _ := artifact.NewSet()
	for _, r := range results {
		ds = append(ds, r.ds...)
		for _, file := range r.files {
			if err := set.Add(file); err != nil {
				ds.Errorf("P000", "", "internal error: %v", err)
			}
		}
	}
	if f.Index != nil {
		f.Index.Locate(ds)
	}
	return set, ds.Sorted()
}

// Check is what `fleetc validate` runs: everything build checks, the backends' own checks
// included, without writing anything. A spec that validates therefore builds.
func Check(path string) diag.Diagnostics {
	_, fleet, ds := Load(path)
	if fleet == nil || ds.HasErrors() {
		return ds
	}
	_, gds := Generate(fleet)
	return append(ds, gds...).Sorted()
}
