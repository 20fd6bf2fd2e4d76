package compiler

import (
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// LoadContracts loads path for a command whose output is the fleet's event contracts or what
// is generated from them alone (fleetc types, fleetc schemas check). An environment may
// override only where and how big the fleet runs (region, tags, worker, scaling, model
// quotas, traffic), never an event or a class's output, so those cannot differ per
// environment: without env such a command takes the spec's first environment instead of
// refusing with P013. TestContractsEqualInEveryEnvironment holds the claim.
func LoadContracts(path, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	return LoadEnv(path, ContractsEnv(path, env))
}

// ContractsEnv is the environment LoadContracts lowers: env, else the spec's first (""
// for a spec without environments). fleetc invoke uses it too: a class's handler, input and
// output contracts are the same in every environment.
func ContractsEnv(path, env string) string {
	if env == "" {
		env = firstEnvironment(Environments(path))
	}
	return env
}

// LoadContractsBytes is LoadContracts for a spec held in memory (a git revision).
func LoadContractsBytes(name string, src []byte, env string) (*spec.File, *ir.Fleet, diag.Diagnostics) {
	if env == "" {
		if file, _ := spec.Load(name, src); file != nil {
			env = firstEnvironment(file.Environments())
		}
	}
	return LoadBytesEnv(name, src, env)
}

func firstEnvironment(envs []string) string {
	if len(envs) == 0 {
		return ""
	}
	return envs[0]
}
