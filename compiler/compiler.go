// Package compiler drives fleetc: load → lower → check → generate. Every backend is a pure
// function of the IR; this package only sequences them and collects their files.
package compiler

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Input names the fleet Compile builds: a spec file (Path) or a spec held in memory (Name and
// Source), and which of its environments.
type Input struct {
	Path   string // the spec file to read
	Name   string // a spec held in memory: its name in diagnostics (Path is then unused)
	Source []byte
	Env    string // the environment ("" for a spec without environments)
	// NamesAs lowers Env under the names of environment NamesAs ("" for Env's own).
	// fleetc diff --base-env compares two environments this way: names always differ
	// between environments, so comparing them as they are would report every resource
	// replaced; under one set of names only what really differs (region, scale, image, ARNs)
	// shows.
	NamesAs string
	// Local is a fleet that runs on this machine (fleetc dev): its workers inherit the
	// developer's environment, so api_key_env is a key source there (rule M007).
	Local bool
	// AnyEnv takes the spec's first environment when Env is "": for a command whose output
	// cannot differ per environment (an environment overrides only where and how big the
	// fleet runs, never an event, an output or a handler), instead of refusing with P013.
	AnyEnv bool
	Stop   Stop // how far to go; the zero value generates a fleet the rules accept
}

// Stop is the stage Compile ends after.
type Stop uint8

const (
	// Generated: load, lower, check, and generate a fleet without errors (build, validate,
	// plan, apply, dev).
	Generated Stop = iota
	// Checked: load, lower and check only, for the commands that read the fleet and no file
	// (types, capacity, tools, simulate).
	Checked
	// Reviewed: generate even a fleet the rules object to (its findings are reported
	// beside what it would deploy: fleetc diff).
	Reviewed
)

// Result is one compiled fleet: everything the commands read, produced once.
type Result struct {
	Env  string
	Spec *spec.File // the spec as written (in environment Env); nil when it cannot be read
	// Fleet is the lowered fleet; nil when the spec has input errors (syntax, schema,
	// references, names). Rule findings come back with a usable fleet.
	Fleet *ir.Fleet
	// Diagnostics are every finding: input, rules, then the backends' when they ran.
	Diagnostics diag.Diagnostics
	// Files are the generated files, the typed Terraform module beside them
	// (Files.Module(), Files.Inventory()); nil when generation did not run or has errors.
	Files *artifact.Set
	// Contracts are the event contracts, read from the generated schemas.
	Contracts []compat.Contract
	// Configs are the classes' rendered runtime configs (the runtime/<class>.json bytes).
	Configs runtimeconfig.Configs
}

// Compile is the pipeline every command reads: load → lower → check → generate, up to
// in.Stop. Input errors do not hide the rest: the parts of the spec that parsed are still
// lowered and checked, and a P010 note says which checks wait for the errors to be fixed. A
// spec that declares environments is a fleet only with one chosen (P013 otherwise). Every
// diagnostic found in an environment carries its name (Diagnostic.Env). The error is for an
// Input with Source but no Name; a spec that cannot be read is a diagnostic (P009).
func Compile(in Input) (*Result, error) {
	file, ds, err := in.load()
	if err != nil {
		return nil, err
	}
	if in.AnyEnv && in.Env == "" && file != nil {
		if envs := file.Environments(); len(envs) > 0 {
			in.Env = envs[0]
		}
	}
	return compile(file, ds, in), nil
}

// CompileAll compiles every fleet the spec describes: the spec itself when it declares no
// environments, else each environment, in name order (in.Env is ignored). A finding every
// environment shares is reported once without an environment; the others name the
// environments they are in.
func CompileAll(in Input) ([]*Result, diag.Diagnostics, error) {
	file, ds, err := in.load()
	if err != nil {
		return nil, nil, err
	}
	envs := []string{""}
	if file != nil && file.Fleet != nil && !ds.HasErrors() && len(file.Environments()) > 0 {
		envs = file.Environments()
	}
	var outs []*Result
	var perEnv []diag.Diagnostics
	for _, env := range envs {
		in.Env, in.NamesAs = env, ""
		res := compile(file, ds, in)
		outs = append(outs, res)
		perEnv = append(perEnv, res.Diagnostics)
	}
	if len(envs) == 1 {
		return outs, perEnv[0], nil
	}
	return outs, append(ds, shared(envs, perEnv)...).Sorted(), nil
}

func (in Input) load() (*spec.File, diag.Diagnostics, error) {
	var file *spec.File
	var ds diag.Diagnostics
	switch {
	case in.Name != "":
		file, ds = spec.Load(in.Name, in.Source)
	case in.Source != nil:
		return nil, nil, errors.New("compiler: a spec held in memory needs a Name for its diagnostics")
	default:
		file, ds = spec.LoadFile(in.Path) // an unreadable path is a diagnostic (P009)
	}
	if file != nil && in.Local {
		file.Local = true
	}
	return file, ds, nil
}

func compile(file *spec.File, ds diag.Diagnostics, in Input) *Result {
	namesAs := in.NamesAs
	if namesAs == "" {
		namesAs = in.Env
	}
	sel, fleet, ds := lowerEnvAs(file, ds, in.Env, namesAs)
	res := &Result{Env: in.Env, Spec: sel, Fleet: fleet, Diagnostics: ds}
	if fleet == nil || in.Stop == Checked || (in.Stop == Generated && ds.HasErrors()) {
		return res
	}
	set, configs, gds := generate(fleet)
	for _, d := range gds {
		d.Env = in.Env
	}
	if !gds.HasErrors() {
		res.Files, res.Configs = set, configs
		var cds diag.Diagnostics
		res.Contracts, cds = compat.FromGenerated(fleet, set.Get)
		gds = append(gds, cds...)
	}
	res.Diagnostics = append(ds, gds...).Sorted()
	return res
}

// mustCompile is Compile for the wrappers below, whose inputs always name a spec.
func mustCompile(in Input) *Result {
	res, err := Compile(in)
	if err != nil {
		panic(err)
	}
	return res
}

// Load is Compile up to the rules: the spec, the fleet and the diagnostics.
func Load(path string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadEnv(path, "")
}

// LoadBytes is Load for a spec held in memory; name is used in diagnostics.
func LoadBytes(name string, src []byte) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadBytesEnv(name, src, "")
}

