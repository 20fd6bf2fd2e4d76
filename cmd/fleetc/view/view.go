// Package view prints what fleetc's commands found, after Terraform's command/views: the
// commands compute a result and its diagnostics, and this package alone decides how they
// look as text, GitHub annotations or JSON. Every JSON document opens with
// jsonreport.Header (format_version and every diagnostic), and is described by a schema in
// schemas/output; every command judges its diagnostics with the one Judge.
package view

import (
	"encoding/json"
	"io"

	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// Format is an output format a command may offer.
type Format = string

// The formats of fleetc's commands (each command offers some of them).
const (
	Text          Format = "text"
	JSON          Format = "json"
	Markdown      Format = "markdown"
	GitHubActions Format = "github-actions"
)

// Verdict is the one answer to "does this spec pass?". It is computed once per command from
// the diagnostics and --strict; the exit code, the text summary and the JSON "valid" field
// all read it, so no command or format can disagree with another.
type Verdict struct {
	Valid    bool
	Errors   int
	Warnings int
	Strict   bool
}

// Judge is every command's verdict: errors fail, and warnings too under --strict.
func Judge(ds diag.Diagnostics, strict bool) Verdict {
	errs, warns := ds.Count()
	return Verdict{Valid: errs == 0 && !(strict && warns > 0), Errors: errs, Warnings: warns, Strict: strict}
}

// Report is validate's document (and the opening of build's): the diagnostics and the
// verdict on them.
type Report struct {
	jsonreport.Header
	Valid        bool `json:"valid"`
	ErrorCount   int  `json:"error_count"`
	WarningCount int  `json:"warning_count"`
}

// NewReport is the document of diagnostics ds judged v.
func NewReport(ds diag.Diagnostics, v Verdict) Report {
	return Report{Header: jsonreport.NewHeader(ds), Valid: v.Valid, ErrorCount: v.Errors, WarningCount: v.Warnings}
}

// WriteJSON prints doc as fleetc prints every JSON document: two-space indent, newline.
func WriteJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Stream is where a command prints its diagnostics: human-readable text goes to stderr, as
// a compiler's does; a machine format the user asked for (json, github-actions) is the
// command's output and goes to stdout.
func Stream(format Format, stdout, stderr io.Writer) io.Writer {
	if format == Text {
		return stderr
	}
	return stdout
}

// Diagnostics prints ds in format (text, github-actions or json, validate's document); v
// is the verdict the command computed from them.
func Diagnostics(w io.Writer, format Format, ds diag.Diagnostics, v Verdict) {
	switch format {
	case JSON:
		_ = WriteJSON(w, NewReport(ds, v))
	case GitHubActions:
		GitHub(w, ds, v)
	default:
		TextDiagnostics(w, ds, v)
	}
}

// Aside prints the diagnostics a command met beside a result in a format that has no room
// for them (text, markdown, a graph, a foreign tool format): as text on stderr, so a warning
// is never dropped. Nothing when there are none.
func Aside(stderr io.Writer, ds diag.Diagnostics) {
	if len(ds) > 0 {
		TextDiagnostics(stderr, ds, Judge(ds, false))
	}
}

// Stopped prints the diagnostics a command stopped on: for --format json as the command's
// document, the header alone, on stdout (a consumer reads why there is no result where
// the result would be); otherwise as text on stderr.
func Stopped(format Format, stdout, stderr io.Writer, ds diag.Diagnostics) {
	if format == JSON {
		_ = WriteJSON(stdout, jsonreport.NewHeader(ds))
		return
	}
	TextDiagnostics(stderr, ds, Judge(ds, false))
}
