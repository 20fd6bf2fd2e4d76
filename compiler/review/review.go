// Package review says what a fleet.yaml change means before any plan runs: which resources
// Terraform will replace and what they hold, which event-contract changes break consumers,
// how reliability posture and IAM change, and which diagnostics appear or go. Both sides are
// loaded, lowered and generated in memory; the IRs are compared setting by setting through
// the posture tables (posture.go) and the generated Terraform resource by resource.
package review

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/graph"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
	"github.com/fleetc/fleetc/spec/jsonptr"
)

// Category groups changes the way a reviewer triages them.
type Category string

const (
	Replacement Category = "replacement"
	Contract    Category = "contract" // every event-contract change; Breaks says whom it breaks
	Posture     Category = "posture"
	Rollout     Category = "rollout" // how each changed class's or workflow's new version takes traffic
	Security    Category = "security"
	Capacity    Category = "capacity" // a quota the head's traffic breaks, or rates and cost that move
	Diagnostic  Category = "diagnostic"
)

// Categories in report order.
var Categories = []Category{Replacement, Contract, Security, Posture, Rollout, Capacity, Diagnostic}

// Severity is diag's: error blocks a merge, warning needs a reviewer's eye, info is for the
// record.
type Severity = diag.Severity

const (
	Error   = diag.Error
	Warning = diag.Warning
	Info    = diag.Info
)

func rank(s Severity) int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Change is one finding.
type Change struct {
	Category Category `json:"category"`
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"` // "class coder", "event agent.step.completed", "workflow conversation", "policy fast", "bus", "state"
	Summary  string   `json:"summary"`
	// Breaks is set on contract changes that break consumers: forward, backward or both.
	Breaks   string      `json:"breaks,omitempty"`
	Detail   string      `json:"detail,omitempty"`
	Address  string      `json:"address,omitempty"` // Terraform address, for resource findings
	Side     compat.Side `json:"side"`              // where the spec position is
	Position *diag.Range `json:"position,omitempty"`

	nodes []string // graph keys the change touches
}

// Side is one version of the spec, loaded and generated in memory.
type Side struct {
	Name      string
	Fleet     *ir.Fleet
	Files     *artifact.Set // the generated files and the Terraform module beside them
	Contracts []compat.Contract
	Diags     diag.Diagnostics
}

// Load reads one side from bytes. A spec that does not lower still yields a Side (its
// diagnostics are compared), but no fleet or files.
func Load(name string, src []byte) *Side {
	if name == "" {
		name = "fleet.yaml" // Compile needs a name for an in-memory spec
	}
	// A fleet that lowered is reviewed even when rules object to it: the rule findings are
	// diagnostic changes, and what the spec would deploy is still worth showing.
	res, err := compiler.Compile(compiler.Input{Name: name, Source: src, Stop: compiler.Reviewed})
	if err != nil {
		panic(err) // unreachable: the input names its spec
	}
	return FromResult(name, res)
}

// FromResult is the side of one compiled spec (compiled up to compiler.Reviewed), named
// after the spec and the environment.
func FromResult(name string, res *compiler.Result) *Side {
	s := &Side{Name: name, Diags: res.Diagnostics}
	if res.Env != "" {
		s.Name += " (" + res.Env + ")"
	}
	if res.Files != nil {
		s.Fleet, s.Files, s.Contracts = res.Fleet, res.Files, res.Contracts
	}
	return s
}

// Empty is a side with no spec: the base of a fleet that is new in the change, so that
// everything the head declares is reported as added.
func Empty(name string) *Side {
	set, _ := artifact.NewSet()
	return &Side{Name: name + " (absent)", Fleet: &ir.Fleet{}, Files: set}
}

