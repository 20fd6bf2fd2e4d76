// Package compiler drives fleetc: load → lower → check → generate. Every backend is a pure
// function of the IR; this package only sequences them and collects their files.
package compiler

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
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

// Load reads, validates and resolves a spec. The fleet is nil when the spec has input
// errors (syntax, schema, references, names); rule findings come back with a usable fleet.
// Input errors do not hide the rest: the parts of the spec that parsed are still lowered
// and checked, and a P010 note says which checks wait for the errors to be fixed.
// A spec that declares environments is a fleet only with one chosen: Load reports a P013
// for it; LoadEnv names the environment.
func Load(path string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadEnv(path, "")
}

// LoadBytes is Load for a spec held in memory; name is used in diagnostics.
func LoadBytes(name string, src []byte) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadBytesEnv(name, src, "")
}

// LoadEnv is Load for environment env of the spec ("" for a spec without environments).
// Every diagnostic found in the environment carries its name (Diagnostic.Env).
func LoadEnv(path, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	return lowerEnv(file, ds, env)
}

// LoadLocalEnv is LoadEnv for a fleet that runs on this machine (fleetc dev): its workers
// inherit the developer's environment, so api_key_env is a key source there (rule M007).
func LoadLocalEnv(path, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	if file != nil {
		file.Local = true
	}
	return lowerEnv(file, ds, env)
}

// LoadBytesEnv is LoadEnv for a spec held in memory.
func LoadBytesEnv(name string, src []byte, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadBytesEnvAs(name, src, env, env)
}

// LoadBytesEnvAs is LoadBytesEnv lowered under the names of environment namesAs rather than
// env's own. fleetc diff --base-env compares two environments this way: names always differ
// between environments, so comparing them as they are would report every resource replaced;
// under one set of names only what really differs (region, scale, image, ARNs) shows.
func LoadBytesEnvAs(name string, src []byte, env, namesAs string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	file, ds := spec.Load(name, src)
	return lowerEnvAs(file, ds, env, namesAs)
}

// lowerEnv selects env and lowers it. Problems of the spec as written (its syntax, its
// schema, the environments block itself) are reported once, before any environment.
func lowerEnv(file *spec.File, ds diag.Diagnostics, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return lowerEnvAs(file, ds, env, env)
}

func lowerEnvAs(file *spec.File, ds diag.Diagnostics, env, namesAs string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	if file == nil || file.Fleet == nil || ds.HasErrors() {
		return lower(file, ds)
	}
	sel, sds := file.Select(env)
	switch {
	case sel == nil:
		return file, nil, append(ds, sds...).Sorted()
	case sel == file:
		return lower(file, ds)
	}
	sel.Env, sel.Local = namesAs, file.Local
	sel, fleet, eds := lower(sel, sds)
	for _, d := range eds {
		d.Env = env
	}
	return sel, fleet, append(ds, eds...).Sorted()
}

// Environments lists the environments of the spec at path; nil when it declares none (or
// cannot be read: Load says why).
func Environments(path string) []string {
	file, _ := spec.LoadFile(path)
	if file == nil {
		return nil
	}
	return file.Environments()
}

func lower(file *spec.File, ds diag.Diagnostics) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	if file == nil || file.Fleet == nil {
		if ds.HasErrors() && !unreadable(ds) {
			ds = append(ds, postponed(file, nil))
		}
		return file, nil, ds.Sorted()
	}
	fleet, lds := ir.Lower(file)
	ds = append(ds, lds...)
	cds := check.Run(fleet)
	file.Index.Locate(cds)
	if !ds.HasErrors() {
		return file, fleet, append(ds, cds...).Sorted()
	}
	// Input errors: keep the rule findings about parts that neither have errors nor involve
	// a part that has; fleet-wide findings need the whole fleet and wait.
	skip := maps.Clone(file.Removed)
	if skip == nil {
		skip = map[string]bool{}
	}
	maps.Copy(skip, file.Affected)
	for _, d := range ds {
		if p := spec.Part(d.Path); d.Severity == diag.Error && p != "" {
			skip[p] = true
		}
	}
	for _, d := range cds {
		if p := spec.Part(d.Path); p != "" && !skip[p] {
			ds = append(ds, d)
		}
	}
	return file, nil, append(ds, postponed(file, skip)).Sorted()
}

// unreadable reports whether the file could not be read at all (P009): nothing to postpone.
func unreadable(ds diag.Diagnostics) bool {
	return slices.ContainsFunc(ds, func(d *diag.Diagnostic) bool { return d.Code == "P009" })
}

// postponed is the note that ends a report with input errors: which checks did not run.
// It sits on the file's last line, so it sorts after every finding.
func postponed(file *spec.File, skip map[string]bool) *diag.Diagnostic {
	var notes diag.Diagnostics
	d := notes.Warnf("P010", "", "fix these first; more checks run after")
	if skip == nil {
		d.Detail = "Nothing else was checked: references, rules and generation need a spec whose syntax and structure are valid."
	} else if len(skip) == 0 {
		d.Detail = "Every part was checked. Fleet-wide rules and generation run once the errors are fixed."
	} else {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(skip)) {
			parts = append(parts, strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "."))
		}
		d.Detail = "Every other part was checked. Rules that involve " + strings.Join(parts, ", ") +
			", fleet-wide rules and generation run once the errors are fixed."
	}
	if file != nil {
		d.Subject = file.Index.End()
	}
	return d
}

