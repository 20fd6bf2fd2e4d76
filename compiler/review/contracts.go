package review

import "github.com/fleetc/fleetc/compiler/ir"

// contractChanges lists event-contract changes; filled in by the shared compatibility package.
func contractChanges(base, head *ir.Fleet) []Change { return nil }
