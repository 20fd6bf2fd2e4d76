package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-cmp/cmp"

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
	valid := !failed(all, *strict)
	render(stdout, format.value, all, valid)
	if !valid {
		return exitInvalid
	}
	if format.value == "text" && len(all) == 0 {
		fmt.Fprintf(stdout, "%s: valid\n", strings.Join(files, ", "))
	}
	return exitOK
}

func failed(ds diag.Diagnostics, strict bool) bool {
	errs, warns := ds.Count()
	return errs > 0 || strict && warns > 0
}

func runBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("build", stderr)
	out := fs.String("o", "out", "output directory (fleetc replaces only the files it wrote there)")
	checkOnly := fs.Bool("check", false, "compare with the output directory and exit 1 if it is stale; write nothing")
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
		render(stderr, format.value, r.ds, code == exitOK)
	}
	switch {
	case r.err != "":
		fmt.Fprintln(stderr, r.err)
	case *checkOnly:
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
	err     string
	have    *artifact.Set
	want    *artifact.Set
}

func build(r *buildResult, spec, out string, checkOnly, strict bool) int {
	_, fleet, ds := compiler.Load(spec)
	r.ds = ds
	if fleet == nil || failed(ds, strict) {
		return exitInvalid
	}
	set, gds := compiler.Generate(fleet)
	r.ds = append(ds, gds...).Sorted()
	if failed(r.ds, strict) {
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
// (its manifest) must be exactly what build would write; others are not its business.
func (r *buildResult) printChanges(w io.Writer) {
	if len(r.Changes) == 0 {
		fmt.Fprintf(w, "%s is up to date\n", r.Output)
		return
	}
	for _, c := range r.Changes {
		fmt.Fprintf(w, "%s: %s/%s\n", c.Kind, r.Output, c.Path)
		if c.Kind == "changed" {
			hb, _ := r.have.Get(c.Path)
			wb, _ := r.want.Get(c.Path)
			fmt.Fprint(w, cmp.Diff(strings.Split(string(hb), "\n"), strings.Split(string(wb), "\n")))
		}
	}
	fmt.Fprintf(w, "%s is stale: %d file(s) differ; run fleetc build to update it\n", r.Output, len(r.Changes))
}

func (r *buildResult) report(w io.Writer) {
	errs, warns := r.ds.Count()
	doc := struct {
		jsonReport
		*buildResult
	}{jsonReport{FormatVersion: "1.0", Valid: errs == 0, ErrorCount: errs, WarningCount: warns, Diagnostics: jsonDiags(r.ds)}, r}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

type ruleInfo struct {
	ID       string `json:"id"`
	Category string `json:"category"`
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
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
		_ = enc.Encode(map[string]any{"format_version": "1.0", "rules": rules})
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
