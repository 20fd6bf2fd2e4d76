package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/spec"
)

func newExplainCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Annotations: noSpec,
		Use:         "explain ID",
		Short:       "Explain why a rule exists and how to fix what it reports",
		Long: `Explain prints a rule's summary, category, severity, the reason it exists and how to
fix what it reports.

Arguments:
  ID  a rule ID from a diagnostic or from fleetc rules (Q005, P005, ...); case-insensitive`,
		Example: `  fleetc explain Q005`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runExplain(args, s.stdout, s.stderr))
		},
	}
}

func runExplain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "fleetc explain: name one rule ID, e.g. fleetc explain Q001 (fleetc rules lists them)")
		return exitUsage
	}
	if e, ok := compiler.Lookup(args[0]); ok {
		fmt.Fprintf(stdout, "%s: %s (%s, %s)\n\n%s\n", e.ID, e.Summary, e.Category, e.Severity, e.Explain)
		return exitOK
	}
	id := strings.ToUpper(args[0])
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
