package cli

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

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

Arguments:
  DIR  the project directory (created when missing); default .

It never overwrites: if any of these files exists, nothing is written (exit 1).`,
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
	spec0 := filepath.Join(dir, initSpec)
	fmt.Fprintf(stdout, "Next: fleetc validate %s && fleetc build %s -o %s\n", spec0, spec0, filepath.Join(dir, initOut))
	fmt.Fprintln(stdout, "Then set FLEETC_REF in .github/workflows/*.yml to the fleetc commit (40 hex digits) or release (vX.Y.Z) the workflows install: they refuse a branch.")
	return exitOK
}
