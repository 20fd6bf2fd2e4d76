package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/compiler/review"
)

// runDiff reviews a spec change: two files, or a file against itself at a git revision.
func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", stderr)
	format := &formatFlag{value: "text", allowed: review.Formats}
	fs.Var(format, "format", "output format: text, markdown, json or github-actions")
	baseRef := fs.String("base", "", "compare FILE with itself at this git revision (read with git, no checkout)")
	var failOn []string
	fs.Func("fail-on", "exit 1 when the report has: "+strings.Join(review.FailOn, ", ")+" (repeatable; default blocking, an error-severity change; none reports only)", func(v string) error {
		for _, c := range strings.Split(v, ",") {
			if !slices.Contains(review.FailOn, c) {
				return fmt.Errorf("want one of %s", strings.Join(review.FailOn, ", "))
			}
			failOn = append(failOn, c)
		}
		return nil
	})
	exitZero := fs.Bool("exit-zero", false, "report only: exit 0 whatever the report says (as --fail-on none)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	var baseName, headName string
	var baseSrc, headSrc []byte
	switch {
	case *baseRef != "" && len(files) <= 1:
		headName = "fleet.yaml"
		if len(files) == 1 {
			headName = files[0]
		}
		if headSrc, err = readSpec(headName); err == nil {
			baseName, baseSrc, err = gitShow(*baseRef, headName)
		}
	case *baseRef == "" && len(files) == 2:
		baseName, headName = files[0], files[1]
		if baseSrc, err = readSpec(baseName); err == nil {
			headSrc, err = readSpec(headName)
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
	if err := rep.Render(stdout, format.value); err != nil {
		fmt.Fprintf(stderr, "fleetc diff: %v\n", err)
		return exitUsage
	}
	if *exitZero {
		return exitOK
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

// maxSpecBytes bounds what fleetc reads of one spec: far above any real fleet (the
// 1,000-class benchmark fleet is under 1 MiB), low enough that an untrusted pull request
// cannot make a CI machine read gigabytes.
const maxSpecBytes = 8 << 20

func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return limitedRead(f, path)
}

func limitedRead(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSpecBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB; fleetc refuses specs this large", name, maxSpecBytes>>20)
	}
	return b, nil
}
