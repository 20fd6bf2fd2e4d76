package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", stderr)
	format := &formatFlag{value: "text", allowed: []string{"text", "json", "github-actions"}}
	fs.Var(format, "format", "output format: text, json or github-actions")
	strict := fs.Bool("strict", false, "treat warnings as errors")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "fleetc validate: name at least one fleet.yaml")
		return exitUsage
	}
	var all diag.Diagnostics
	for _, f := range files {
		all = append(all, compiler.Check(f)...)
	}
	all = all.Sorted()
	v := judge(all, *strict)
	if format.value == "json" || len(all) > 0 {
		render(diagnosticStream(format.value, stdout, stderr), format.value, all, v)
	}
	if !v.Valid {
		return exitInvalid
	}
	if format.value == "text" && len(all) == 0 {
		fmt.Fprintf(stdout, "%s: valid\n", strings.Join(files, ", "))
	}
	return exitOK
}

// verdict is the one answer to "does this spec pass?". It is computed once per command from
// the diagnostics and --strict; the exit code, the text summary and the JSON "valid" field
// all read it, so no command or format can disagree with another.
type verdict struct {
	Valid    bool
	Errors   int
	Warnings int
	Strict   bool
}

func judge(ds diag.Diagnostics, strict bool) verdict {
	errs, warns := ds.Count()
	return verdict{Valid: errs == 0 && !(strict && warns > 0), Errors: errs, Warnings: warns, Strict: strict}
}

// failed reports whether ds fails the spec (warnings count with --strict).
func failed(ds diag.Diagnostics, strict bool) bool { return !judge(ds, strict).Valid }

// diagnosticStream is where a command prints its diagnostics: human-readable text goes to
// stderr, as a compiler's does; a machine format the user asked for (json, github-actions)
// is the command's output and goes to stdout.
func diagnosticStream(format string, stdout, stderr io.Writer) io.Writer {
	if format == "text" {
		return stderr
	}
	return stdout
}

func runBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("build", stderr)
	out := fs.String("o", "out", "output directory (fleetc replaces only the files it wrote there)")
	checkOnly := fs.Bool("check", false, "compare with the output directory, print a unified diff and exit 1 if it is stale; write nothing")
	strict := fs.Bool("strict", false, "treat warnings as errors")
	format := &formatFlag{value: "text", allowed: []string{"text", "json", "github-actions"}}
	fs.Var(format, "format", "output format: text, json or github-actions")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc build: name exactly one fleet.yaml")
		return exitUsage
	}
	r := &buildResult{Output: *out, Files: []string{}}
	code := build(r, files[0], *out, *checkOnly, *strict)
	if format.value == "json" {
		r.report(stdout)
		if r.err != "" {
			fmt.Fprintln(stderr, r.err)
		}
		return code
	}
	if len(r.ds) > 0 {
		render(diagnosticStream(format.value, stdout, stderr), format.value, r.ds, r.verdict)
	}
	switch {
	case r.err != "":
		fmt.Fprintln(stderr, r.err)
	case *checkOnly && r.Checked:
		r.printChanges(stdout)
	case code == exitOK:
		fmt.Fprintf(stdout, "wrote %d files to %s\n", len(r.Files), *out)
	}
	return code
}

// buildResult is what a build did; with --format json it is printed as one document.
type buildResult struct {
	Output  string            `json:"output"`
	Files   []string          `json:"files"`
	Checked bool              `json:"checked"`
	Changes []artifact.Change `json:"changes,omitempty"`
	ds      diag.Diagnostics
	verdict verdict
	err     string
	have    *artifact.Set
	want    *artifact.Set
}

