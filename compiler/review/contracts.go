package review

import (
	"fmt"
	"strings"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/graph"
)

// contractChanges lists every event-contract change with the rules `fleetc schemas check`
// uses (compiler/compat): breaking ones (error, or warning with a version bump) with the
// classes and workflows they break, ones that need care as warnings, safe ones as info.
// Both sides' contracts come from their compiled schemas.
func contractChanges(bside, hside *Side) []Change {
	base, head := bside.Fleet, hside.Fleet
	rep := compat.Compare(bside.Contracts, hside.Contracts)
	var out []Change
	for _, f := range rep.Findings {
		c := Change{Category: Contract, Subject: "event " + f.Event, Side: f.Side,
			nodes: []string{graph.NodeKey(graph.Event, f.Event)}}
		c.Severity = f.Severity
		switch {
		case f.Breaking || f.Direction != "":
			if f.Breaking {
				c.Breaks = string(f.Direction)
				c.Summary = fmt.Sprintf("%s (%s, breaks %s)", f.Summary, f.Kind, f.Direction)
			} else {
				c.Summary = fmt.Sprintf("%s (%s, needs care)", f.Summary, f.Kind)
			}
			var who []string
			if len(f.Consumers) > 0 {
				who = append(who, "consumed by "+strings.Join(f.Consumers, ", "))
			}
			if len(f.Workflows) > 0 {
				who = append(who, "dispatched by workflow "+strings.Join(f.Workflows, ", "))
			}
			version := fmt.Sprintf("version %d → %d", f.BaseVersion, f.HeadVersion)
			if !f.Bumped {
				version = fmt.Sprintf("version %d not bumped", f.HeadVersion)
			}
			c.Detail = strings.Join(append(who, version), "; ")
			for _, a := range f.Consumers {
				c.nodes = append(c.nodes, graph.NodeKey(graph.Class, a))
			}
		default:
			c.Summary = fmt.Sprintf("%s (%s, safe)", f.Summary, f.Kind)
		}
		fl := head
		if f.Side == compat.Base {
			fl = base
		}
		if fl.Index != nil && f.Path != "" {
			c.Position = fl.Index.Subject(f.Path)
		}
		out = append(out, c)
	}
	return out
}