// Report is the whole review.
type Report struct {
	Base, Head string
	Changes    []Change
	Resources  []ResourceChange // Terraform's predicted plan for head over an applied base
	Kubernetes []ResourceChange // the eks classes' manifests: objects created, changed (with a rollout), deleted
	// Capacity is what the change does to quotas, rates and cost (compiler/capacity, each
	// side under its own spec's traffic); nil when a side did not build.
	Capacity *capacity.Delta
	// Incomplete says why some categories could not be computed (a side did not build).
	Incomplete string

	baseGraph, headGraph *graph.Graph
	// headDiags are every diagnostic of the head spec, for the JSON document's header (the
	// changes list only those the change introduces).
	headDiags diag.Diagnostics
}

// Compare reviews the change from base to head.
func Compare(base, head *Side) (*Report, error) {
	r := &Report{Base: base.Name, Head: head.Name, headDiags: head.Diags}
	r.Changes = append(r.Changes, diagnosticChanges(base, head)...)
	if base.Fleet == nil || head.Fleet == nil {
		r.Incomplete = "a side has errors, so only diagnostics are compared; fix them first and more checks run after"
		sortChanges(r.Changes)
		return r, nil
	}
	r.baseGraph, r.headGraph = graph.Build(base.Fleet), graph.Build(head.Fleet)
	btf, htf := moduleResources(base.Files), moduleResources(head.Files)
	r.Resources = predict(btf, htf, base.Files, head.Files)
	r.Kubernetes = predictManifests(base.Files, head.Files)
	r.Changes = append(r.Changes, replacementChanges(r.Resources, base, head, btf, htf)...)
	r.Changes = append(r.Changes, contractChanges(base, head)...)
	r.Changes = append(r.Changes, postureChanges(base.Fleet, head.Fleet)...)
	r.Changes = append(r.Changes, securityChanges(btf, htf, base, head)...)
	r.Changes = append(r.Changes, rolloutChanges(head, r.Resources, r.Kubernetes)...)
	r.Capacity = capacity.Compare(capacity.Build(base.Fleet, capacity.FromFleet(base.Fleet)), capacity.Build(head.Fleet, capacity.FromFleet(head.Fleet)))
	r.Changes = append(r.Changes, capacityChanges(r.Capacity, head)...)
	sortChanges(r.Changes)
	return r, nil
}

// capacityChanges turns the capacity delta into findings: a warning per quota the head's
// traffic breaks that the base's did not and no rule checks (a rule's quota is reported by
// its own diagnostic, from the same arithmetic). Rates and cost that move are the report's
// capacity section, not findings.
func capacityChanges(d *capacity.Delta, head *Side) []Change {
	if d.Empty() {
		return nil
	}
	var out []Change
	for _, q := range d.Quotas {
		if q.Rule != "" || q.After == nil || q.After.ShareOfLimit <= 1 || (q.Before != nil && q.Before.ShareOfLimit > 1) {
			continue
		}
		c := Change{Category: Capacity, Severity: Warning, Subject: "fleet", Side: compat.Head,
			Summary: fmt.Sprintf("%s (%s) breaks at the head's traffic: %s of %s %s", q.Name, q.Scope, capacity.Num(q.After.Usage), capacity.Num(q.After.Limit), q.Unit)}
		locate(&c, head, "/traffic")
		out = append(out, c)
	}
	return out
}

func sortChanges(cs []Change) {
	order := map[Category]int{}
	for i, c := range Categories {
		order[c] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if order[a.Category] != order[b.Category] {
			return order[a.Category] < order[b.Category]
		}
		if rank(a.Severity) != rank(b.Severity) {
			return rank(a.Severity) < rank(b.Severity)
		}
		if a.Subject != b.Subject {
			return a.Subject < b.Subject
		}
		return a.Summary < b.Summary
	})
}

// Count returns the number of changes per category.
func (r *Report) Count() map[Category]int {
	n := map[Category]int{}
	for _, c := range r.Changes {
		n[c.Category]++
	}
	return n
}

// Fail-on conditions besides the categories: a blocking verdict (the default), a contract
// change that breaks consumers, any change, nothing.
const (
	FailBlocking = "blocking"
	FailBreaking = "breaking"
	FailAny      = "any"
	FailNone     = "none"
)

