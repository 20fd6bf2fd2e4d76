package compiler

import (
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/asl"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/keda"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/spec/diag"
)

// Backend is one generator: a pure function of the IR (and the rendered runtime configs),
// the output directories it writes under, and the diagnostic codes it can report. Compile
// runs them, `fleetc rules` lists their codes, from this one list.
type Backend struct {
	Name  string
	Dirs  []string    // output directories, relative to the output root
	Codes []diag.Code // what it can report; nil when it reports another backend's codes
	// generate writes the backend's files; the Terraform backend also records its module.
	generate func(f *ir.Fleet, configs runtimeconfig.Configs, mod *artifact.Module) ([]artifact.File, diag.Diagnostics)
}

// Backends returns the generators in output order. The runtime configs are rendered once,
// before them: they are written as runtime/<class>.json and the same bytes go to the
// backends that embed or measure them, so no backend imports another and the copies cannot
// differ.
func Backends() []Backend {
	return []Backend{
		{Name: "terraform", Dirs: []string{terraform.Dir}, Codes: terraform.Codes(),
			generate: func(f *ir.Fleet, configs runtimeconfig.Configs, mod *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				files, m, ds := terraform.GenerateModule(f, configs)
				*mod = m
				return files, ds
			}},
		{Name: "asl", Dirs: []string{"statemachines"}, Codes: asl.Codes(),
			generate: func(f *ir.Fleet, _ runtimeconfig.Configs, _ *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				return asl.Generate(f)
			}},
		// The workflows' input contracts sit beside their state machines and report ASL codes.
		{Name: "asl-inputs", Dirs: []string{"statemachines"},
			generate: func(f *ir.Fleet, _ runtimeconfig.Configs, _ *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				return asl.GenerateInputs(f)
			}},
		{Name: "keda", Dirs: []string{"k8s"}, Codes: keda.Codes(),
			generate: func(f *ir.Fleet, configs runtimeconfig.Configs, _ *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				return keda.Generate(f, configs)
			}},
		{Name: "eventschema", Dirs: []string{"schemas"}, Codes: eventschema.Codes(),
			generate: func(f *ir.Fleet, _ runtimeconfig.Configs, _ *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				return eventschema.Generate(f)
			}},
		{Name: "runtimeconfig", Dirs: []string{"runtime", "tools"}, Codes: runtimeconfig.Codes(),
			generate: func(f *ir.Fleet, configs runtimeconfig.Configs, _ *artifact.Module) ([]artifact.File, diag.Diagnostics) {
				return runtimeconfig.Files(f, configs), nil
			}},
	}
}
