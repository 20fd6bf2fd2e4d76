package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// sources caches file contents for snippets.
type sources map[string][]string

func (s sources) line(file string, n int) (string, bool) {
	lines, ok := s[file]
	if !ok {
		if b, err := os.ReadFile(file); err == nil && len(b) < 8<<20 {
			lines = strings.Split(string(b), "\n")
		}
		s[file] = lines
	}
	if n < 1 || n > len(lines) {
		return "", false
	}
	return strings.TrimRight(lines[n-1], "\r"), true
}

// renderText prints diagnostics like a compiler: location, ID, message, the source line
// with a caret under the offending value, then what to do.
func renderText(w io.Writer, ds diag.Diagnostics, src sources, v verdict) {
	for _, d := range ds {
		sev := ""
		if d.Severity == diag.Warning {
			sev = "warning: "
		}
		loc := "<input>"
		if d.Subject != nil {
			loc = d.Subject.String()
		}
		fmt.Fprintf(w, "%s: %s: %s%s\n", loc, d.Code, sev, d.Summary)
		if d.Subject != nil {
			if text, ok := src.line(d.Subject.Filename, d.Subject.Start.Line); ok && strings.TrimSpace(text) != "" {
				text = strings.ReplaceAll(text, "\t", " ")
				col := d.Subject.Start.Column
				if col > len(text)+1 {
					col = len(text) + 1
				}
				width := 1
				if d.Subject.End.Line == d.Subject.Start.Line && d.Subject.End.Column > col {
					width = d.Subject.End.Column - col
				}
				if col-1+width > len(text) {
					width = max(1, len(text)-(col-1))
				}
				fmt.Fprintf(w, "  %5d | %s\n        | %s%s\n", d.Subject.Start.Line, text, strings.Repeat(" ", col-1), strings.Repeat("^", width))
			}
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
	Severity string     `json:"severity"`
	Code     string     `json:"code"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Path     string     `json:"path,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
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
		jd := jsonDiag{Severity: d.Severity.String(), Code: d.Code, Summary: d.Summary, Detail: d.Detail, Path: d.Path}
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
		props := "title=" + ghProp(d.Code)
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
		renderText(w, ds, sources{}, v)
	}
}
