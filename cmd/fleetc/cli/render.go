package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// maxSnippet is how much of a source line a diagnostic shows: enough for any real line of
// fleet.yaml, little enough that a spec which is one huge line (or a secret someone pointed
// it at) is not copied whole into a CI log.
const maxSnippet = 200

// snippet cuts text to at most maxSnippet runes around column col (from 1), marking cuts
// with "…", and returns the caret's column and width in the shown text.
func snippet(text string, col, width int) (shown string, caretCol, caretWidth int) {
	r := []rune(strings.ReplaceAll(text, "\t", " "))
	col = min(max(col, 1), len(r)+1)
	width = max(width, 1)
	if col-1+width > len(r) {
		width = max(1, len(r)-(col-1))
	}
	if len(r) <= maxSnippet {
		return string(r), col, width
	}
	start := max(0, min(col-1-maxSnippet/4, len(r)-maxSnippet))
	end := start + maxSnippet
	prefix, suffix := "", ""
	if start > 0 {
		prefix = "…"
	}
	if end < len(r) {
		suffix = "…"
	}
	caretCol = col - start + len([]rune(prefix))
	caretWidth = max(1, min(width, end-(col-1)))
	return prefix + string(r[start:end]) + suffix, caretCol, caretWidth
}

// renderText prints diagnostics like a compiler: location, ID, message, the source line
// with a caret under the offending value, then what to do.
func renderText(w io.Writer, ds diag.Diagnostics, v verdict) {
	for _, d := range ds {
		sev := ""
		if d.Severity == diag.Warning {
			sev = "warning: "
		}
		loc := "<input>"
		if d.Subject != nil {
			loc = d.Subject.String()
		}
		fmt.Fprintf(w, "%s: %s: %s%s%s\n", loc, d.Code, envLabel(d), sev, d.Summary)
		if r := d.Subject; r != nil && strings.TrimSpace(r.Line) != "" {
			width := 1
			if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
				width = r.End.Column - r.Start.Column
			}
			text, col, width := snippet(r.Line, r.Start.Column, width)
			fmt.Fprintf(w, "  %5d | %s\n        | %s%s\n", r.Start.Line, text, strings.Repeat(" ", col-1), strings.Repeat("^", width))
		}
		if d.Detail != "" {
			for _, l := range strings.Split(d.Detail, "\n") {
				fmt.Fprintf(w, "        = %s\n", l)
			}
		}
	}
	if v.Errors+v.Warnings > 0 {
		fmt.Fprintf(w, "%d error(s), %d warning(s)%s\n", v.Errors, v.Warnings, strictNote(v))
	}
}

// envLabel is "[prod] " for a finding of some environments only, "" otherwise.
func envLabel(d *diag.Diagnostic) string {
	if d.Env == "" {
		return ""
	}
	return "[" + d.Env + "] "
}

// strictNote explains a verdict that warnings alone decided.
func strictNote(v verdict) string {
	if v.Strict && v.Errors == 0 && v.Warnings > 0 {
		return "; --strict: warnings are errors"
	}
	return ""
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonDiag struct {
	Severity diag.Severity `json:"severity"`
	Code     string        `json:"code"`
	Summary  string        `json:"summary"`
	Detail   string        `json:"detail,omitempty"`
	Path     string        `json:"path,omitempty"`
	Range    *jsonRange    `json:"range,omitempty"`
	// Environment names the environments the problem is found in; absent when the spec has
	// none or it is found in all of them.
	Environment string `json:"environment,omitempty"`
}

// jsonReport is fleetc's machine-readable result; format_version changes only when
// fields are removed or change meaning.
type jsonReport struct {
	FormatVersion int        `json:"format_version"`
	Valid         bool       `json:"valid"`
	ErrorCount    int        `json:"error_count"`
	WarningCount  int        `json:"warning_count"`
	Diagnostics   []jsonDiag `json:"diagnostics"`
}

func renderJSON(w io.Writer, ds diag.Diagnostics, v verdict) {
	rep := jsonReport{FormatVersion: jsonreport.FormatVersion, Valid: v.Valid, ErrorCount: v.Errors, WarningCount: v.Warnings, Diagnostics: jsonDiags(ds)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
}

// jsonDiags converts diagnostics for JSON output; never nil, so "diagnostics" is always an array.
func jsonDiags(ds diag.Diagnostics) []jsonDiag {
	out := []jsonDiag{}
	for _, d := range ds {
		jd := jsonDiag{Severity: d.Severity, Code: d.Code, Summary: d.Summary, Detail: d.Detail, Path: d.Path, Environment: d.Env}
		if r := d.Subject; r != nil {
			jd.Range = &jsonRange{Filename: r.Filename,
				Start: jsonPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   jsonPos{r.End.Line, r.End.Column, r.End.Byte}}
		}
		out = append(out, jd)
	}
	return out
}

// renderGitHub prints workflow commands that GitHub Actions turns into annotations.
func renderGitHub(w io.Writer, ds diag.Diagnostics, v verdict) {
	for _, d := range ds {
		kind := "error"
		if d.Severity == diag.Warning && !(v.Strict && !v.Valid) {
			kind = "warning"
		}
		props := "title=" + ghProp(d.Code+strings.TrimSuffix(" "+envLabel(d), " "))
		if r := d.Subject; r != nil {
			props = fmt.Sprintf("file=%s,line=%d,col=%d,endColumn=%d,%s", ghProp(r.Filename), r.Start.Line, r.Start.Column, r.End.Column, props)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "\n" + d.Detail
		}
		fmt.Fprintf(w, "::%s %s::%s\n", kind, props, ghData(msg))
	}
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// render prints diagnostics in format; v is the verdict the command computed from them.
func render(w io.Writer, format string, ds diag.Diagnostics, v verdict) {
	switch format {
	case "json":
		renderJSON(w, ds, v)
	case "github-actions":
		renderGitHub(w, ds, v)
	default:
		renderText(w, ds, v)
	}
}
