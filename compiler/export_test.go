// Entry points the tests of package compiler_test need and fleetc does not.

package compiler

import (
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/spec/diag"
)

// Generate runs the backend alone (its Terraform module, if any, is not kept).
func (b Backend) Generate(f *ir.Fleet, configs runtimeconfig.Configs) ([]artifact.File, diag.Diagnostics) {
	var mod artifact.Module
	return b.generate(f, configs, &mod)
}
