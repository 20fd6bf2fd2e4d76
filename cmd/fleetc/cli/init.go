package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/examples"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// starters are the commented fleet.yaml of each runtime fleetc init offers.
//
//go:embed starter/*.yaml
var starters embed.FS

// Where fleetc init puts things; the CI workflows it copies use the same paths.
const (
	initSpec    = "fleet/fleet.yaml"
	initOut     = "fleet/generated"
	initHandler = "handler"
)

func newInitCmd(s *streams) *cobra.Command {
	runtimes := []string{rc.RuntimeLambda, rc.RuntimeEKS, rc.RuntimeAgentCore}
	runtime := newFormat(rc.RuntimeLambda, runtimes...)
	c := &cobra.Command{
		Annotations: noSpec,
		Use:         "init [--runtime lambda|eks|agentcore] [DIR]",
		Short:       "Start a fleet: a commented fleet.yaml, a handler image and CI workflows",
		Long: `Init writes a starter project into DIR (default: the current directory):

  fleet/fleet.yaml                      a commented fleet that validates: one event, one class
  handler/Dockerfile, handler/handler.py  the class image: fleet-worker plus a Python handler
  .github/workflows/fleet-review.yml    pull requests: validate, drift check, diff, contracts
  .github/workflows/fleet-deploy.yml    main: build and push the images to ECR, plan, apply
  .gitignore                            Terraform's working files and local state (not fleet/generated)

Arguments:
  DIR  the project directory (created when missing); default .

It never overwrites: if any of these files exists, nothing is written (exit 1); a
.gitignore that exists gets the lines it lacks appended.`,
		Example: `  fleetc init hello
  fleetc init --runtime eks hello && cd hello && fleetc validate fleet/fleet.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return exit(runInit(dir, runtime.value, s.stdout, s.stderr))
		},
	}
	c.Flags().Var(runtime, "runtime", "the agent class's runtime: lambda, eks or agentcore")
	_ = c.RegisterFlagCompletionFunc("runtime", cobra.FixedCompletions(runtimes, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func runInit(dir, runtime string, stdout, stderr io.Writer) int {
	spec, err := starters.ReadFile("starter/" + runtime + ".yaml")
	if err != nil {
		fmt.Fprintf(stderr, "fleetc init: no starter for runtime %q\n", runtime)
		return exitUsage
	}
	files := map[string][]byte{initSpec: spec}
	copyFS := func(fsys fs.FS, from, to string) error {
		return fs.WalkDir(fsys, from, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(fsys, p)
			rel, _ := filepath.Rel(from, p)
			files[filepath.ToSlash(filepath.Join(to, rel))] = b
			return err
		})
	}
	if err := errors.Join(copyFS(examples.CI, "ci", ".github/workflows"), copyFS(examples.PythonImage, "images/python", initHandler)); err != nil {
		fmt.Fprintf(stderr, "fleetc init: %v\n", err)
		return exitUsage
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			fmt.Fprintf(stderr, "fleetc init: %s already exists; nothing was written\n", filepath.Join(dir, n))
			return exitInvalid
		}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintf(stderr, "fleetc init: %v\n", err)
			return exitUsage
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			fmt.Fprintf(stderr, "fleetc init: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "created %s\n", p)
	}
	if err := writeIgnore(dir, stdout); err != nil {
		fmt.Fprintf(stderr, "fleetc init: %v\n", err)
		return exitUsage
	}
	spec0 := filepath.Join(dir, initSpec)
	fmt.Fprintf(stdout, "Next: fleetc validate %s && fleetc build %s -o %s\n", spec0, spec0, filepath.Join(dir, initOut))
	fmt.Fprintln(stdout, "Then set FLEETC_REF in .github/workflows/*.yml to the fleetc commit (40 hex digits) or release (vX.Y.Z) the workflows install: they refuse a branch.")
	return exitOK
}

// ignored are what init's .gitignore keeps out of git: Terraform's working files wherever
// plan runs (deployWorkDir, where build's hint sends it, and any output directory), the
// emulator files dev and --endpoint write beside the configuration, and the default output
// directory. The generated directory itself (initOut) is committed: the review workflow's
// drift check compares it with the spec, so it is not listed.
var ignored = []string{
	deployWorkDir + "/",
	"/" + defaultOut + "/",
	".terraform/",
	"*.tfstate",
	"*.tfstate.*",
	"*.tfplan",
	deploy.EmulatorFilePrefix + "*",
}

// writeIgnore creates dir/.gitignore, or appends to an existing one the lines it lacks
// (init into a repository that has one must not refuse, nor drop its lines).
func writeIgnore(dir string, stdout io.Writer) error {
	p := filepath.Join(dir, ".gitignore")
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add strings.Builder
	for _, l := range ignored {
		if !have[l] {
			add.WriteString(l + "\n")
		}
	}
	if add.Len() == 0 {
		return nil
	}
	verb := "created"
	var b bytes.Buffer
	if len(old) > 0 {
		verb = "updated"
		b.Write(old)
		if !bytes.HasSuffix(old, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "# fleetc: Terraform's working files and local state; %s/ itself is committed.\n", initOut)
	b.WriteString(add.String())
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s\n", verb, p)
	return nil
}
