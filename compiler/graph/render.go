package graph

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// Marked names the nodes (by ID) a renderer draws as changed.
type Marked map[string]bool

// Mermaid writes a mermaid flowchart, the dialect GitHub renders in Markdown.
func (g *Graph) Mermaid(w io.Writer, marked Marked) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, n := range g.Nodes {
		open, close := mermaidShape(n.Kind)
		fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", n.ID, open, mermaidText(n.Label), close)
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Dashed {
			arrow = "-.->"
		}
		if e.Label != "" {
			fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", e.From, arrow, mermaidText(e.Label), e.To)
		} else {
			fmt.Fprintf(&b, "  %s %s %s\n", e.From, arrow, e.To)
		}
	}
	if ids := g.markedIDs(marked); len(ids) > 0 {
		b.WriteString("  classDef changed stroke:#d73a49,stroke-width:3px\n")
		fmt.Fprintf(&b, "  class %s changed\n", strings.Join(ids, ","))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidShape: events are stadiums, queues cylinders, rules hexagons, classes boxes,
// workflows and steps rounded, model policies parallelograms.
func mermaidShape(k Kind) (string, string) {
	switch k {
	case Event:
		return "([", "])"
	case Queue, DLQ:
		return "[(", ")]"
	case Rule:
		return "{{", "}}"
	case Workflow, Step:
		return "(", ")"
	case Model:
		return "[/", "/]"
	}
	return "[", "]"
}

// mermaidText escapes a label for a quoted mermaid string: quotes become entity codes;
// <br/> is kept, as mermaid renders it as a line break.
func mermaidText(s string) string {
	return strings.ReplaceAll(s, `"`, "#quot;")
}

// DOT writes a Graphviz digraph.
func (g *Graph) DOT(w io.Writer, marked Marked) error {
	var b strings.Builder
	b.WriteString("digraph fleet {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n")
	for _, n := range g.Nodes {
		attrs := fmt.Sprintf("label=%s, shape=%s", dotString(strings.ReplaceAll(n.Label, "<br/>", "\n")), dotShape(n.Kind))
		if marked[n.ID] {
			attrs += ", color=\"#d73a49\", penwidth=3"
		}
		fmt.Fprintf(&b, "  %s [%s];\n", n.ID, attrs)
	}
	for _, e := range g.Edges {
		var attrs []string
		if e.Label != "" {
			attrs = append(attrs, "label="+dotString(e.Label))
		}
		if e.Dashed {
			attrs = append(attrs, "style=dashed")
		}
		if len(attrs) > 0 {
			fmt.Fprintf(&b, "  %s -> %s [%s];\n", e.From, e.To, strings.Join(attrs, ", "))
		} else {
			fmt.Fprintf(&b, "  %s -> %s;\n", e.From, e.To)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func dotShape(k Kind) string {
	switch k {
	case Event:
		return "oval"
	case Queue, DLQ:
		return "cylinder"
	case Rule:
		return "hexagon"
	case Workflow, Step:
		return "box, style=rounded"
	case Model:
		return "parallelogram"
	}
	return "box"
}

// dotString quotes s as a DOT string: backslashes and quotes escaped, newlines as \n.
func dotString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// markedIDs lists the marked nodes present in the graph, in node order.
func (g *Graph) markedIDs(marked Marked) []string {
	var ids []string
	for _, n := range g.Nodes {
		if marked[n.ID] {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// jsonGraph is the graph as JSON: every node with the Terraform resources generated for it
// (after Attach) and every edge.
type jsonGraph struct {
	jsonreport.Header
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// JSON writes the graph as indented JSON, opening with format_version and ds, the
// diagnostics of the spec drawn.
func (g *Graph) JSON(w io.Writer, ds diag.Diagnostics) error {
	jg := jsonGraph{Header: jsonreport.NewHeader(ds), Nodes: g.Nodes, Edges: g.Edges}
	if jg.Nodes == nil {
		jg.Nodes = []Node{}
	}
	if jg.Edges == nil {
		jg.Edges = []Edge{}
	}
	b, err := json.MarshalIndent(jg, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
