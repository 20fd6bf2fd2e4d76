package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

func newRulesCmd(s *streams) *cobra.Command {
	format := newFormat("text", "text", "json")
	c := &cobra.Command{
		Annotations: noSpec,
		Use:         "rules [--format text|json]",
		Short:       "List every check fleetc runs",
		Long: `Rules lists the rule catalog: each rule's ID, category, severity and summary.
fleetc explain ID says why a rule exists and how to fix what it reports.`,
		Example: `  fleetc rules
  fleetc rules --format json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return exit(runRules(format.value, s.stdout))
		},
	}
	addFormat(c, format, "")
	return c
}

type ruleInfo struct {
	ID       string        `json:"id"`
	Category string        `json:"category"`
	Severity diag.Severity `json:"severity"`
	Summary  string        `json:"summary"`
}

// rulesDoc is rules' JSON document (schemas/output/rules.schema.json); it reads no spec,
// so its diagnostics are always [].
type rulesDoc struct {
	jsonreport.Header
	Rules []ruleInfo `json:"rules"`
}

func catalog() []ruleInfo {
	var out []ruleInfo
	for _, e := range compiler.Catalog() {
		out = append(out, ruleInfo{e.ID, e.Category, e.Severity, e.Summary})
	}
	return out
}

func runRules(format string, stdout io.Writer) int {
	rules := catalog()
	if format == "json" {
		_ = view.WriteJSON(stdout, rulesDoc{jsonreport.NewHeader(nil), rules})
		return exitOK
	}
	// Columns as wide as their longest value, so a long category cannot shift a row.
	tw := tabwriter.NewWriter(stdout, 0, 0, 1, ' ', 0)
	for _, r := range rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Category, r.Severity, r.Summary)
	}
	_ = tw.Flush()
	return exitOK
}