func build(r *buildResult, spec, out string, checkOnly, strict bool) int {
	set, ds := compiler.Build(spec)
	r.ds, r.verdict = ds, judge(ds, strict)
	if set == nil || !r.verdict.Valid {
		r.verdict.Valid = false // no files: the spec has errors
		return exitInvalid
	}
	r.Files = set.Paths()
	if checkOnly {
		r.Checked = true
		have, err := artifact.ReadOwned(out)
		if err != nil {
			r.err = fmt.Sprintf("fleetc build --check: reading %s: %v", out, err)
			return exitUsage
		}
		r.have, r.want = have, set
		r.Changes = artifact.Diff(have, set)
		if len(r.Changes) > 0 {
			return exitInvalid
		}
		return exitOK
	}
	if err := artifact.WriteDir(out, set); err != nil {
		r.err = fmt.Sprintf("fleetc build: writing %s: %v", out, err)
		return exitUsage
	}
	return exitOK
}

// printChanges is the CI drift gate's report: the files fleetc owns in the output directory
// (its manifest) must be exactly what build would write; others are not its business. Each
// change is a unified diff (a/ is what is on disk, b/ what build would write), as
// `terraform fmt -diff` and `diff -u` print it, so `git apply`/`patch -p1` can read it.
func (r *buildResult) printChanges(w io.Writer) {
	if len(r.Changes) == 0 {
		fmt.Fprintf(w, "%s is up to date\n", r.Output)
		return
	}
	for _, c := range r.Changes {
		fmt.Fprintf(w, "%s: %s/%s\n", c.Kind, r.Output, c.Path)
		hb, _ := r.have.Get(c.Path)
		wb, _ := r.want.Get(c.Path)
		fmt.Fprint(w, unifiedDiff(c, string(hb), string(wb)))
	}
	fmt.Fprintf(w, "%s is stale: %d file(s) differ; run fleetc build to update it\n", r.Output, len(r.Changes))
}

// unifiedDiff is the change as a unified diff with three lines of context; an added or
// removed file is a diff against /dev/null, as git prints it.
func unifiedDiff(c artifact.Change, have, want string) string {
	from, to := "a/"+c.Path, "b/"+c.Path
	switch c.Kind {
	case "added":
		from = "/dev/null"
	case "removed":
		to = "/dev/null"
	}
	return udiff.Unified(from, to, have, want)
}

func (r *buildResult) report(w io.Writer) {
	v := r.verdict
	doc := struct {
		jsonReport
		*buildResult
	}{jsonReport{FormatVersion: diag.FormatVersion, Valid: v.Valid, ErrorCount: v.Errors, WarningCount: v.Warnings, Diagnostics: jsonDiags(r.ds)}, r}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

type ruleInfo struct {
	ID       string        `json:"id"`
	Category string        `json:"category"`
	Severity diag.Severity `json:"severity"`
	Summary  string        `json:"summary"`
}

func catalog() []ruleInfo {
	var out []ruleInfo
	for _, e := range compiler.Catalog() {
		out = append(out, ruleInfo{e.ID, e.Category, e.Severity, e.Summary})
	}
	return out
}

func runRules(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("rules", stderr)
	format := &formatFlag{value: "text", allowed: []string{"text", "json"}}
	fs.Var(format, "format", "output format: text or json")
	if rest, err := parseInterspersed(fs, args); err != nil || len(rest) > 0 {
		return exitUsage
	}
	rules := catalog()
	if format.value == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"format_version": diag.FormatVersion, "rules": rules})
		return exitOK
	}
	for _, r := range rules {
		fmt.Fprintf(stdout, "%-5s %-11s %-8s %s\n", r.ID, r.Category, r.Severity, r.Summary)
	}
	return exitOK
}

func runExplain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "fleetc explain: name one rule ID, e.g. fleetc explain Q001 (fleetc rules lists them)")
		return exitUsage
	}
	if e, ok := compiler.Lookup(args[0]); ok {
		fmt.Fprintf(stdout, "%s: %s (%s, %s)\n\n%s\n", e.ID, e.Summary, e.Category, e.Severity, e.Explain)
		return exitOK
	}
	id := strings.ToUpper(args[0])
	var ids []string
	for _, r := range catalog() {
		ids = append(ids, r.ID)
	}
	msg := fmt.Sprintf("fleetc explain: no rule %q", args[0])
	if s := spec.Suggest(id, ids); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	fmt.Fprintln(stderr, msg)
	return exitUsage
}
