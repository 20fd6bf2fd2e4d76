package cli

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/spec/diag"
)

// buildOptions are build's flags.
type buildOptions struct {
	out           string
	check, strict bool
	format        *formatFlag
	env           string // --env, the root's flag
}

func newBuildCmd(s *streams) *cobra.Command {
	o := buildOptions{format: newFormat("text", "text", "json", "github-actions")}
	c := &cobra.Command{
		Use:   "build FILE [-o DIR] [--check] [--strict] [--format text|json|github-actions]",
		Short: "Validate a fleet.yaml and write everything it compiles to",
		Long: `Build validates FILE first and writes nothing if it has errors. Otherwise it writes
Terraform, state machines, KEDA manifests, event schemas and runtime configs into DIR,
replacing only the files it wrote there before (listed in DIR/.fleetc-manifest).

Arguments:
  FILE  the fleet.yaml to build

--check writes nothing: it exits 1 and prints a unified diff when DIR differs from what
FILE produces (a CI drift gate).

A spec with environments builds each into DIR/<env>/ (--env builds one). Exit 0 built or up to date, 1 invalid spec or stale
output, 2 usage or I/O error.`,
		Example: `  fleetc build fleet.yaml -o out
  fleetc build --check fleet.yaml -o out`,
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runBuild(args, o, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVarP(&o.out, "output", "o", defaultOut, "output directory (fleetc replaces only the files it wrote there)")
	c.Flags().BoolVar(&o.check, "check", false, "compare with the output directory, print a unified diff and exit 1 if it is stale; write nothing")
	c.Flags().BoolVar(&o.strict, "strict", false, "treat warnings as errors")
	addFormat(c, o.format, "")
	return c
}

func runBuild(files []string, o buildOptions, stdout, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc build: name exactly one fleet.yaml")
		return exitUsage
	}
	r := &buildResult{Output: o.out, Files: []string{}}
	code := build(r, files[0], o.env, o.out, o.check, o.strict)
	if o.format.value == "json" {
		r.report(stdout)
		if r.err != "" {
			fmt.Fprintln(stderr, r.err)
		}
		return code
	}
	if len(r.ds) > 0 {
		render(diagnosticStream(o.format.value, stdout, stderr), o.format.value, r.ds, r.verdict)
	}
	switch {
	case r.err != "":
		fmt.Fprintln(stderr, r.err)
	case o.check && r.Checked:
		r.printChanges(stdout)
	case code == exitOK && r.UpToDate:
		fmt.Fprintf(stdout, "%s is up to date (%d files%s); nothing written\n", o.out, len(r.Files), r.envNote("; "))
		r.printNext(stdout, files[0])
	case code == exitOK:
		fmt.Fprintf(stdout, "wrote %d files to %s%s\n", len(r.Files), o.out, r.envNote(", "))
		r.printNext(stdout, files[0])
	}
	return code
}

// defaultOut is the output directory of build, plan, apply and destroy without -o.
const defaultOut = "out"

// deployWorkDir is where build's Next: hint runs plan, beside the output directory and not
// in it: plan builds its own copy there and Terraform keeps .terraform/ and its local state
// there, so the directory a project commits (fleet/generated) holds only what build wrote.
const deployWorkDir = ".fleetc"

// printNext is the hint after a build: plan in deployWorkDir, next to the output.
func (r *buildResult) printNext(stdout io.Writer, spec string) {
	work := filepath.Join(filepath.Dir(filepath.Clean(r.Output)), deployWorkDir)
	fmt.Fprintf(stdout, "Next: fleetc plan %s%s -o %s\n", r.envFlag(), spec, work)
	fmt.Fprintf(stdout, "  (Terraform's .terraform/ and state go to %s, not %s; keep %s out of git)\n", work, r.Output, work)
}

// buildResult is what a build did; with --format json it is printed as one document.
type buildResult struct {
	Output  string   `json:"output"`
	Files   []string `json:"files"`
	Checked bool     `json:"checked"`
	// UpToDate: the directory already held exactly these files, so nothing was written.
	UpToDate bool `json:"up_to_date"`
	// Environments are the environments built, each into <output>/<env>/ (Files are
	// relative to Output, so they start with the environment); absent without environments.
	Environments []string          `json:"environments,omitempty"`
	Changes      []artifact.Change `json:"changes,omitempty"`
	ds           diag.Diagnostics
	verdict      verdict
	err          string
	have         *artifact.Set
	want         *artifact.Set
}

func build(r *buildResult, spec, env, out string, checkOnly, strict bool) int {
	outs, ds, err := compileSpec(spec, env)
	if err != nil {
		r.err = "fleetc build: " + err.Error()
		return exitUsage
	}
	r.ds, r.verdict = ds, judge(ds, strict)
	for _, o := range outs {
		if o.Files == nil || !r.verdict.Valid {
			r.verdict.Valid = false // no files: the spec has errors
			return exitInvalid
		}
	}
	// Each environment's directory is read, compared and written on its own (it has its
	// own manifest, as plan --env writes it); the report speaks of paths under out.
	r.have, _ = artifact.NewSet()
	r.want, _ = artifact.NewSet()
	var stale []*compiler.Result
	for _, o := range outs {
		if o.Env != "" {
			r.Environments = append(r.Environments, o.Env)
		}
		dir := compiler.OutDir(out, o.Env)
		have, err := artifact.ReadOwned(dir)
		if err != nil && checkOnly {
			r.err = fmt.Sprintf("fleetc build --check: reading %s: %v", dir, err)
			return exitUsage
		}
		// What `plan --endpoint` left beside the configuration redirects a plain terraform
		// apply to the emulator: it is drift, which build removes.
		left := deploy.EmulatorFiles(filepath.Join(dir, "terraform"))
		if err != nil || len(have.Paths()) == 0 || len(artifact.Diff(have, o.Files)) > 0 || len(left) > 0 {
			stale = append(stale, o)
		}
		for _, p := range left {
			rel := path.Join("terraform", filepath.Base(p))
			b, err := artifact.ReadFileIn(dir, rel)
			if err != nil && checkOnly {
				r.err = fmt.Sprintf("fleetc build --check: reading %s: %v", dir, err)
				return exitUsage
			}
			if err == nil {
				_ = r.have.Add(artifact.File{Path: path.Join(o.Env, rel), Bytes: b})
			}
		}
		for _, p := range o.Files.Paths() {
			b, _ := o.Files.Get(p)
			_ = r.want.Add(artifact.File{Path: path.Join(o.Env, p), Bytes: b})
		}
		if have != nil {
			for _, p := range have.Paths() {
				b, _ := have.Get(p)
				_ = r.have.Add(artifact.File{Path: path.Join(o.Env, p), Bytes: b})
			}
		}
	}
	r.Files = r.want.Paths()
	if checkOnly {
		r.Checked = true
		r.Changes = artifact.Diff(r.have, r.want)
		if len(r.Changes) > 0 {
			return exitInvalid
		}
		return exitOK
	}
	// Unchanged output is left alone (timestamps too), and the user is told so.
	if len(stale) == 0 {
		r.UpToDate = true
		return exitOK
	}
	for _, o := range stale {
		dir := compiler.OutDir(out, o.Env)
		if err := artifact.WriteDir(dir, o.Files); err != nil {
			r.err = fmt.Sprintf("fleetc build: writing %s: %v", dir, err)
			return exitUsage
		}
		if err := deploy.RemoveEmulatorFiles(filepath.Join(dir, "terraform")); err != nil {
			r.err = fmt.Sprintf("fleetc build: removing the emulator override: %v", err)
			return exitUsage
		}
	}
	return exitOK
}

// envNote names the environments built, for the text summary.
func (r *buildResult) envNote(sep string) string {
	if len(r.Environments) == 0 {
		return ""
	}
	if len(r.Environments) == 1 {
		return sep + "environment " + r.Environments[0]
	}
	return sep + "environments " + strings.Join(r.Environments, ", ")
}

// envFlag is the --env the next step needs: the one environment built, or a placeholder.
func (r *buildResult) envFlag() string {
	switch len(r.Environments) {
	case 0:
		return ""
	case 1:
		return "--env " + r.Environments[0] + " "
	}
	return "--env ENV "
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
	_ = view.WriteJSON(w, struct {
		view.Report
		*buildResult
	}{view.NewReport(r.ds, r.verdict), r})
}

// compileSpec compiles the spec in environment env, or, without one, every fleet it
// describes (each environment, or the spec itself when it declares none).
func compileSpec(spec, env string) ([]*compiler.Result, diag.Diagnostics, error) {
	if env == "" {
		return compiler.CompileAll(compiler.Input{Path: spec})
	}
	res, err := compiler.Compile(compiler.Input{Path: spec, Env: env})
	if err != nil {
		return nil, nil, err
	}
	return []*compiler.Result{res}, res.Diagnostics, nil
}
