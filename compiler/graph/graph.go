// Package graph draws a fleet's topology: events → rules → queues → classes → emitted
// events, dead-letter queues, workflows and their steps, model policies and their fallbacks.
// It reads the IR, so the picture is exactly what the backends generate from, and the
// Terraform backend's inventory, so each node knows the resources generated for it.
package graph

import (
	"fmt"
	"strings"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/terraform"
)

// Kind is what a node stands for; it decides the node's shape.
type Kind string

const (
	Event    Kind = "event"
	Rule     Kind = "rule"
	Queue    Kind = "queue"
	DLQ      Kind = "dlq"
	Class    Kind = "class"
	Workflow Kind = "workflow"
	Step     Kind = "step"
	Model    Kind = "model"
)

// idPrefix starts every identifier with a word no diagram language reserves (mermaid
// reserves "class", "end", "style" and others).
var idPrefix = map[Kind]string{
	Event: "ev_", Rule: "rule_", Queue: "q_", DLQ: "dlq_", Class: "agent_",
	Workflow: "wf_", Step: "step_", Model: "model_",
}

// Node is one box of the picture. Key is stable across two versions of a spec (kind and
// spec name), so a review can mark what changed; ID is the diagram identifier.
type Node struct {
	ID    string `json:"id"`
	Key   string `json:"key"`
	Kind  Kind   `json:"kind"`
	Label string `json:"label"`
	// Resources are the Terraform addresses generated for the node, from the backend's
	// inventory (Attach); empty until attached.
	Resources []string `json:"resources"`
}

// Edge is one arrow; Dashed arrows are failure or policy paths rather than the flow of work.
type Edge struct {
	From   string `json:"from"` // node IDs
	To     string `json:"to"`
	Label  string `json:"label,omitempty"`
	Dashed bool   `json:"dashed,omitempty"`
}

// Graph is a fleet's topology with nodes and edges in a fixed order.
type Graph struct {
	Nodes []Node
	Edges []Edge

	byKey map[string]int
	ids   map[string]bool
}

// NodeKey is the key of the node of kind k for the spec name.
func NodeKey(k Kind, name string) string { return string(k) + ":" + name }

// Build draws the fleet. The IR's slices are sorted, so the graph is deterministic.
func Build(f *ir.Fleet) *Graph {
	g := &Graph{byKey: map[string]int{}, ids: map[string]bool{}}
	for _, e := range f.Events {
		g.node(Event, e.DetailType, fmt.Sprintf("%s v%d", e.DetailType, e.Version))
	}
	for _, m := range f.Models {
		g.node(Model, m.Name, "model: "+m.Name)
	}
	for _, m := range f.Models {
		for i, fb := range m.Fallbacks {
			g.edge(NodeKey(Model, m.Name), NodeKey(Model, fb.Name), fmt.Sprintf("fallback %d", i+1), true)
		}
	}
	for _, a := range f.Agents {
		g.agent(f, a)
	}
	for _, w := range f.Workflows {
		g.workflow(w)
	}
	return g
}

func (g *Graph) agent(f *ir.Fleet, a *ir.Agent) {
	class := g.node(Class, a.Name, a.Name+" ("+a.Runtime+")")
	queueLabel := a.Queue.Name
	if a.FIFO {
		queueLabel += "<br/>FIFO by " + a.GroupBy
	}
	queue := g.node(Queue, a.Name, queueLabel)
	dlq := g.node(DLQ, a.Name, a.DLQ.Name)
	if a.Rule != nil && a.Consumes != nil {
		rule := g.node(Rule, a.Name, "rule "+a.Rule.Name)
		g.edge(NodeKey(Event, a.Consumes.Event.DetailType), rule, "", false)
		g.edge(rule, queue, "", false)
	}
	g.edge(queue, class, "", false)
	g.edge(queue, dlq, fmt.Sprintf("after %d receives", a.Queue.MaxReceives), true)
	for _, e := range a.Emits {
		g.edge(class, NodeKey(Event, e.DetailType), "emits", false)
	}
	// An llm class publishes the request events of the async tools it names (start_<class>).
	for _, c := range f.AsyncToolClasses(a) {
		if c.Consumes != nil {
			g.edge(class, NodeKey(Event, c.Consumes.Event.DetailType), c.Tool.StartName, false)
		}
	}
	if a.Model != nil {
		g.edge(class, NodeKey(Model, a.Model.Name), "", true)
	}
}

