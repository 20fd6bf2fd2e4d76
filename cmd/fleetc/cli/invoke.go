package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler/deploy"
)

// invokeOptions are invoke's flags.
type invokeOptions struct {
	detailFlags
	standIn   bool
	paths     []string
	workerBin string
}

func newInvokeCmd(s *streams) *cobra.Command {
	var o invokeOptions
	c := &cobra.Command{
		Use:   "invoke FILE CLASS (--example | --detail JSON | --detail-file F) [--path IMAGE_DIR=DIR] [--stand-in] [--worker-bin F]",
		Short: "Run one class's handler once on this machine and check its result against the class's contracts",
		Long: `Invoke runs CLASS's handler once, locally and without AWS, on the generated example of the
event the class consumes (--example, as fleetc send --example makes it) or on a given detail
(checked against the event's schema first). It builds the handler fleet-worker would build
from the class's runtime config: an exec handler's files under the image's /app run from the
project's handler/ (fleetc init's layout; --path maps other directories); an http handler is
called at its URL; an llm handler needs a model, so it runs only as fleetc dev's stand-in
(--stand-in). The result is then held to the class's contracts with the worker's own code: a
handler failure, the class's output schema, and every completion event built by the fill
rule against its event's schema. fleet-worker does both (fleet-worker dry-run), run as a
process as fleetc dev runs it: the judge is the worker itself, and fleetc links no worker
runtime.

The result is printed on stdout; what ran, the input and the completion events on stderr.

Arguments:
  FILE   the fleet.yaml
  CLASS  the agent class

Exit 0 the step would finish, 1 it would not (the code and the violation are printed) or
FILE does not build, 2 usage error or an llm class without --stand-in.`,
		Example: `  fleetc invoke fleet/fleet.yaml greeter --example
  fleetc invoke fleet/fleet.yaml greeter --detail '{"trace_id":"t1","name":"Ada"}'`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runInvoke(args, s.env, o, s.stdin, s.stdout, s.stderr))
		},
	}
	o.register(c, "the step's input (the consumed event's detail), as JSON", "the generated example detail of the event the class consumes")
	c.Flags().BoolVar(&o.standIn, "stand-in", false, "run fleetc dev's stand-in handler instead of the class's own (an llm class's only way without a model)")
	c.Flags().StringArrayVar(&o.paths, "path", nil, pathFlagHelp)
	c.Flags().StringVar(&o.workerBin, "worker-bin", "", "fleet-worker binary, which runs and judges the handler (default: next to fleetc, then PATH, then ./bin)")
	return c
}

func runInvoke(pos []string, env string, o invokeOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "fleetc invoke: name one fleet.yaml and one class")
		return exitUsage
	}
	if !o.one() {
		fmt.Fprintln(stderr, "fleetc invoke: pass exactly one of --example, --detail JSON or --detail-file F")
		return exitUsage
	}
	body, err := o.read(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc invoke: %v\n", err)
		return exitUsage
	}
	paths, err := dev.ResolvePathMap(pos[0], o.paths)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc invoke: %v\n", err)
		return exitUsage
	}
	inv, err := dev.Invoke(context.Background(), dev.InvokeOptions{Spec: pos[0], Env: env, Class: pos[1], Detail: body,
		Paths: paths, StandIn: o.standIn, WorkerBin: o.workerBin, Stderr: stderr})
	var be *deploy.BuildError
	switch {
	case errors.As(err, &be):
		render(stderr, "text", be.Diagnostics, judge(be.Diagnostics, false))
		fmt.Fprintf(stderr, "fleetc invoke: %s does not build\n", pos[0])
		return exitInvalid
	case errors.Is(err, dev.ErrNeedsModel):
		fmt.Fprintf(stderr, "fleetc invoke: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "fleetc invoke: %v\n", err)
		return exitInvalid
	}
	ran := inv.Ran
	if inv.Command != nil {
		ran = dev.CommandLine(relative(inv.Command))
	}
	fmt.Fprintf(stderr, "fleetc invoke: %s ran %s\n  input: %s\n", pos[1], ran, inv.Detail)
	if inv.Code != "" {
		if inv.Result != nil {
			fmt.Fprintf(stderr, "  result: %s\n", inv.Result)
		}
		verdict := "dead-lettered"
		if inv.Retryable {
			verdict = "retried"
		}
		fmt.Fprintf(stderr, "fleetc invoke: %s: the step would be %s: %s: %s\n", pos[1], verdict, inv.Code, inv.Reason)
		return exitInvalid
	}
	for _, e := range inv.Events {
		fmt.Fprintf(stderr, "  completion event %s (source %s), fits its schema: %s\n", e.DetailType, e.Source, e.Detail)
	}
	if len(inv.Events) == 0 {
		fmt.Fprintln(stderr, "  no completion event (the class emits none)")
	}
	out, err := json.MarshalIndent(inv.Result, "", "  ")
	if err != nil {
		out = inv.Result
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
}

// relative shows each absolute argument under the working directory relative to it: shorter
// to read, and the same on every machine.
func relative(cmd []string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return cmd
	}
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = a
		if rel, err := filepath.Rel(wd, a); err == nil && filepath.IsAbs(a) && filepath.IsLocal(rel) {
			out[i] = rel
		}
	}
	return out
}
