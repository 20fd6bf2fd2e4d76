package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/worker"
)

// InvokeOptions say which class `fleetc invoke` runs, on what.
type InvokeOptions struct {
	Spec, Env, Class string
	Detail           []byte // nil: the generated example of the event the class consumes
	Paths            PathMap
	// StandIn answers with dev's stand-in handler instead of the class's own (the only way
	// to invoke an llm class without a model).
	StandIn bool
	Stderr  io.Writer // the handler's stderr, line by line
}

// ErrNeedsModel is an llm class invoked without --stand-in: it needs a model.
var ErrNeedsModel = errors.New("needs a model")

// Invocation is what one invoke ran and what came of it.
type Invocation struct {
	Ran string // the command line, the URL, or the stand-in
	// Command is the exec command that ran (nil for the others), its files mapped to the
	// project's.
	Command []string
	Detail  json.RawMessage // the step's input
	worker.DryRun
}

// Invoke runs the class's handler once, on this machine, and holds its result to the class's
// contracts with the worker's own code (runtime/worker DryRun): the runtime config fleetc
// build writes, the handler fleet-worker would build from it (exec commands through Paths),
// the output schema and the completion events' schemas. No AWS is called.
func Invoke(ctx context.Context, o InvokeOptions) (*Invocation, error) {
	res, err := compiler.Compile(compiler.Input{Path: o.Spec, Env: compiler.ContractsEnv(o.Spec, o.Env), Local: true, Stop: compiler.Checked})
	if err != nil {
		return nil, err
	}
	f, ds := res.Fleet, res.Diagnostics
	if f == nil || ds.HasErrors() {
		return nil, &deploy.BuildError{Diagnostics: ds}
	}
	i := slices.IndexFunc(f.Agents, func(a *ir.Agent) bool { return a.Name == o.Class })
	if i < 0 {
		var names []string
		for _, a := range f.Agents {
			names = append(names, a.Name)
		}
		return nil, fmt.Errorf("no class %q in fleet %s; its classes: %v", o.Class, f.Name, names)
	}
	a := f.Agents[i]
	detail, err := stepInput(f, a, o.Detail)
	if err != nil {
		return nil, err
	}
	raw, err := runtimeconfig.Render(f, a)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(a.ConfigPath, raw)
	if err != nil {
		return nil, err
	}
	example, err := OutputExample(a)
	if err != nil {
		return nil, err
	}
	h, ran, err := invokeHandler(cfg, example, o)
	if err != nil {
		return nil, err
	}
	var command []string
	if !o.StandIn && cfg.Handler.Type == config.HandlerExec {
		command = cfg.Handler.Command
	}
	// The step's own bound, as the worker's deadline.
	ctx, cancel := context.WithTimeout(ctx, a.StepMax)
	defer cancel()
	r, err := (&worker.Worker{Cfg: cfg, Handler: h}).DryRun(ctx, detail)
	return &Invocation{Ran: ran, Command: command, Detail: detail, DryRun: r}, err
}

// stepInput is the detail the handler gets: the consumed event's, checked against its
// generated schema as fleetc send checks it, or the given one for a class no event feeds
// (a workflow's task).
func stepInput(f *ir.Fleet, a *ir.Agent, detail []byte) (json.RawMessage, error) {
	if a.Consumes == nil || a.Consumes.Event == nil {
		if detail == nil {
			return nil, fmt.Errorf("class %s consumes no event (a workflow's steps feed it): pass --detail", a.Name)
		}
		if !json.Valid(detail) {
			return nil, errors.New("--detail is not JSON")
		}
		return detail, nil
	}
	cs, err := Contracts(f)
	if err != nil {
		return nil, err
	}
	ev, err := NewEvent(f, cs, a.Consumes.Event.DetailType, detail)
	if err != nil {
		return nil, err
	}
	return ev.Detail, nil
}

// invokeHandler builds the handler fleet-worker would, from the class's runtime config: an
// exec command with the image's paths mapped to the project's, an http handler as is, an llm
// handler only as the stand-in.
func invokeHandler(cfg *config.Config, example json.RawMessage, o InvokeOptions) (handler.Handler, string, error) {
	if o.StandIn {
		return standIn(cfg.Class, example), "the stand-in handler (fleetc dev's)", nil
	}
	switch cfg.Handler.Type {
	case config.HandlerLLM:
		return nil, "", fmt.Errorf("class %s has an llm handler: it %w (fleetc dev serves a stand-in one); pass --stand-in to run dev's stand-in handler", cfg.Class, ErrNeedsModel)
	case config.HandlerExec:
		cfg.Handler.Command, _ = o.Paths.Local(cfg.Handler.Command)
	}
	h, err := handler.New(cfg, handler.Options{Stderr: func(_ handler.Request, line string) {
		if o.Stderr != nil {
			fmt.Fprintln(o.Stderr, line)
		}
	}})
	if err != nil {
		return nil, "", err
	}
	ran := cfg.Handler.URL
	if cfg.Handler.Type == config.HandlerExec {
		ran = CommandLine(cfg.Handler.Command)
	}
	return h, ran, nil
}

// standIn is dev's stand-in handler (RunHandler with no command), in this process.
func standIn(class string, example json.RawMessage) handler.Handler {
	return handler.Func(func(_ context.Context, req handler.Request) (json.RawMessage, error) {
		args := []string{"--class", class}
		if example != nil {
			f, err := os.CreateTemp("", "fleetc-invoke-output-*.json")
			if err != nil {
				return nil, err
			}
			defer os.Remove(f.Name())
			_, err = f.Write(example)
			if err = errors.Join(err, f.Close()); err != nil {
				return nil, err
			}
			args = append(args, StandInOutputFlag, f.Name())
		}
		var out, errb bytes.Buffer
		if code := RunHandler(args, bytes.NewReader(req.Input), &out, &errb, time.Now); code != 0 {
			return nil, fmt.Errorf("stand-in handler: exit %d: %s", code, errb.String())
		}
		return json.RawMessage(bytes.TrimSpace(out.Bytes())), nil
	})
}