// backends returns the generators in output order; each owns a distinct output directory.
// The runtime configs are rendered once, before them: they are written as runtime/<class>.json
// and the same bytes go to the backends that embed or measure them, so no backend imports
// another and the copies cannot differ.
// The Terraform backend's inventory (which spec part owns each resource) lands in inv.
func backends(f *ir.Fleet, configs runtimeconfig.Configs, inv *[]artifact.Resource) []func() ([]artifact.File, diag.Diagnostics) {
	return []func() ([]artifact.File, diag.Diagnostics){
		func() ([]artifact.File, diag.Diagnostics) {
			files, resources, ds := terraform.GenerateInventory(f, configs)
			*inv = resources
			return files, ds
		},
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
	var inv []artifact.Resource
	gens := backends(f, configs, &inv)
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
	set.SetInventory(inv)
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

// Build is load → lower → check → generate: the files fleetc writes, or nil when the spec has
// errors (the diagnostics say which). validate, build, plan and apply all go through it, so
// a spec that validates builds, and builds the same files everywhere.
func Build(path string) (*artifact.Set, diag.Diagnostics) {
	return BuildEnv(path, "")
}

// BuildEnv is Build for environment env of the spec ("" for a spec without environments).
func BuildEnv(path, env string) (*artifact.Set, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	return build(file, ds, env)
}

// BuildLocalEnv is BuildEnv for a fleet that runs on this machine (see LoadLocalEnv).
func BuildLocalEnv(path, env string) (*artifact.Set, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	if file != nil {
		file.Local = true
	}
	return build(file, ds, env)
}

func build(file *spec.File, ds diag.Diagnostics, env string) (*artifact.Set, diag.Diagnostics) {
	_, fleet, ds := lowerEnv(file, ds, env)
	if fleet == nil || ds.HasErrors() {
		return nil, ds
	}
	set, gds := Generate(fleet)
	for _, d := range gds {
		d.Env = env
	}
	ds = append(ds, gds...).Sorted()
	if gds.HasErrors() {
		return nil, ds
	}
	return set, ds
}

// OutDir is where the files of environment env go under the output root: root itself for a
// spec without environments, root/<env> otherwise (build, plan, apply and dev agree on it).
func OutDir(root, env string) string {
	if env == "" {
		return root
	}
	return filepath.Join(root, env)
}

// Output is the files of one fleet a spec describes: the spec itself (Env "") or one of its
// environments.
type Output struct {
	Env string
	Set *artifact.Set // nil when this fleet has errors
}

// BuildAll builds every fleet the spec describes: the spec itself when it declares no
// environments, else each environment, in name order. A finding every environment shares
// is reported once without an environment; the others name the environments they are in.
func BuildAll(path string) ([]Output, diag.Diagnostics) {
	file, ds := spec.LoadFile(path)
	envs := []string{""}
	if file != nil && file.Fleet != nil && !ds.HasErrors() && len(file.Environments()) > 0 {
		envs = file.Environments()
	}
	var outs []Output
	var perEnv []diag.Diagnostics
	for _, env := range envs {
		set, eds := build(file, ds, env)
		outs = append(outs, Output{Env: env, Set: set})
		perEnv = append(perEnv, eds)
	}
	if len(envs) == 1 {
		return outs, perEnv[0]
	}
	return outs, append(ds, shared(envs, perEnv)...).Sorted()
}

// shared folds the environments' findings: one finding per place and message, naming the
// environments it occurs in, or none when it occurs in all of them.
func shared(envs []string, perEnv []diag.Diagnostics) diag.Diagnostics {
	type key struct {
		sev                  diag.Severity
		code, summary, where string
	}
	seen := map[key]*diag.Diagnostic{}
	in := map[key][]string{}
	var out diag.Diagnostics
	for i, ds := range perEnv {
		for _, d := range ds {
			k := key{d.Severity, d.Code, d.Summary, ""}
			if d.Subject != nil {
				k.where = d.Subject.String()
			}
			if !slices.Contains(in[k], envs[i]) {
				in[k] = append(in[k], envs[i])
			}
			if seen[k] == nil {
				c := *d
				seen[k] = &c
				out = append(out, &c)
			}
		}
	}
	for k, d := range seen {
		d.Env = strings.Join(in[k], ", ")
		if len(in[k]) == len(envs) {
			d.Env = ""
		}
	}
	return out
}

// Check is what `fleetc validate` runs: everything build checks, the backends' own checks
// included, without writing anything, for every environment of the spec.
func Check(path string) diag.Diagnostics {
	_, ds := BuildAll(path)
	return ds
}
