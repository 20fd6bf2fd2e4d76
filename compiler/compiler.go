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

// backends run in this order; each owns a distinct output directory.
var backends = []func(*ir.Fleet) ([]artifact.File, diag.Diagnostics){
	terraform.Generate,
	asl.Generate,
	asl.GenerateInputs,
	keda.Generate,
	eventschema.Generate,
	runtimeconfig.Generate,
}

// Generate runs every backend over the fleet and returns all generated files.
func Generate(f *ir.Fleet) (*artifact.Set, diag.Diagnostics) {
	// Backends are pure functions of the IR: run them concurrently, collect in a fixed order.
	type result struct {
		files []artifact.File
		ds    diag.Diagnostics
	}
	results := make([]result, len(backends))
	var wg sync.WaitGroup
	for i, gen := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].files, results[i].ds = gen(f)
		}()
	}
	wg.Wait()
	var ds diag.Diagnostics
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
