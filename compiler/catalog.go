package compiler

import (
	"sort"
	"strings"

	"github.com/fleetc/fleetc/compiler/check"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Entry is one code fleetc can report, with the stage that reports it.
type Entry struct {
	diag.Code
	Category string // input, a rule family (queues, bus, …), or generation
}

// Catalog lists every diagnostic code: input errors, then the rule catalog, then the
// backends' own checks. `fleetc rules` prints it and `fleetc explain` reads it.
func Catalog() []Entry {
	var out []Entry
	for _, c := range spec.Codes() {
		out = append(out, Entry{c, "input"})
	}
	for _, r := range check.Rules() {
		out = append(out, Entry{diag.Code{ID: r.ID, Severity: r.Severity, Summary: r.Summary, Explain: strings.TrimSpace(r.Explain)}, r.Category})
	}
	var gen []diag.Code
	for _, b := range Backends() {
		gen = append(gen, b.Codes...)
	}
	sort.Slice(gen, func(i, j int) bool { return gen[i].ID < gen[j].ID })
	for _, c := range gen {
		out = append(out, Entry{c, "generation"})
	}
	for _, c := range compat.Codes() {
		out = append(out, Entry{c, "compatibility"})
	}
	return out
}

// Lookup finds a code in the catalog, case-insensitively.
func Lookup(id string) (Entry, bool) {
	for _, e := range Catalog() {
		if strings.EqualFold(e.ID, id) {
			return e, true
		}
	}
	return Entry{}, false
}
