package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/spec/diag"
)

func newValidateCmd(s *streams) *cobra.Command {
	format := newFormat("text", "text", "json", "github-actions")
	var strict bool
	c := &cobra.Command{
		Use:   "validate [--format text|json|github-actions] [--strict] FILE...",
		Short: "Check fleet.yaml files against the schema and the rule catalog",
		Long: `Validate checks each fleet.yaml against its JSON Schema and every rule of the catalog
(fleetc rules), and prints every problem with file:line:col, an ID and an explanation.

Arguments:
  FILE...  one or more fleet.yaml files

Text diagnostics go to stderr; a format asked for by name (json, github-actions) is the
command's output and goes to stdout. Exit 0 valid, 1 invalid (errors, or warnings with
--strict), 2 usage error.`,
		Example: `  fleetc validate fleet.yaml
  fleetc validate --strict --format github-actions fleet.yaml`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runValidate(args, s.env, format.value, strict, s.stdout, s.stderr))
		},
	}
	addFormat(c, format, "")
	c.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	return c
}

func runValidate(files []string, env, format string, strict bool, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "fleetc validate: name at least one fleet.yaml")
		return exitUsage
	}
	var all diag.Diagnostics
	for _, f := range files {
		_, ds, err := compileSpec(f, env) // without --env, every environment
		if err != nil {
			fmt.Fprintf(stderr, "fleetc validate: %v\n", err)
			return exitUsage
		}
		all = append(all, ds...)
	}
	all = all.Sorted()
	v := judge(all, strict)
	if format == "json" || len(all) > 0 {
		render(diagnosticStream(format, stdout, stderr), format, all, v)
	}
	if !v.Valid {
		return exitInvalid
	}
	if format == "text" && len(all) == 0 {
		fmt.Fprintf(stdout, "%s: valid\n", strings.Join(files, ", "))
	}
	return exitOK
}
