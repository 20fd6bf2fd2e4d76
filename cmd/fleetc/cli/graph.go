package cli

import (
	"fmt"
	"io"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/graph"
)

// runGraph prints the fleet's topology as mermaid (GitHub renders it) or Graphviz dot.
func runGraph(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("graph", stderr)
	format := &formatFlag{value: "mermaid", allowed: []string{"mermaid", "dot"}}
	fs.Var(format, "format", "output format: mermaid or dot")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc graph: name exactly one fleet.yaml")
		return exitUsage
	}
	_, fleet, ds := compiler.Load(files[0])
	if fleet == nil || ds.HasErrors() {
		render(stderr, "text", ds, judge(ds, false))
		return exitInvalid
	}
	g := graph.Build(fleet)
	if format.value == "dot" {
		err = g.DOT(stdout, nil)
	} else {
		err = g.Mermaid(stdout, nil)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc graph: %v\n", err)
		return exitUsage
	}
	return exitOK
}
