package view

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetc/fleetc/spec/diag"
)

// MaxSnippet is how much of a source line a diagnostic shows: enough for any real line of
// fleet.yaml, little enough that a spec which is one huge line (or a secret someone pointed
// it at) is not copied whole into a CI log.
const MaxSnippet = 200

// snippet cuts text to at most MaxSnippet runes around column col (from 1), marking cuts
// with "…", and returns the caret's column and width in the shown text.
func snippet(text string, col, width int) (shown string, caretCol, caretWidth int) {
	r := []rune(strings.ReplaceAll(text, "\t", " "))
	col = min(max(col, 1), len(r)+1)
	width = max(width, 1)
	if col-1+width > len(r) {
		width = max(1, len(r)-(col-1))
	}
	if len(r) <= MaxSnippet {
		return string(r), col, width
	}
	start := max(0, min(col-1-MaxSnippet/4, len(r)-MaxSnippet))
	end := start + MaxSnippet
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

// TextDiagnostics prints diagnostics like a compiler: location, ID, message, the source
// line with a caret under the offending value, then what to do.
func TextDiagnostics(w io.Writer, ds diag.Diagnostics, v Verdict) {
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
func strictNote(v Verdict) string {
	if v.Strict && v.Errors == 0 && v.Warnings > 0 {
		return "; --strict: warnings are errors"
	}
	return ""
}

// GitHub prints workflow commands that GitHub Actions turns into annotations.
func GitHub(w io.Writer, ds diag.Diagnostics, v Verdict) {
	for _, d := range ds {
		kind := "error"
		if d.Severity == diag.Warning && !(v.Strict && !v.Valid) {
			kind = "warning"
		}
		props := "title=" + ghProperty(d.Code+strings.TrimSuffix(" "+envLabel(d), " "))
		if r := d.Subject; r != nil {
			props = fmt.Sprintf("file=%s,line=%d,col=%d,endColumn=%d,%s", ghProperty(r.Filename), r.Start.Line, r.Start.Column, r.End.Column, props)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "\n" + d.Detail
		}
		fmt.Fprintf(w, "::%s %s::%s\n", kind, props, ghData(msg))
	}
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// OneLine is text from outside fleetc (a dead letter's attributes, an execution's error, a
// record's key) as one line a terminal shows as written: runs of whitespace become one space
// and control or format characters (escape sequences, bidi overrides) become U+FFFD, so the
// text can neither forge lines of a report nor drive the terminal.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return utf8.RuneError
		}
		return r
	}, s)
}
