// Package diag holds fleetc's diagnostics: what went wrong, where, and how to fix it.
// It is a leaf package: everything that reports problems speaks this type.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Severity is the one severity scale of fleetc: of diagnostics (error stops the build,
// warning does not), of documented codes, of contract findings (compat) and of review
// changes (error blocks a merge, warning needs a reviewer's eye, info is for the record).
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info" // findings only: a diagnostic is an error or a warning
)

func (s Severity) String() string { return string(s) }

// Pos is a position in a source file; Line and Column start at 1, Byte at 0.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// Range is a span of a source file.
type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
	// Line is the text of the start line, taken from the bytes that were parsed, for a
	// renderer's snippet: nothing re-reads a file by name to show it, so what a diagnostic
	// shows is what fleetc read (not a file swapped in since, nor one a symlink leads to).
	Line string `json:"-"`
}

func (r Range) String() string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// Diagnostic is one problem. Summary is terse; Detail says what to do about it.
// Path is the JSON pointer of the offending value in the spec ("/agents/coder/step/max"),
// Subject its tightest source range when known.
type Diagnostic struct {
	Severity Severity
	Code     string
	Summary  string
	Detail   string
	Path     string
	Subject  *Range
	// Env names the environments of the spec the problem is found in ("prod", "dev, prod");
	// "" when the spec has no environments or the problem is the same in all of them.
	Env string
}

func (d *Diagnostic) String() string {
	loc := "<input>"
	if d.Subject != nil {
		loc = d.Subject.String()
	}
	return fmt.Sprintf("%s: %s: %s", loc, d.Code, d.Summary)
}

// Diagnostics is a list of problems; it is an error so it can travel through error returns.
type Diagnostics []*Diagnostic

// Errorf appends an error diagnostic.
func (ds *Diagnostics) Errorf(code, path, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Severity: Error, Code: code, Path: path, Summary: fmt.Sprintf(format, args...)}
	*ds = append(*ds, d)
	return d
}

// Warnf appends a warning diagnostic.
func (ds *Diagnostics) Warnf(code, path, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Severity: Warning, Code: code, Path: path, Summary: fmt.Sprintf(format, args...)}
	*ds = append(*ds, d)
	return d
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Count returns the number of errors and warnings.
func (ds Diagnostics) Count() (errors, warnings int) {
	for _, d := range ds {
		if d.Severity == Error {
			errors++
		} else {
			warnings++
		}
	}
	return
}

func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Sorted returns the diagnostics ordered by file, position, code and summary, without duplicates.
func (ds Diagnostics) Sorted() Diagnostics {
	out := make(Diagnostics, len(ds))
	copy(out, ds)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	uniq := out[:0]
	for i, d := range out {
		if i > 0 && same(d, out[i-1]) {
			continue
		}
		uniq = append(uniq, d)
	}
	return uniq
}

func key(d *Diagnostic) (string, int, int) {
	if d.Subject == nil {
		return "", 0, 0
	}
	return d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
}

func less(a, b *Diagnostic) bool {
	af, al, ac := key(a)
	bf, bl, bc := key(b)
	switch {
	case af != bf:
		return af < bf
	case al != bl:
		return al < bl
	case ac != bc:
		return ac < bc
	case a.Code != b.Code:
		return a.Code < b.Code
	case a.Summary != b.Summary:
		return a.Summary < b.Summary
	default:
		return a.Env < b.Env
	}
}

func same(a, b *Diagnostic) bool {
	af, al, ac := key(a)
	bf, bl, bc := key(b)
	return af == bf && al == bl && ac == bc && a.Code == b.Code && a.Summary == b.Summary && a.Severity == b.Severity && a.Env == b.Env
}

// Code documents one diagnostic code: a line of `fleetc rules`, the text of `fleetc explain`.
// Severity is Error or Warning.
type Code struct {
	ID       string
	Severity Severity
	Summary  string
	Explain  string
}
