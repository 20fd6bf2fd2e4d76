package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler/deploy"
)

func runDev(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dev", stderr)
	out := fs.String("o", "out", "output directory: fleetc builds into it, runs Terraform in its terraform/ and keeps dev's files in its dev/")
	endpoint := fs.String("endpoint", os.Getenv(deploy.EnvEndpoint), "a running AWS emulator (also "+deploy.EnvEndpoint+"); default: kumo on "+dev.KumoAddr+", started when installed")
	port := fs.Int("port", 8765, "live page port on 127.0.0.1 (0: any free port)")
	noUI := fs.Bool("no-ui", false, "no live page")
	tfBin := fs.String("terraform-bin", "", "terraform binary (default: terraform on PATH)")
	workerBin := fs.String("worker-bin", "", "fleet-worker binary (default: next to fleetc, then PATH, then ./bin)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "fleetc dev: name exactly one fleet.yaml")
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	err = dev.Run(ctx, dev.Options{Spec: pos[0], Dir: *out, Endpoint: *endpoint, Port: *port, NoUI: *noUI,
		TerraformBin: *tfBin, WorkerBin: *workerBin, Stdout: stdout, Stderr: stderr})
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

// runDevHandler is the hidden command fleetc dev puts in front of each exec handler.
func runDevHandler(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return dev.RunHandler(args, stdin, stdout, stderr, time.Now)
}
