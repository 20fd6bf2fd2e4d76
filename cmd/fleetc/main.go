// Command fleetc validates and compiles fleet.yaml specs.
package main

import (
	"os"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
