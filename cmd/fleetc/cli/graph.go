package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/graph"
)

func newGraphCmd(s *streams) *cobra.Command {
	format := newFormat("mermaid", "mermaid", "dot", "json")
	c := &cobra.Command{
		Use:   "graph FILE [--format mermaid|dot|json]",
		Short: "Draw the fleet's topology as mermaid or Graphviz dot, or list it as JSON",
		Long: `Graph draws events, rules, queues, classes (with their runtime), emitted events, each
queue's DLQ, workflows and their steps, and model policies with their fallbacks.

--format json lists the nodes and edges, each node with the Terraform resources generated
for it, as the Terraform backend's inventory records their owner (nothing is re-parsed).

Arguments:
  FILE  the fleet.yaml to draw`,
		Example: `  fleetc graph fleet.yaml > topology.mmd
  fleetc graph --format dot fleet.yaml | dot -Tsvg > topology.svg
  fleetc graph --format json fleet.yaml`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runGraph(args, s.env, format.value, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	return c
}

// runGraph prints the fleet's topology as mermaid (GitHub renders it) or Graphviz dot.
func runGraph(files []string, env, format string, stdout, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc graph: name exactly one fleet.yaml")
		return exitUsage
	}
	in := compiler.Input{Path: files[0], Env: env, Stop: compiler.Checked}
	if format == view.JSON {
		in.Stop = compiler.Generated // the JSON graph carries the Terraform inventory
	}
	res, err := compiler.Compile(in)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc graph: %v\n", err)
		return exitUsage
	}
	if res.Fleet == nil || res.Diagnostics.HasErrors() {
		view.Stopped(format, stdout, stderr, res.Diagnostics)
		return exitInvalid
	}
	g := graph.Build(res.Fleet)
	switch format {
	case "dot":
		err = g.DOT(stdout, nil)
	case view.JSON:
		g.Attach(res.Files.Inventory())
		err = g.JSON(stdout, res.Diagnostics)
	default:
		err = g.Mermaid(stdout, nil)
	}
	if format != view.JSON {
		view.Aside(stderr, res.Diagnostics) // a drawing has no room for them
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc graph: %v\n", err)
		return exitUsage
	}
	return exitOK
}