// FailOn lists what --fail-on accepts.
var FailOn = []string{FailBlocking, string(Replacement), FailBreaking, string(Contract), string(Security), string(Posture), string(Capacity), string(Diagnostic), FailAny, FailNone}

// Has reports whether the report meets a --fail-on condition: a category ("any" matches
// every one), "breaking" (a contract change that breaks), "blocking" (an error), "none"
// (never). Changes listed for the record do not count: safe contract changes and
// diagnostics the head resolves.
func (r *Report) Has(cond string) bool {
	for _, c := range r.Changes {
		if (c.Category == Contract || c.Category == Diagnostic) && c.Severity == Info {
			continue
		}
		switch cond {
		case FailNone:
			return false
		case FailAny:
			return true
		case FailBlocking:
			if c.Severity == Error {
				return true
			}
		case FailBreaking:
			if c.Category == Contract && c.Breaks != "" {
				return true
			}
		default:
			if string(c.Category) == cond {
				return true
			}
		}
	}
	return false
}

// Verdict is the one-line outcome a pull request shows first.
func (r *Report) Verdict() string {
	if len(r.Changes) == 0 {
		if !r.Capacity.Empty() {
			return "safe: capacity moves, nothing else changes"
		}
		return "no changes"
	}
	errs, warns := 0, 0
	for _, c := range r.Changes {
		switch c.Severity {
		case Error:
			errs++
		case Warning:
			warns++
		}
	}
	switch {
	case errs > 0:
		return fmt.Sprintf("blocking: %s to fix before merge", plural(errs, "change"))
	case warns > 0:
		return fmt.Sprintf("needs review: %s to look at", plural(warns, "change"))
	}
	return fmt.Sprintf("safe: %s, none risky", plural(len(r.Changes), "change"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// locate fills a change's position from the side where its subject lives.
func locate(c *Change, s *Side, path string) {
	if s.Fleet == nil || s.Fleet.Index == nil || path == "" {
		return
	}
	c.Position = s.Fleet.Index.Subject(path)
}

// diagnosticChanges lists diagnostics the head introduces and those it resolves. A diagnostic
// is the same on both sides when its code, subject (the spec part it is about) and message
// are: its line, and its index inside a list that grew, may move.
func diagnosticChanges(base, head *Side) []Change {
	key := func(d *diag.Diagnostic) string { return d.Code + "\x00" + subjectOfPath(d.Path) + "\x00" + d.Summary }
	inBase, inHead := map[string]bool{}, map[string]bool{}
	for _, d := range base.Diags {
		inBase[key(d)] = true
	}
	for _, d := range head.Diags {
		inHead[key(d)] = true
	}
	var out []Change
	for _, d := range head.Diags {
		if inBase[key(d)] {
			continue
		}
		sev := Warning
		if d.Severity == diag.Error {
			sev = Error
		}
		out = append(out, Change{Category: Diagnostic, Severity: sev, Subject: subjectOfPath(d.Path),
			Summary: fmt.Sprintf("new %s %s: %s", d.Severity, d.Code, d.Summary), Side: compat.Head, Position: d.Subject})
	}
	for _, d := range base.Diags {
		if inHead[key(d)] {
			continue
		}
		out = append(out, Change{Category: Diagnostic, Severity: Info, Subject: subjectOfPath(d.Path),
			Summary: fmt.Sprintf("resolved %s %s: %s", d.Severity, d.Code, d.Summary), Side: compat.Base, Position: d.Subject})
	}
	return out
}

// subjectOfPath names the spec part a JSON pointer is under ("/agents/coder/step" → "class coder").
func subjectOfPath(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	unescape := jsonptr.Unescape
	if len(parts) >= 2 {
		name := unescape(parts[1])
		switch parts[0] {
		case "agents":
			return "class " + name
		case "events":
			return "event " + name
		case "workflows":
			return "workflow " + name
		case "models":
			return "policy " + name
		}
	}
	if parts[0] == "" {
		return "fleet"
	}
	return parts[0]
}
