package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/review"
	"github.com/fleetc/fleetc/spec"
)

// failOnFlag is --fail-on: repeatable, each value also a comma-separated list.
type failOnFlag []string

func (f *failOnFlag) String() string { return strings.Join(*f, ",") }
func (f *failOnFlag) Type() string   { return "category" }
func (f *failOnFlag) Set(v string) error {
	for _, c := range strings.Split(v, ",") {
		if !slices.Contains(review.FailOn, c) {
			return fmt.Errorf("want one of %s", strings.Join(review.FailOn, ", "))
		}
		*f = append(*f, c)
	}
	return nil
}

func newDiffCmd(s *streams) *cobra.Command {
	format := newFormat("text", review.Formats...)
	var baseRef, baseEnv string
	var failOn failOnFlag
	var exitZero bool
	c := &cobra.Command{
		Use:   "diff (BASE HEAD | --base REF [FILE] | --base-env ENV --env ENV FILE) [--format text|markdown|json|github-actions] [--fail-on CONDITION]... [--exit-zero]",
		Short: "Review a spec change: replacements, contract changes, IAM, posture, capacity, diagnostics",
		Long: `Diff loads, lowers and generates both sides in memory, without credentials or a plan,
and reports what the change does: resources replaced or deleted, breaking event contract
changes, widened IAM, posture changes, new diagnostics, and what the change does to
capacity (quota use, rates, first quota to break, monthly cost; each side under its own
traffic, from the same arithmetic as fleetc capacity). A spec that does not exist at
REF (new in the pull request) is compared with an empty base: everything is added.

Arguments:
  BASE HEAD  two fleet.yaml files
  FILE       with --base REF: the file compared with itself at git revision REF
             (default fleet.yaml; read with git show, no checkout); with --base-env
             alone: the file whose two environments are compared

A spec with environments is compared environment by environment (text and markdown), or
in the one --env names. --base-env ENV takes the base side in environment ENV instead
(the head stays in --env): fleetc diff --base-env prod --env staging fleet.yaml shows what
staging does differently from prod. Both sides are then lowered under the head's names,
so only what differs (region, scale, image, ARNs) shows, not the names every environment
has of its own.

Exit codes: 1 when the verdict is blocking (an error-severity change), or, with
--fail-on CONDITION (repeatable), when the report meets one: blocking, a category
(replacement, contract, security, posture, rollout, capacity, diagnostic), breaking (a contract change that
breaks consumers), any; --fail-on none or --exit-zero reports only (exit 0); 2 on usage.`,
		Example: `  fleetc diff base.yaml head.yaml
  fleetc diff --base origin/main fleet.yaml --format markdown --fail-on breaking
  fleetc diff --base-env prod --env staging fleet.yaml`,
		RunE: func(_ *cobra.Command, args []string) error {
			if exitZero {
				failOn = failOnFlag{review.FailNone}
			}
			return exit(runDiff(args, diffSides{ref: baseRef, env: s.env, baseEnv: baseEnv}, format.value, failOn, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	c.Flags().StringVar(&baseRef, "base", "", "compare FILE with itself at this git revision (read with git, no checkout)")
	c.Flags().StringVar(&baseEnv, "base-env", "", "take the base side in this environment of the spec (the head is in --env)")
	_ = c.RegisterFlagCompletionFunc("base-env", completeEnv)
	c.Flags().Var(&failOn, "fail-on", "exit 1 when the report meets this condition: "+strings.Join(review.FailOn, ", ")+" (repeatable; default blocking; none reports only)")
	c.Flags().BoolVar(&exitZero, "exit-zero", false, "report only: exit 0 whatever the report says (as --fail-on none)")
	return c
}

// diffSides says where diff's two sides come from: a git revision for the base (ref), and
// the environments of the head (env, --env) and of the base (baseEnv, default env).
type diffSides struct{ ref, env, baseEnv string }

// runDiff reviews a spec change: two files, a file against itself at a git revision, or
// two environments of one file.
func runDiff(files []string, sides diffSides, format string, failOn []string, stdout, stderr io.Writer) int {
	var err error
	var baseName, headName string
	var baseSrc, headSrc []byte
	baseRef := sides.ref
	if sides.baseEnv != "" && sides.env == "" {
		fmt.Fprintln(stderr, "fleetc diff: --base-env compares with the environment --env names; add --env")
		return exitUsage
	}
	switch {
	case sides.baseEnv != "" && baseRef == "" && len(files) == 1:
		headName, baseName = files[0], files[0]
		if headSrc, err = spec.ReadFile(headName); err == nil {
			baseSrc = headSrc
		}
	case baseRef != "" && len(files) <= 1:
		headName = "fleet.yaml"
		if len(files) == 1 {
			headName = files[0]
		}
		if headSrc, err = spec.ReadFile(headName); err == nil {
			baseName, baseSrc, err = gitShow(baseRef, headName)
		}
	case baseRef == "" && len(files) == 2:
		baseName, headName = files[0], files[1]
		if baseSrc, err = spec.ReadFile(baseName); err == nil {
			headSrc, err = spec.ReadFile(headName)
		}
	default:
		fmt.Fprintln(stderr, "fleetc diff: name BASE and HEAD files, --base REF and at most one FILE, or --base-env ENV and one FILE")
		return exitUsage
	}
	base := (*review.Side)(nil)
	if errors.Is(err, errNotAtRevision) {
		// A spec new in the pull request: everything it declares is added.
		base, err = review.Empty(baseName), nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	envs := []string{sides.env}
	if sides.env == "" {
		// A spec with environments is reviewed in each (the head's list; a base without
		// environments, or without one of them, reports it).
		if f, _ := spec.Load(headName, headSrc); f != nil && len(f.Environments()) > 0 {
			envs = f.Environments()
		}
	}
	if len(envs) > 1 && format != "text" && format != "markdown" {
		fmt.Fprintf(stderr, "fleetc diff: %s declares environments %s; --format %s reports one: name it with --env\n", headName, strings.Join(envs, ", "), format)
		return exitUsage
	}
	if len(failOn) == 0 {
		failOn = []string{review.FailBlocking}
	}
	// A base that declares no environments yet (the change introduces them) is the fleet as
	// it was: compared as it is, the report shows honestly that every name changes.
	baseHasEnvs := false
	if f, _ := spec.Load(baseName, baseSrc); f != nil && len(f.Environments()) > 0 {
		baseHasEnvs = true
	}
	code := exitOK
	for i, env := range envs {
		bside, baseEnv, namesAs := base, sides.baseEnv, env
		if baseEnv == "" && baseHasEnvs {
			baseEnv = env
		} else if baseEnv == "" {
			namesAs = ""
		}
		if bside == nil {
			if bside, err = reviewSide(baseName, baseSrc, baseEnv, namesAs); err != nil {
				fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
				return exitUsage
			}
		}
		hside, err := reviewSide(headName, headSrc, env, env)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
			return exitUsage
		}
		rep, err := review.Compare(bside, hside)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
			return exitUsage
		}
		if len(envs) > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if format == "markdown" {
				fmt.Fprintf(stdout, "## Environment %s\n\n", env)
			} else {
				fmt.Fprintf(stdout, "== environment %s ==\n", env)
			}
		}
		if err := rep.Render(stdout, format); err != nil {
			fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
			return exitUsage
		}
		for _, c := range failOn {
			if rep.Has(c) {
				code = exitInvalid
			}
		}
	}
	return code
}

// reviewSide compiles one side of the review: environment env of the spec, under the names
// of environment namesAs, generated even when rules object (their findings are part of the
// review).
func reviewSide(name string, src []byte, env, namesAs string) (*review.Side, error) {
	res, err := compiler.Compile(compiler.Input{Name: name, Source: src, Env: env, NamesAs: namesAs, Stop: compiler.Reviewed})
	if err != nil {
		return nil, err
	}
	return review.FromResult(name, res), nil
}
