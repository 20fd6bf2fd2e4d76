package review

import (
	"fmt"
	"path"
	"strings"

	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
)

// owner says which part of the fleet a generated resource belongs to: the class whose
// agent_<class>.tf holds it, the workflow whose name starts its local name, or the plane
// (bus, state, schemas, eks) its file is named after.
func owner(r *resource, f *ir.Fleet) (subject, specPath string, nodes []string) {
	file := strings.TrimSuffix(path.Base(r.File), ".tf")
	if class, ok := strings.CutPrefix(file, "agent_"); ok {
		key := graph.NodeKey(graph.Class, class)
		if r.Type == "aws_sqs_queue" {
			key = graph.NodeKey(graph.Queue, class)
			if strings.HasSuffix(r.Address, "_dlq") {
				key = graph.NodeKey(graph.DLQ, class)
			}
		}
		if a := f.Agent(class); a != nil {
			specPath = a.Path
		}
		return "class " + class, specPath, []string{key}
	}
	if file == "workflows" {
		local := r.Address[strings.LastIndexByte(r.Address, '.')+1:]
		best := ""
		for _, w := range f.Workflows {
			id := strings.ReplaceAll(w.Name, "-", "_")
			if strings.HasPrefix(local, id) && len(id) > len(best) {
				best, specPath = id, w.Path
				subject = "workflow " + w.Name
				nodes = []string{graph.NodeKey(graph.Workflow, w.Name)}
			}
		}
		if best != "" {
			return subject, specPath, nodes
		}
		return "workflows", "/workflows", nil
	}
	switch file {
	case "bus":
		return "bus", "/bus", nil
	case "state", "tools":
		return "state", "/state", nil
	case "schemas":
		return "schemas", "/events", nil
	case "keda":
		return "eks", "/worker", nil
	}
	return file, "", nil
}

// replacementChanges turns predicted replacements and deletions of resources that hold
// something into findings, with Terraform's reason and what is lost.
func replacementChanges(rcs []ResourceChange, base, head *Side, btf, htf map[string]*resource) []Change {
	var out []Change
	for _, rc := range rcs {
		if rc.Action != Replace && rc.Action != Delete {
			continue
		}
		side, r := head, htf[rc.Address]
		if rc.Action == Delete {
			side, r = base, btf[rc.Address]
		}
		subject, specPath, nodes := owner(r, side.Fleet)
		sev := Info
		if rc.Holds != "" {
			sev = Warning
		}
		c := Change{Category: Replacement, Severity: sev, Subject: subject, Address: rc.Address, nodes: nodes}
		if rc.Action == Replace {
			c.Summary = fmt.Sprintf("%s will be destroyed and re-created", rc.Address)
			c.Detail = "forced by " + strings.Join(rc.Reasons, "; ")
		} else {
			c.Summary = fmt.Sprintf("%s will be destroyed", rc.Address)
			c.Detail = "it is no longer generated"
		}
		if rc.Holds != "" {
			c.Detail += "; it destroys " + rc.Holds
		}
		c.Side = sideName(side == head)
		locate(&c, side, specPath)
		out = append(out, c)
	}
	return out
}

func sideName(isHead bool) string {
	if isHead {
		return "head"
	}
	return "base"
}
