package compiler

import (
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// LoadContracts loads path for a command whose output is the fleet's event contracts or what
// is generated from them alone (fleetc types, fleetc schemas check): without env it takes
// the spec's first environment (Input.AnyEnv) instead of refusing with P013.
// TestContractsEqualInEveryEnvironment holds that the choice cannot matter.
func LoadContracts(path, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	res := mustCompile(Input{Path: path, Env: env, AnyEnv: true, Stop: Checked})
	return res.Spec, res.Fleet, res.Diagnostics
}

// LoadContractsBytes is LoadContracts for a spec held in memory (a git revision).
func LoadContractsBytes(name string, src []byte, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	res := mustCompile(Input{Name: name, Source: src, Env: env, AnyEnv: true, Stop: Checked})
	return res.Spec, res.Fleet, res.Diagnostics
}