// LoadEnv is Load for environment env of the spec ("" for a spec without environments).
func LoadEnv(path, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	res := mustCompile(Input{Path: path, Env: env, Stop: Checked})
	return res.Spec, res.Fleet, res.Diagnostics
}

// LoadBytesEnv is LoadEnv for a spec held in memory.
func LoadBytesEnv(name string, src []byte, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	res := mustCompile(Input{Name: name, Source: src, Env: env, Stop: Checked})
	return res.Spec, res.Fleet, res.Diagnostics
}

// lowerEnvAs selects env and lowers it under the names of namesAs. Problems of the spec as
// written (its syntax, its schema, the environments block itself) are reported once, before
// any environment.
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

// Generate runs every backend over the fleet and returns all generated files.
func Generate(f *ir.Fleet) (*artifact.Set, diag.Diagnostics) {
	set, _, ds := generate(f)
	return set, ds
}

func generate(f *ir.Fleet) (*artifact.Set, runtimeconfig.Configs, diag.Diagnostics) {
	configs, ds := runtimeconfig.RenderAll(f)
	// Backends are pure functions of the IR (and the rendered configs): run them concurrently,
	// collect in a fixed order.
	type result struct {
		files []artifact.File
		ds    diag.Diagnostics
	}
	var mod artifact.Module
	backends := Backends()
	results := make([]result, len(backends))
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].files, results[i].ds = b.generate(f, configs, &mod) // only one backend writes mod
		}()
	}
	wg.Wait()
	set, _ := artifact.NewSet()
	set.SetModule(mod)
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
	return set, configs, ds.Sorted()
}

// OutDir is where the files of environment env go under the output root: root itself for a
// spec without environments, root/<env> otherwise (build, plan, apply and dev agree on it).
func OutDir(root, env string) string {
	if env == "" {
		return root
	}
	return filepath.Join(root, env)
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
