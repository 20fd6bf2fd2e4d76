package review

import (
	"fmt"
	"maps"
	"slices"

	"sort"
	"strings"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/lifecycle"
)

// Action is what Terraform will do to one resource address (one vocabulary with fleetc
// plan's: compiler/lifecycle).
type Action = lifecycle.Action

const (
	Create  = lifecycle.Create
	Update  = lifecycle.Update
	Replace = lifecycle.Replace
	Delete  = lifecycle.Delete
)

// ResourceChange is fleetc's prediction for one managed resource address, in the terms of
// `terraform show -json`'s resource_changes (no-ops omitted).
type ResourceChange struct {
	Address string   `json:"address"`
	Type    string   `json:"type"`
	Action  Action   `json:"action"`
	Reasons []string `json:"reasons,omitempty"` // the arguments that changed; for replace, those that force it
	Holds   string   `json:"holds,omitempty"`   // what is lost when it is destroyed (replace, delete)
	// Inputs are the generated files behind a changed argument (a runtime config, a schema,
	// a state machine definition) with the keys that changed in them.
	Inputs []InputChange `json:"inputs,omitempty"`
}

// predict compares two generated configurations the way `terraform plan` would see them
// after the base was applied: new and gone addresses, changed arguments, and the changes
// that references carry from one resource to the next (a replaced queue's arn is unknown
// until apply, so a policy that names it updates; a pipe whose source it is, is replaced).
//
// An argument that reads a generated file (file(), templatefile()) changes when that file's
// bytes do, even though its expression is the same: a runtime config behind
// its S3 object, a schema's content, a state machine's definition.
func predict(base, head map[string]*resource, bfiles, hfiles *artifact.Set) []ResourceChange {
	p := &prediction{base: base, head: head, changed: map[string]map[string]string{}, status: map[string]Action{}}
	inputs := map[string][]InputChange{}
	for addr, h := range head {
		if _, ok := base[addr]; !ok {
			p.status[addr] = Create
			continue
		}
		for path, src := range h.Attrs {
			if old, ok := base[addr].Attrs[path]; !ok || old != src {
				p.mark(addr, path, "changed")
				continue
			}
			if in := changedInputs(h.Inputs[path], bfiles, hfiles); len(in) > 0 {
				inputs[addr] = append(inputs[addr], in...)
				p.mark(addr, path, "changed (its file)")
			}
		}
		for path := range base[addr].Attrs {
			if _, ok := h.Attrs[path]; !ok {
				p.mark(addr, path, "removed")
			}
		}
	}
	for addr := range base {
		if _, ok := head[addr]; !ok {
			p.status[addr] = Delete
		}
	}
	p.settle()

	var out []ResourceChange
	for addr, act := range p.status {
		r := head[addr]
		if act == Delete {
			r = base[addr]
		}
		if r.Data {
			continue
		}
		rc := ResourceChange{Address: addr, Type: r.Type, Action: act, Inputs: inputs[addr]}
		if act == Replace || act == Update {
			for path, why := range p.changed[addr] {
				if act == Update || lifecycle.ForcesNew(r.Type, path) {
					rc.Reasons = append(rc.Reasons, path+" "+why)
				}
			}
			sort.Strings(rc.Reasons)
		}
		if act == Replace || act == Delete {
			rc.Holds = lifecycle.Destroys(r.Type, localName(addr))
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

type prediction struct {
	base, head map[string]*resource
	changed    map[string]map[string]string // address → changed path → why
	status     map[string]Action
}

func (p *prediction) mark(addr, path, why string) bool {
	if p.changed[addr] == nil {
		p.changed[addr] = map[string]string{}
	}
	if _, ok := p.changed[addr][path]; ok {
		return false
	}
	p.changed[addr][path] = why
	r := p.head[addr]
	switch {
	case !r.Data && lifecycle.ForcesNew(r.Type, path):
		p.status[addr] = Replace
	case p.status[addr] == "":
		p.status[addr] = Update
	}
	return true
}

// settle carries changes along references until nothing more changes.
func (p *prediction) settle() {
	addrs := slices.Sorted(maps.Keys(p.head))
	paths := map[string][]string{} // each resource's referencing arguments, sorted once
	for _, addr := range addrs {
		paths[addr] = slices.Sorted(maps.Keys(p.head[addr].Refs))
	}
	for more := true; more; {
		more = false
		for _, addr := range addrs {
			if act := p.status[addr]; act == Create {
				continue
			}
			h := p.head[addr]
			for _, path := range paths[addr] {
				for _, ref := range h.Refs[path] {
					if why := p.refChange(ref); why != "" && p.mark(addr, path, why) {
						more = true
					}
				}
			}
		}
	}
}

// refChange says why the value behind a reference differs from the base's, or "".
func (p *prediction) refChange(ref string) string {
	addr, attr := splitRef(ref)
	target, ok := p.head[addr]
	if !ok {
		return ""
	}
	switch act := p.status[addr]; {
	case act == Create:
		return "(new " + addr + ")"
	case target.Data:
		if len(p.changed[addr]) > 0 {
			return fmt.Sprintf("(%s is read again at apply)", addr)
		}
	case act == Replace && !configured(target, attr):
		return fmt.Sprintf("(%s is replaced, its %s is known only after apply)", addr, attr)
	case configured(target, attr) && p.changed[addr][attr] != "":
		return fmt.Sprintf("(%s.%s changed)", addr, attr)
	}
	return ""
}

// configured reports whether attr is an argument the configuration sets (a known value),
// rather than one the provider computes.
func configured(r *resource, attr string) bool {
	_, ok := r.Attrs[attr]
	return ok
}

// summarizeActions counts the predicted actions: create, update, replace, delete.
func summarizeActions(rcs []ResourceChange) string {
	n := map[Action]int{}
	for _, rc := range rcs {
		n[rc.Action]++
	}
	if t := lifecycle.Tally(n); t != "" {
		return t
	}
	return "no resource changes"
}

// localName is the name part of a resource address (aws_sqs_queue.coder → coder).
func localName(addr string) string { return addr[strings.LastIndexByte(addr, '.')+1:] }