func (g *Graph) workflow(w *ir.Workflow) {
	prev := g.node(Workflow, w.Name, "workflow "+w.Name+" ("+w.Type+")")
	for _, st := range w.Steps {
		label := st.Name
		if st.FanOut != nil {
			label += "<br/>map over " + st.FanOut.Items
		}
		step := g.node(Step, w.Name+"/"+st.Name, label)
		g.edge(prev, step, "", false)
		if st.Approval != nil {
			g.edge(step, NodeKey(Event, st.Approval.Notify.DetailType), "approval requested", false)
		}
		if st.Agent != nil {
			if st.Synchronous(w) {
				g.edge(step, NodeKey(Class, st.Agent.Name), "lambda:invoke", false)
			} else {
				g.edge(step, NodeKey(Queue, st.Agent.Name), "task token", false)
			}
		}
		prev = step
	}
}

// node adds a node once and returns its key.
func (g *Graph) node(k Kind, name, label string) string {
	key := NodeKey(k, name)
	if _, ok := g.byKey[key]; ok {
		return key
	}
	id := g.uniqueID(idPrefix[k] + identifier(name))
	g.byKey[key] = len(g.Nodes)
	g.Nodes = append(g.Nodes, Node{ID: id, Key: key, Kind: k, Label: label})
	return key
}

// edge adds an arrow between two keys; arrows to nodes that do not exist are dropped (a
// reference the loader already reported).
func (g *Graph) edge(from, to, label string, dashed bool) {
	fi, ok1 := g.byKey[from]
	ti, ok2 := g.byKey[to]
	if !ok1 || !ok2 {
		return
	}
	g.Edges = append(g.Edges, Edge{From: g.Nodes[fi].ID, To: g.Nodes[ti].ID, Label: label, Dashed: dashed})
}

// uniqueID keeps identifiers distinct when two names differ only in punctuation
// ("a-b" and "a.b"): the later one, in the IR's sorted order, gets a numeric suffix.
func (g *Graph) uniqueID(id string) string {
	out := id
	for i := 2; g.ids[out]; i++ {
		out = fmt.Sprintf("%s_%d", id, i)
	}
	g.ids[out] = true
	return out
}

// identifier maps a spec name to the characters both mermaid and dot accept unquoted.
func identifier(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// NodeOf is the key of the node a generated resource belongs to, as the Terraform backend
// recorded its owner and element in the inventory: a class's queue, DLQ or rule, the class
// itself, a workflow or an event. Resources of a plane (bus, state, eks, provider) draw as no
// node: ok is false.
func NodeOf(r artifact.Resource) (key string, ok bool) {
	if class, found := strings.CutPrefix(r.Part, terraform.PartClass); found {
		switch r.Element {
		case artifact.ElementQueue:
			return NodeKey(Queue, class), true
		case artifact.ElementDLQ:
			return NodeKey(DLQ, class), true
		case artifact.ElementRule:
			return NodeKey(Rule, class), true
		}
		return NodeKey(Class, class), true
	}
	if w, found := strings.CutPrefix(r.Part, terraform.PartWorkflow); found {
		return NodeKey(Workflow, w), true
	}
	if e, found := strings.CutPrefix(r.Part, terraform.PartEvent); found {
		return NodeKey(Event, e), true
	}
	return "", false
}

// Attach records on each node the addresses the inventory assigns to it (NodeOf), in the
// inventory's order (sorted by address). Data sources are left out: they create nothing.
func (g *Graph) Attach(inv []artifact.Resource) {
	for i := range g.Nodes {
		g.Nodes[i].Resources = []string{}
	}
	for _, r := range inv {
		if strings.HasPrefix(r.Address, "data.") {
			continue
		}
		if key, ok := NodeOf(r); ok {
			if i, found := g.byKey[key]; found {
				g.Nodes[i].Resources = append(g.Nodes[i].Resources, r.Address)
			}
		}
	}
}

// Node returns the node with the key, if any.
func (g *Graph) Node(key string) (Node, bool) {
	i, ok := g.byKey[key]
	if !ok {
		return Node{}, false
	}
	return g.Nodes[i], true
}

// Around is the part of the graph within one arrow of the given keys: what a change to
// those nodes touches. Unknown keys are ignored.
func (g *Graph) Around(keys []string) *Graph {
	keep := map[string]bool{}
	for _, k := range keys {
		if n, ok := g.Node(k); ok {
			keep[n.ID] = true
		}
	}
	near := map[string]bool{}
	for id := range keep {
		near[id] = true
	}
	for _, e := range g.Edges {
		if keep[e.From] || keep[e.To] {
			near[e.From], near[e.To] = true, true
		}
	}
	sub := &Graph{byKey: map[string]int{}, ids: map[string]bool{}}
	for _, n := range g.Nodes {
		if near[n.ID] {
			sub.byKey[n.Key] = len(sub.Nodes)
			sub.ids[n.ID] = true
			sub.Nodes = append(sub.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		if near[e.From] && near[e.To] {
			sub.Edges = append(sub.Edges, e)
		}
	}
	return sub
}
