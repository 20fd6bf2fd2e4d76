// Package cli is fleetc's command line. Main takes its streams as arguments so tests run
// the whole CLI in-process.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes, as Terraform and compilers use them.
const (
	exitOK      = 0
	exitInvalid = 1 // the spec is invalid, or --check found stale output
	exitUsage   = 2 // bad usage or an internal error
)

const usage = `fleetc compiles a fleet.yaml into the infrastructure and runtime config of an
event-driven AI agent fleet on AWS.

Usage:
  fleetc validate [--format text|json|github-actions] [--strict] FILE...
  fleetc build FILE [-o DIR] [--check] [--strict] [--format text|json|github-actions]
  fleetc plan FILE [-o DIR] [--var-file F]... [--backend-config K=V]... [--out PLANFILE] [--endpoint URL] [--format text|json] [--detailed-exitcode]
  fleetc apply FILE [PLANFILE] [--auto-approve] [--allow-replace ADDRESS]... [--endpoint URL] [-o DIR]
  fleetc destroy FILE [--auto-approve] [--allow-replace ADDRESS]... [--endpoint URL] [-o DIR]
  fleetc rules [--format text|json]
  fleetc schemas check FILE (--base REF | --base-file F | --against-registry NAME) [--endpoint-url URL] [--format text|json]
  fleetc schemas publish FILE --registry NAME [--dry-run] [--allow-breaking] [--endpoint-url URL] [--format text|json]
  fleetc explain ID
  fleetc graph FILE [--format mermaid|dot]
  fleetc tools FILE [--format json|openai|bedrock|mcp]
  fleetc diff (BASE HEAD | --base REF [FILE]) [--format text|markdown|json|github-actions] [--fail-on CATEGORY]
      CATEGORY: replacement, breaking, security, posture, diagnostic or any (repeatable)
  fleetc version

Exit codes: 0 success, 1 invalid spec (or stale output with --check), 2 usage or internal error.
`

// Version is set by the release build.
var Version = "0.1.0-dev"

// Main runs fleetc with args (without the program name) and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fleetc: internal error: %v\nThis is a bug; please report it with the command and spec that caused it.\n", r)
			code = exitUsage
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "validate":
		return runValidate(rest, stdout, stderr)
	case "build":
		return runBuild(rest, stdout, stderr)
	case "schemas":
		return runSchemas(rest, stdout, stderr)
	case "plan":
		return runPlan(rest, stdout, stderr)
	case "apply":
		return runApply(rest, stdin, stdout, stderr)
	case "destroy":
		return runDestroy(rest, stdin, stdout, stderr)
	case "rules":
		return runRules(rest, stdout, stderr)
	case "explain":
		return runExplain(rest, stdout, stderr)
	case "graph":
		return runGraph(rest, stdout, stderr)
	case "tools":
		return runTools(rest, stdout, stderr)
	case "diff":
		return runDiff(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "fleetc %s\n", Version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "fleetc: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// parseInterspersed parses flags that may appear before, between or after positional
// arguments (`fleetc build spec.yaml -o out`), returning the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fleetc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// formatFlag is a --format value restricted to a set of names.
type formatFlag struct {
	value   string
	allowed []string
}

func (f *formatFlag) String() string { return f.value }
func (f *formatFlag) Set(s string) error {
	for _, a := range f.allowed {
		if s == a {
			f.value = s
			return nil
		}
	}
	return errors.New("must be one of " + strings.Join(f.allowed, ", "))
}
