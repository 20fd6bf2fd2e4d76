package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/check"
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
		_, _, ds := compiler.Load(f)
		all = append(all, ds...)
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
	out := fs.String("o", "out", "output directory")
	checkOnly := fs.Bool("check", false, "compare with the output directory and exit 1 if it is stale; write nothing")
	strict := fs.Bool("strict", false, "treat warnings as errors")
	format := &formatFlag{value: "text", allowed: []string{"text", "json", "github-actions"}}
	fs.Var(format, "format", "diagnostics format: text, json or github-actions")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc build: name exactly one fleet.yaml")
		return exitUsage
	}
	_, fleet, ds := compiler.Load(files[0])
	if fleet == nil || failed(ds, *strict) {
		render(stderr, format.value, ds, false)
		return exitInvalid
	}
	set, gds := compiler.Generate(fleet)
	ds = append(ds, gds...).Sorted()
	if failed(ds, *strict) {
		render(stderr, format.value, ds, false)
		return exitInvalid
	}
	if len(ds) > 0 {
		render(stderr, format.value, ds, true)
	}
	if *checkOnly {
		return checkStale(*out, set, stdout, stderr)
	}
	if err := artifact.WriteDir(*out, set); err != nil {
		fmt.Fprintf(stderr, "fleetc build: writing %s: %v\n", *out, err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %d files to %s\n", len(set.Paths()), *out)
	return exitOK
}

// checkStale is the CI drift gate: the files fleetc owns in dir (its manifest) must be
// exactly what build would write. Other files there (terraform state, notes) are not its business.
func checkStale(dir string, want *artifact.Set, stdout, stderr io.Writer) int {
	have, err := artifact.ReadOwned(dir)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc build --check: reading %s: %v\n", dir, err)
		return exitUsage
	}
	changes := artifact.Diff(have, want)
	if len(changes) == 0 {
		fmt.Fprintf(stdout, "%s is up to date\n", dir)
		return exitOK
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%s: %s/%s\n", c.Kind, dir, c.Path)
		if c.Kind == "changed" {
			hb, _ := have.Get(c.Path)
			wb, _ := want.Get(c.Path)
			fmt.Fprint(stdout, cmp.Diff(strings.Split(string(hb), "\n"), strings.Split(string(wb), "\n")))
		}
	}
	fmt.Fprintf(stdout, "%s is stale: %d file(s) differ; run fleetc build to update it\n", dir, len(changes))
	return exitInvalid
}

type ruleInfo struct {
	ID       string `json:"id"`
	Category string `json:"category"`
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
}

func catalog() []ruleInfo {
	var out []ruleInfo
	for _, c := range spec.Codes() {
		out = append(out, ruleInfo{c.ID, "input", "error", c.Summary})
	}
	for _, r := range check.Rules() {
		out = append(out, ruleInfo{r.ID, r.Category, r.Severity.String(), r.Summary})
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
	id := strings.ToUpper(args[0])
	for _, c := range spec.Codes() {
		if c.ID == id {
			fmt.Fprintf(stdout, "%s: %s (input, error)\n\n%s\n", c.ID, c.Summary, c.Explain)
			return exitOK
		}
	}
	if r, ok := check.Lookup(id); ok {
		fmt.Fprintf(stdout, "%s: %s (%s, %s)\n\n%s\n", r.ID, r.Summary, r.Category, r.Severity, strings.TrimSpace(r.Explain))
		return exitOK
	}
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
