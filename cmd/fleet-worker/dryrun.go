package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/worker"
	"github.com/fleetc/fleetc/schemas/contract"
)

// dryRun is `fleet-worker dry-run --config F --input F [--exec JSON] [--timeout D]`, fleetc
// invoke's engine: it builds the class's handler from its runtime config as the worker does
// (--exec replaces it with an exec command: the image's paths mapped to the project's, or
// fleetc dev's stand-in), runs it once on the step input and prints a contract.DryRun:
// the result and the worker's own verdict on it (worker.DryRun). No AWS is called. Exit 0
// judged (whatever the verdict), 2 it could not run.
func dryRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet-worker "+contract.DryRunCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the class's runtime config (out/runtime/<class>.json)")
	input := fs.String("input", "", "a file holding the step's input (the event's detail)")
	execJSON := fs.String("exec", "", "run this exec command (a JSON array) instead of the config's handler")
	timeout := fs.Duration("timeout", 0, "the step's bound, as the worker's deadline (0: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fleet-worker %s: %v\n", contract.DryRunCommand, err)
		return exitUsage
	}
	raw, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fail(err)
	}
	cfg, err := config.Parse(*cfgPath, raw)
	if err != nil {
		return fail(err)
	}
	if *execJSON != "" {
		var cmd []string
		if err := json.Unmarshal([]byte(*execJSON), &cmd); err != nil || len(cmd) == 0 {
			return fail(fmt.Errorf("--exec: want a JSON array of strings: %v", err))
		}
		cfg.Handler.Type, cfg.Handler.Command = config.HandlerExec, cmd
	}
	detail, err := os.ReadFile(*input)
	if err != nil {
		return fail(err)
	}
	h, err := handler.New(cfg, handler.Options{Stderr: func(_ handler.Request, line string) { fmt.Fprintln(stderr, line) }})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	r, err := (&worker.Worker{Cfg: cfg, Handler: h}).DryRun(ctx, detail)
	if err != nil {
		return fail(err)
	}
	out := contract.DryRun{Result: r.Result, Events: []contract.DryRunEvent{}, Code: string(r.Code), Reason: r.Reason, Retryable: r.Retryable}
	for _, e := range r.Events {
		out.Events = append(out.Events, contract.DryRunEvent{Source: e.Source, DetailType: e.DetailType, Detail: e.Detail})
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		return fail(err)
	}
	return exitOK
}
