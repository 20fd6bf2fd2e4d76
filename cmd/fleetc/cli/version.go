package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Annotations: noSpec,
		Use:         "version",
		Short:       "Print fleetc's version",
		Long:        "Version prints fleetc's version (also fleetc --version); the same version goes into the\ndescription of every schema fleetc schemas publish writes.",
		Example:     "  fleetc version",
		Args:        cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			fmt.Fprintf(s.stdout, "fleetc %s\n", Version)
			return nil
		},
	}
}
