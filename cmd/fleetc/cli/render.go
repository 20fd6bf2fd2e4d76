package cli

import (
	"io"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/spec/diag"
)

// The commands print through package view; these are its names in this package.

// maxSnippet is how much of a source line a diagnostic shows (view.MaxSnippet).
const maxSnippet = view.MaxSnippet

// verdict is the one answer to "does this spec pass?" (view.Verdict).
type verdict = view.Verdict

// judge is every command's verdict on its diagnostics (view.Judge).
func judge(ds diag.Diagnostics, strict bool) verdict { return view.Judge(ds, strict) }

// render prints diagnostics in format; v is the verdict the command computed from them.
func render(w io.Writer, format string, ds diag.Diagnostics, v verdict) {
	view.Diagnostics(w, format, ds, v)
}

// diagnosticStream is where a command prints its diagnostics (view.Stream).
func diagnosticStream(format string, stdout, stderr io.Writer) io.Writer {
	return view.Stream(format, stdout, stderr)
}
