package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
)

// devOptions are dev's flags.
type devOptions struct {
	out, endpoint, tfBin, workerBin, rieBin string
	emulator                                string
	port                                    int
	noUI, verbose                           bool
	paths                                   []string
}

func newDevCmd(s *streams) *cobra.Command {
	var o devOptions
	c := &cobra.Command{
		Use:   "dev FILE [--endpoint URL] [--port N] [--no-ui] [--verbose] [-o DIR] [--worker-bin F] [--rie-bin F] [--path IMAGE_DIR=DIR]",
		Short: "Run the whole fleet on this machine: emulator, workers, live page, faults",
		Long: `Dev applies FILE to a local AWS emulator (--endpoint, or kumo on 127.0.0.1:4566, started
when installed) with the emulator override, starts one fleet-worker per agent class with
their logs interleaved, watches every event on the bus, and serves a live page with the
queues, the ledger, every event's detail and step's input and result by conversation, and
faults on demand (--verbose logs the details, inputs and results too). Saving the spec re-applies it. Ctrl-C drains the
workers, destroys what dev applied and stops the emulator if dev started it.

Exec handlers run from the project: the image's /app is the project's handler/ (fleetc
init's layout), or what --path maps; dev prints each class's command line.

Arguments:
  FILE  the fleet.yaml to run

Exit 0 after a clean teardown, 1 on failure, 2 usage error.`,
		Example: `  fleetc dev examples/research-fleet/fleet.yaml
  fleetc dev fleet.yaml --endpoint http://127.0.0.1:4566 --port 9000`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runDev(args, s.env, o, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVarP(&o.out, "output", "o", "out", "output directory: fleetc builds into it, runs Terraform in its terraform/ and keeps dev's files in its dev/")
	c.Flags().StringVar(&o.endpoint, "endpoint", os.Getenv(deploy.EnvEndpoint), "a running AWS emulator (also "+deploy.EnvEndpoint+"); default: kumo on "+dev.KumoAddr+", started when installed")
	c.Flags().StringVar(&o.emulator, "emulator", "", emulatorFlagHelp)
	c.Flags().IntVar(&o.port, "port", devPagePort, "live page port on 127.0.0.1 (0: any free port)")
	c.Flags().BoolVar(&o.noUI, "no-ui", false, "no live page")
	c.Flags().BoolVar(&o.verbose, "verbose", false, "also log each event's detail, each step's input and its result (bounded, secrets redacted)")
	c.Flags().StringVar(&o.tfBin, "terraform-bin", "", "terraform binary (default: terraform on PATH)")
	c.Flags().StringVar(&o.workerBin, "worker-bin", "", "fleet-worker binary (default: next to fleetc, then PATH, then ./bin)")
	c.Flags().StringArrayVar(&o.paths, "path", nil, pathFlagHelp)
	c.AddCommand(newDevActionCmds(s)...)
	c.AddCommand(newDevStatusCmd(s))
	c.Flags().StringVar(&o.rieBin, "rie-bin", "", "aws-lambda-rie, the Lambda Runtime Interface Emulator lambda classes run under (default: next to fleetc, then PATH, then ./bin; none: poll mode)")
	return c
}

func runDev(pos []string, env string, o devOptions, stdout, stderr io.Writer) int {
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "fleetc dev: name exactly one fleet.yaml")
		return exitUsage
	}
	paths, err := dev.ResolvePathMap(pos[0], o.paths)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dev: %v\n", err)
		return exitUsage
	}
	emu, err := deploy.ParseEmulator(o.emulator)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dev: %v\n", err)
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	err = dev.Run(ctx, dev.Options{Spec: pos[0], Env: env, Dir: compiler.OutDir(o.out, env), Endpoint: o.endpoint, Emulator: emu, Port: o.port, NoUI: o.noUI, Verbose: o.verbose,
		TerraformBin: o.tfBin, WorkerBin: o.workerBin, RIEBin: o.rieBin, Paths: paths, Stdout: stdout, Stderr: stderr})
	var be *deploy.BuildError
	switch {
	case errors.As(err, &be):
		render(stderr, "text", be.Diagnostics, judge(be.Diagnostics, false))
		fmt.Fprintf(stderr, "fleetc dev: %s does not build\n", pos[0])
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "fleetc dev: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// pathFlagHelp is the --path flag of dev and invoke.
const pathFlagHelp = "IMAGE_DIR=LOCAL_DIR: run exec handlers' files under the image's IMAGE_DIR from LOCAL_DIR (repeatable; default: " +
	dev.ImageHandlerDir + "=" + dev.ProjectHandlerDir + "/ beside or in the spec's directory, fleetc init's layout)"

// newDevHandlerCmd is the hidden command fleetc dev puts in front of each exec handler: its
// arguments are its own (--faults, --class, then the handler's command), not flags.
func newDevHandlerCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:                dev.HandlerCommand,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(dev.RunHandler(args, s.stdin, s.stdout, s.stderr, time.Now))
		},
	}
}
