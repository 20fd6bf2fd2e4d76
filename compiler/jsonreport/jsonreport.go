// Package jsonreport holds what every machine-readable document fleetc prints has in common:
// its version and its diagnostics, in one shape (Header), so no document can leave a warning
// out or spell a diagnostic differently.
package jsonreport

import "github.com/fleetc/fleetc/spec/diag"

// FormatVersion is the one version of every JSON document fleetc prints (validate, build,
// rules, plan, diff, capacity, graph, dlq, tools, schemas check and publish). It is an integer, and changes only when a
// field is removed or changes meaning; added fields keep it.
//
// 2: diff's category "breaking" became "contract" (every contract change, breaks set on those
// that break); compat kinds were split by direction (pattern-tightened became pattern-added
// and pattern-changed, type-changed also type-widened and type-narrowed, and so on).
// Still 2: every document gained "diagnostics" (an added field).
const FormatVersion = 2

// Header opens every JSON document fleetc prints: the format version and every diagnostic
// the command met, errors and warnings alike. Documents embed it rather than repeat it.
type Header struct {
	FormatVersion int `json:"format_version"`
	// Diagnostics is never null: a document without findings says so with [].
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// NewHeader is the header of a document whose command met ds.
func NewHeader(ds diag.Diagnostics) Header {
	return Header{FormatVersion: FormatVersion, Diagnostics: Diagnostics(ds)}
}

// Diagnostic is one diagnostic as every JSON document prints it.
type Diagnostic struct {
	Severity diag.Severity `json:"severity"`
	Code     string        `json:"code"`
	Summary  string        `json:"summary"`
	Detail   string        `json:"detail,omitempty"`
	Path     string        `json:"path,omitempty"`
	Range    *diag.Range   `json:"range,omitempty"` // diag's own shape: filename, start and end
	// Environment names the environments the problem is found in; absent when the spec has
	// none or it is found in all of them.
	Environment string `json:"environment,omitempty"`
}

// Diagnostics converts ds for JSON output; never nil, so "diagnostics" is always an array.
func Diagnostics(ds diag.Diagnostics) []Diagnostic {
	out := []Diagnostic{}
	for _, d := range ds {
		jd := Diagnostic{Severity: d.Severity, Code: d.Code, Summary: d.Summary, Detail: d.Detail, Path: d.Path, Environment: d.Env}
		if d.Subject != nil {
			r := *d.Subject // a copy: the document never aliases the diagnostic
			jd.Range = &r
		}
		out = append(out, jd)
	}
	return out
}
