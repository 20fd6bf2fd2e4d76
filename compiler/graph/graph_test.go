package graph_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.mmd and *.dot from the examples; read the diff before committing")

func load(t *testing.T, path string) *ir.Fleet {
	t.Helper()
	_, f, ds := compiler.LoadEnv(path, irtest.FirstEnvOf(path))
	if f == nil || ds.HasErrors() {
		t.Fatalf("%s: %v", path, ds)
	}
	return f
}

func loadBytes(t *testing.T, src string) *ir.Fleet {
	t.Helper()
	_, f, ds := compiler.LoadBytes("fleet.yaml", []byte(src))
	if f == nil || ds.HasErrors() {
		t.Fatalf("%v", ds)
	}
	return f
}

func render(t *testing.T, g *graph.Graph, format string, marked graph.Marked) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	if format == "dot" {
		err = g.DOT(&b, marked)
	} else {
		err = g.Mermaid(&b, marked)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every example's graph, in both formats, is accepted by the real parsers (mermaid's own
// parser, graphviz's dot) and matches its reviewed golden file.
func TestExamplesParseAndMatchGoldens(t *testing.T) {
	examples, _ := filepath.Glob("../../examples/*/fleet.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	dir := t.TempDir()
	for _, ex := range examples {
		name := filepath.Base(filepath.Dir(ex))
		g := graph.Build(load(t, ex))
		for _, format := range []string{"mmd", "dot"} {
			got := render(t, g, format, nil)
			if again := render(t, graph.Build(load(t, ex)), format, nil); again != got {
				t.Errorf("%s.%s: two renders differ", name, format)
			}
			file := filepath.Join(dir, name+"."+format)
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if format == "dot" {
				err = verifytest.DOT(file)
			} else {
				err = verifytest.Mermaid(file)
			}
			verifytest.SkipIfMissing(t, err)
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			golden := filepath.Join("testdata", name+"."+format)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./compiler/graph -update)", err)
			}
			if string(want) != got {
				t.Errorf("%s differs from the golden (go test ./compiler/graph -update, then read the diff):\n%s", golden, got)
			}
		}
	}
}

const twoLanes = `version: 1
fleet: g
region: us-east-1
bus: { name: g }
worker: { image: ghcr.io/fleetc/fleet-worker:0.1.0, eks: { cluster: agents, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" } }
events:
  work.requested:
    version: 2
    source: g.app
    detail:
      type: object
      required: [trace_id, conversation_id]
      properties:
        trace_id: { type: string }
        conversation_id: { type: string, maxLength: 128 }
  work-requested:
    version: 1
    source: g.app
    detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } }
models:
  primary:
    targets: [bedrock/anthropic.claude-3-haiku-20240307-v1:0]
    fallbacks: [backup]
    timeout: 20s
    max_in_flight: 100
  backup:
    targets: [bedrock/anthropic.claude-3-sonnet-20240229-v1:0]
    timeout: 20s
    max_in_flight: 100
agents:
  a:
    runtime: eks
    consumes: { event: work.requested }
    emits: [work-requested]
    ordering: { fifo: true, group_by: conversation_id }
    step: { p95: 10s, max: 1m }
    model: primary
    handler: { http: "http://127.0.0.1:8080/step" }
  b:
    runtime: eks
    consumes: { event: work-requested }
    step: { p95: 10s, max: 1m }
    handler: { http: "http://127.0.0.1:8080/step" }
workflows:
  flow:
    type: standard
    steps:
      - { name: First, agent: a, timeout: 5m }
      - { name: Second, agent: b, timeout: 5m }
`

// The graph holds every part of the topology with the arrows the backends generate.
func TestTopology(t *testing.T) {
	g := graph.Build(loadBytes(t, twoLanes))
	got := render(t, g, "mmd", nil)
	for _, want := range []string{
		// names that differ only in punctuation stay distinct; the later name in sorted order gets the suffix
		`ev_work_requested(["work-requested v1"])`,
		`ev_work_requested_2(["work.requested v2"])`,
		`ev_work_requested_2 --> rule_a`,
		`rule_a --> q_a`,
		`q_a --> agent_a`,
		`q_a -.->|"after 3 receives"| dlq_a`,
		`agent_a -->|"emits"| ev_work_requested`,
		`ev_work_requested --> rule_b`,
		`agent_a -.-> model_primary`,
		`model_primary -.->|"fallback 1"| model_backup`,
		`wf_flow --> step_flow_First`,
		`step_flow_First -->|"task token"| q_a`,
		`step_flow_First --> step_flow_Second`,
		`FIFO by conversation_id`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, got)
		}
	}
	ids := map[string]bool{}
	for _, n := range g.Nodes {
		if ids[n.ID] {
			t.Errorf("duplicate node id %s", n.ID)
		}
		ids[n.ID] = true
	}
}

