// Command fleetc validates and compiles fleet.yaml specs.
package main

import (
	"os"
	"runtime/debug"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// fleetc is a short-lived compiler that allocates a large, short-lived graph: collect
		// less often (as compilers do). Measured on a 1,000-class fleet: 1.11 s → 0.80 s in
		// memory. Set here, not in cli.Main, so that a program embedding the CLI keeps its own
		// GC setting.
		debug.SetGCPercent(400)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
