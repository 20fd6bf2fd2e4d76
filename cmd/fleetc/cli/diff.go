package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler/review"
	"github.com/fleetc/fleetc/spec"
)

var failOnValues = []string{"replacement", "breaking", "security", "posture", "diagnostic", "any"}

func init() { register(newDiffCmd) }

// failOnFlag is --fail-on: repeatable, each value also a comma-separated list.
type failOnFlag []string

func (f *failOnFlag) String() string { return strings.Join(*f, ",") }
func (f *failOnFlag) Type() string   { return "category" }
func (f *failOnFlag) Set(v string) error {
	for _, c := range strings.Split(v, ",") {
		if !slices.Contains(failOnValues, c) {
			return fmt.Errorf("want one of %s", strings.Join(failOnValues, ", "))
		}
		*f = append(*f, c)
	}
	return nil
}

func newDiffCmd(s *streams) *cobra.Command {
	format := newFormat("text", review.Formats...)
	var baseRef string
	var failOn failOnFlag
	c := &cobra.Command{
		Use:   "diff (BASE HEAD | --base REF [FILE]) [--format text|markdown|json|github-actions] [--fail-on CATEGORY]...",
		Short: "Review a spec change: replacements, breaking contracts, IAM, posture, diagnostics",
		Long: `Diff loads, lowers and generates both sides in memory, without credentials or a plan,
and reports what the change does: resources replaced or deleted, breaking event contract
changes, widened IAM, posture changes and new diagnostics.

Arguments:
  BASE HEAD  two fleet.yaml files
  FILE       with --base REF: the file compared with itself at git revision REF
             (default fleet.yaml; read with git show, no checkout)

--fail-on CATEGORY (replacement, breaking, security, posture, diagnostic or any;
repeatable) exits 1 when a change of that category exists.`,
		Example: `  fleetc diff base.yaml head.yaml
  fleetc diff --base origin/main fleet.yaml --format markdown --fail-on breaking`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runDiff(args, baseRef, format.value, failOn, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	c.Flags().StringVar(&baseRef, "base", "", "compare FILE with itself at this git revision (read with git, no checkout)")
	c.Flags().Var(&failOn, "fail-on", "exit 1 when a change of this category exists: "+strings.Join(failOnValues, ", ")+" (repeatable)")
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
		if headSrc, err = readSpec(headName); err == nil {
			baseName, baseSrc, err = gitShow(baseRef, headName)
		}
	case baseRef == "" && len(files) == 2:
		baseName, headName = files[0], files[1]
		if baseSrc, err = readSpec(baseName); err == nil {
			headSrc, err = readSpec(headName)
		}
	default:
		fmt.Fprintln(stderr, "fleetc diff: name BASE and HEAD files, or --base REF and at most one FILE")
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	rep, err := review.Compare(review.Load(baseName, baseSrc), review.Load(headName, headSrc))
	if err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	if err := rep.Render(stdout, format); err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	for _, c := range failOn {
		if rep.Has(c) {
			return exitInvalid
		}
	}
	return exitOK
}

func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return limitedRead(f, path)
}

func limitedRead(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, spec.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > spec.MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB; fleetc refuses specs this large", name, spec.MaxFileBytes>>20)
	}
	return b, nil
}