// Around keeps the changed nodes and their neighbours, and marked nodes are drawn as changed
// in both formats.
func TestAroundAndMarks(t *testing.T) {
	g := graph.Build(loadBytes(t, twoLanes))
	sub := g.Around([]string{graph.NodeKey(graph.Queue, "b")})
	var names []string
	for _, n := range sub.Nodes {
		names = append(names, n.ID)
	}
	if got, want := strings.Join(names, " "), "agent_b q_b dlq_b rule_b step_flow_Second"; got != want {
		t.Errorf("Around(queue b) = %s, want %s", got, want)
	}
	n, _ := g.Node(graph.NodeKey(graph.Queue, "b"))
	marked := graph.Marked{n.ID: true}
	if m := render(t, sub, "mmd", marked); !strings.Contains(m, "class q_b changed") {
		t.Errorf("mermaid does not mark q_b:\n%s", m)
	}
	if d := render(t, sub, "dot", marked); !strings.Contains(d, `q_b [label="g-b", shape=cylinder, color="#d73a49", penwidth=3]`) {
		t.Errorf("dot does not mark q_b:\n%s", d)
	}
	if m := render(t, sub, "mmd", nil); strings.Contains(m, "classDef") {
		t.Errorf("unmarked graph declares a class:\n%s", m)
	}
}

// Labels with quotes or backslashes cannot break out of their strings.
func TestLabelsAreEscaped(t *testing.T) {
	g := &graph.Graph{Nodes: []graph.Node{{ID: "ev_x", Kind: graph.Event, Label: `say "hi" \ bye`}}}
	if m := render(t, g, "mmd", nil); !strings.Contains(m, `ev_x(["say #quot;hi#quot; \ bye"])`) {
		t.Errorf("mermaid label not escaped:\n%s", m)
	}
	if d := render(t, g, "dot", nil); !strings.Contains(d, `label="say \"hi\" \\ bye"`) {
		t.Errorf("dot label not escaped:\n%s", d)
	}
}

// TestAttachInventory: every resource the Terraform backend generates for a class, workflow
// or event lands on that part's node, read from the inventory: a class's queues on its queue
// node, its DLQ and redrive-allow policy on its DLQ node, its rule and target on its rule
// node; only the planes' resources (bus, state, eks, provider) and data sources draw as no node.
func TestAttachInventory(t *testing.T) {
	for _, ex := range []string{"research-fleet", "async-tools", "minimal", "express-triage"} {
		t.Run(ex, func(t *testing.T) {
			f := load(t, "../../examples/"+ex+"/fleet.yaml")
			set, ds := compiler.Generate(f)
			if ds.HasErrors() {
				t.Fatal(ds)
			}
			g := graph.Build(f)
			g.Attach(set.Inventory())
			on := map[string]string{} // address → node key
			for _, n := range g.Nodes {
				for _, a := range n.Resources {
					if prev, dup := on[a]; dup {
						t.Errorf("%s on %s and %s", a, prev, n.Key)
					}
					on[a] = n.Key
				}
			}
			for _, r := range set.Inventory() {
				_, ok := on[r.Address]
				plane := !strings.Contains(r.Part, " ")
				switch {
				case strings.HasPrefix(r.Address, "data.") || plane:
					if ok {
						t.Errorf("%s (%s) drawn on %s", r.Address, r.Part, on[r.Address])
					}
				case !ok:
					t.Errorf("%s (%s) on no node", r.Address, r.Part)
				}
			}
			for _, a := range f.Agents {
				n := strings.ReplaceAll(a.Name, "-", "_")
				want := map[string]string{
					"aws_sqs_queue." + n:                               graph.NodeKey(graph.Queue, a.Name),
					"aws_sqs_queue." + n + "_dlq":                      graph.NodeKey(graph.DLQ, a.Name),
					"aws_sqs_queue_redrive_allow_policy." + n + "_dlq": graph.NodeKey(graph.DLQ, a.Name),
				}
				if a.Rule != nil {
					want["aws_cloudwatch_event_rule."+n] = graph.NodeKey(graph.Rule, a.Name)
					want["aws_cloudwatch_event_target."+n] = graph.NodeKey(graph.Rule, a.Name)
				}
				for addr, key := range want {
					if on[addr] != key {
						t.Errorf("%s on %q, want %s", addr, on[addr], key)
					}
				}
			}
		})
	}
}
