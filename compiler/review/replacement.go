package review

import (
	"fmt"
	"strings"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/terraform"
)

// owner says which part of the fleet a generated resource belongs to, as the Terraform
// backend recorded it in the side's inventory: the subject, the spec path to point at, and
// the graph nodes to outline.
func owner(r *resource, s *Side) (subject, specPath string, nodes []string) {
	inv, ok := s.Files.Resource(r.Address)
	if !ok {
		return "fleet", "", nil
	}
	subject, specPath = inv.Part, inv.Path
	if class, ok := strings.CutPrefix(inv.Part, terraform.PartClass); ok {
		if a := s.Fleet.Agent(class); a != nil {
			specPath = a.Path // the class, where a reviewer looks first
		}
	}
	if key, ok := graph.NodeOf(inv); ok {
		nodes = []string{key}
	}
	return subject, specPath, nodes
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
		subject, specPath, nodes := owner(r, side)
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

func sideName(isHead bool) compat.Side {
	if isHead {
		return compat.Head
	}
	return compat.Base
}
