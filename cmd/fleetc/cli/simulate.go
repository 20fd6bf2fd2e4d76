package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/simulate"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/spec"
)

// simulateFlags are fleetc simulate's options.
type simulateFlags struct {
	format   *formatFlag
	duration optDuration
	scenario string
	seed     uint64
}

func newSimulateCmd(s *streams) *cobra.Command {
	o := &simulateFlags{format: newFormat("text", "text", "json", "svg"), duration: optDuration{d: time.Hour}}
	c := &cobra.Command{
		Use:   "simulate FILE [--duration 1h] [--scenario S.yaml] [--seed N] [--format text|json|svg]",
		Short: "Predict the fleet's queues, in-flight work, latency and dead letters under traffic and faults",
		Long: `Simulate runs a deterministic discrete-event simulation of the fleet: Poisson arrivals from
the spec's traffic, each class's queue and receive counts, its workers with per_replica
concurrency and KEDA or Lambda scaling, step durations fitted to step.p95 and step.max, model
policies with max_in_flight and cooldowns, and fleet-worker's fault handling (throttles held
in one receive, full-jitter retries, step windows, dead letters). A scenario file lists
faults in time (a 429 wave on a policy, a class outage, a traffic spike) and may override
the traffic. The same FILE, scenario and seed always print the same bytes. See
docs/simulate.md.

Arguments:
  FILE  the fleet.yaml to simulate`,
		Example: `  fleetc simulate fleet.yaml
  fleetc simulate fleet.yaml --scenario wave.yaml --duration 30m
  fleetc simulate fleet.yaml --scenario wave.yaml --format svg > wave.svg`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runSimulate(args, s.env, o, s.stdout, s.stderr))
		},
	}
	addFormat(c, o.format, "")
	fl := c.Flags()
	fl.Var(&o.duration, "duration", "simulated time, e.g. 30m or 2h")
	fl.StringVar(&o.scenario, "scenario", "", "scenario YAML: faults in time and traffic overrides")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of every random draw")
	return c
}

// runSimulate loads the fleet and the scenario, runs the simulation and prints it.
func runSimulate(files []string, env string, o *simulateFlags, stdout, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc simulate: name exactly one fleet.yaml")
		return exitUsage
	}
	_, fleet, ds := compiler.LoadEnv(files[0], env)
	if fleet == nil || ds.HasErrors() {
		render(stderr, "text", ds, judge(ds, false))
		return exitInvalid
	}
	opts := simulate.Options{Duration: o.duration.d, Seed: o.seed}
	if o.scenario != "" {
		src, err := spec.ReadFile(o.scenario)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc simulate: %v\n", err)
			return exitUsage
		}
		if opts.Scenario, err = simulate.ParseScenario(o.scenario, src, fleet); err != nil {
			fmt.Fprintln(stderr, err)
			return exitInvalid
		}
	}
	r, err := simulate.Run(fleet, opts)
	if err == nil {
		switch o.format.value {
		case "json":
			err = r.WriteJSON(stdout)
		case "svg":
			err = r.WriteSVG(stdout)
		default:
			err = r.WriteText(stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc simulate: %v\n", err)
		return exitUsage
	}
	return exitOK
}
