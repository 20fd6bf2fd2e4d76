package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/types"
)

func newTypesCmd(s *streams) *cobra.Command {
	lang := newFormat(types.Go, types.Langs()...)
	var out string
	c := &cobra.Command{
		Use:   "types FILE --lang go|typescript|python [-o DIR]",
		Short: "Write typed handler inputs and outputs for every agent class",
		Long: `Types writes, per agent class, the type its handler receives (the consumed event's
detail; a workflow-only class gets any JSON object) and the type it returns
(agents.<class>.output; any JSON value without one): JSON field names, required vs
optional, enums, and bounds as comments. Go is one package (types.go), TypeScript one
module (types.ts), Python TypedDicts (fleet_types.py).

Arguments:
  FILE  the fleet.yaml to read

Without -o the file goes to stdout. Exit 0 written, 1 invalid spec, 2 usage or I/O error.`,
		Example: `  fleetc types fleet.yaml --lang go -o internal/fleettypes
  fleetc types fleet.yaml --lang typescript > src/fleet-types.ts`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runTypes(args, s.env, lang.value, out, s.stdout, s.stderr))
		},
	}
	c.Flags().Var(lang, "lang", "language: "+lang.Type())
	_ = c.RegisterFlagCompletionFunc("lang", cobra.FixedCompletions(types.Langs(), cobra.ShellCompDirectiveNoFileComp))
	c.Flags().StringVarP(&out, "output", "o", "", "directory to write the types file into (default: stdout)")
	return c
}

func runTypes(files []string, env, lang, out string, stdout, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc types: name exactly one fleet.yaml")
		return exitUsage
	}
	_, fleet, ds := compiler.LoadContracts(files[0], env)
	if fleet == nil || ds.HasErrors() {
		render(stderr, "text", ds, judge(ds, false))
		return exitInvalid
	}
	f, err := types.Generate(fleet, lang)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc types: %v\n", err)
		return exitUsage
	}
	if out == "" {
		if _, err := stdout.Write(f.Bytes); err != nil {
			return exitUsage
		}
		return exitOK
	}
	if err := writeAtomic(filepath.Join(out, f.Path), f.Bytes); err != nil {
		fmt.Fprintf(stderr, "fleetc types: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(out, f.Path))
	return exitOK
}

// writeAtomic writes b to path through a temporary file in the same directory, so a reader
// never sees half a file.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fleetc-types-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
