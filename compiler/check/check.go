// Package check is fleetc's rule catalog: quota and reliability rules over the IR.
//
// Rules are data, listed explicitly (one file per family, no init registration). A rule's
// Check reports findings through a Reporter with the JSON pointer of the tightest spec
// value; the driver turns pointers into file positions (spec.Index.Locate). Every number
// a rule uses comes from the seeds and is cited in its Explain text.
package check

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// Rule is one check of the catalog.
type Rule struct {
	ID       string        // stable: Q001, E005, ...
	Category string        // queues | bus | workflows | workers | models | idempotency
	Severity diag.Severity // of its findings; a rule may also emit warnings (Reporter.Warn)
	Summary  string        // one line, for `fleetc rules`
	Explain  string        // what, why (with the seed's numbers), how to fix: `fleetc explain ID`
	Check    func(f *ir.Fleet, r *Reporter)
}

// Reporter collects one rule's findings.
type Reporter struct {
	rule *Rule
	out  *diag.Diagnostics
}

// Add reports a finding at path with the rule's severity. Summary is one line with the
// numbers; detail says how to fix it.
func (r *Reporter) Add(path, summary, detail string) {
	r.emit(r.rule.Severity, path, summary, detail)
}

// Warn reports a warning-level finding, whatever the rule's severity.
func (r *Reporter) Warn(path, summary, detail string) {
	r.emit(diag.Warning, path, summary, detail)
}

// traceReport, when set (by the fixture coverage test), learns the file and line of every
// Add/Warn call site that reports a finding.
var traceReport func(file string, line int)

func (r *Reporter) emit(sev diag.Severity, path, summary, detail string) {
	if traceReport != nil {
		_, file, line, _ := runtime.Caller(2)
		traceReport(file, line)
	}
	*r.out = append(*r.out, &diag.Diagnostic{
		Severity: sev, Code: r.rule.ID, Path: path, Summary: summary, Detail: detail,
	})
}

// Rules returns the catalog sorted by ID.
func Rules() []Rule {
	var all []Rule
	for _, family := range [][]Rule{queueRules, busRules, workflowRules, workerRules, modelRules, idempotencyRules, contractRules, ceilingRules, faultRules, fairnessRules, rolloutRules} {
		all = append(all, family...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all
}

// Run applies every rule to f. Diagnostics carry Path but no Subject: the caller locates
// them (f.Index.Locate). Findings with the same code, path and summary (a value inherited
// from defaults by several classes) are reported once.
func Run(f *ir.Fleet) diag.Diagnostics {
	var ds diag.Diagnostics
	if f == nil {
		return nil
	}
	for _, rule := range Rules() {
		runRule(f, rule, &ds)
	}
	seen := map[string]bool{}
	out := ds[:0]
	for _, d := range ds {
		k := d.Code + "\x00" + d.Path + "\x00" + d.Summary
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Summary < out[j].Summary
	})
	return out
}

// runRule isolates a rule: a hand-built IR with a missing piece must not take the whole
// validation down, so a crashing rule becomes one internal-error diagnostic.
func runRule(f *ir.Fleet, rule Rule, ds *diag.Diagnostics) {
	defer func() {
		if p := recover(); p != nil {
			*ds = append(*ds, &diag.Diagnostic{
				Severity: diag.Error, Code: rule.ID,
				Summary: fmt.Sprintf("internal error: rule %s failed on this fleet: %v", rule.ID, p),
				Detail:  "This is a fleetc bug, not a problem with the spec; please report it with the spec.",
			})
		}
	}()
	rule.Check(f, &Reporter{rule: &rule, out: ds})
}
