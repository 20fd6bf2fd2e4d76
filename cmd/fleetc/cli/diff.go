package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

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
	var baseRef string
	var failOn failOnFlag
	var exitZero bool
	c := &cobra.Command{
		Use:   "diff (BASE HEAD | --base REF [FILE]) [--format text|markdown|json|github-actions] [--fail-on CONDITION]... [--exit-zero]",
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
             (default fleet.yaml; read with git show, no checkout)

Exit codes: 1 when the verdict is blocking (an error-severity change), or, with
--fail-on CONDITION (repeatable), when the report meets one: blocking, a category
(replacement, contract, security, posture, capacity, diagnostic), breaking (a contract change that
breaks consumers), any; --fail-on none or --exit-zero reports only (exit 0); 2 on usage.`,
		Example: `  fleetc diff base.yaml head.yaml
  fleetc diff --base origin/main fleet.yaml --format markdown --fail-on breaking`,
		RunE: func(_ *cobra.Command, args []string) error {
			if exitZero {
				failOn = failOnFlag{review.FailNone}
			}
			return exit(runDiff(args, baseRef, format.value, failOn, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	c.Flags().StringVar(&baseRef, "base", "", "compare FILE with itself at this git revision (read with git, no checkout)")
	c.Flags().Var(&failOn, "fail-on", "exit 1 when the report meets this condition: "+strings.Join(review.FailOn, ", ")+" (repeatable; default blocking; none reports only)")
	c.Flags().BoolVar(&exitZero, "exit-zero", false, "report only: exit 0 whatever the report says (as --fail-on none)")
	return c
}

// runDiff reviews a spec change: two files, or a file against itself at a git revision.
func runDiff(files []string, baseRef, format string, failOn []string, stdout, stderr io.Writer) int {
	var err error
	var baseName, headName string
	var baseSrc, headSrc []byte
	switch {
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
		fmt.Fprintln(stderr, "fleetc diff: name BASE and HEAD files, or --base REF and at most one FILE")
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
	if base == nil {
		base = review.Load(baseName, baseSrc)
	}
	rep, err := review.Compare(base, review.Load(headName, headSrc))
	if err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	if err := rep.Render(stdout, format); err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	if len(failOn) == 0 {
		failOn = []string{review.FailBlocking}
	}
	for _, c := range failOn {
		if rep.Has(c) {
			return exitInvalid
		}
	}
	return exitOK
}
