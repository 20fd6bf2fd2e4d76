package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/schemas/contract"
)

// InvokeOptions say which class `fleetc invoke` runs, on what.
type InvokeOptions struct {
	Spec, Env, Class string
	Detail           []byte // nil: the generated example of the event the class consumes
	Paths            PathMap
	// StandIn answers with dev's stand-in handler instead of the class's own (the only way
	// to invoke an llm class without a model).
	StandIn bool
	// WorkerBin is fleet-worker ("" = next to fleetc, then PATH, then bin/ of the checkout).
	WorkerBin string
	Stderr    io.Writer // the handler's stderr, line by line
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
	contract.DryRun
}

// Invoke runs the class's handler once, on this machine, and holds its result to the class's
// contracts with the worker's own code: `fleet-worker dry-run` (worker.DryRun) on the runtime
// config fleetc build writes, with exec commands' files mapped to the project's (Paths). It
// runs fleet-worker as a process, as fleetc dev does, so that fleetc links no worker runtime.
// No AWS is called.
func Invoke(ctx context.Context, o InvokeOptions) (*Invocation, error) {
	res, err := compiler.Compile(compiler.Input{Path: o.Spec, Env: o.Env, AnyEnv: true, Local: true, Stop: compiler.Checked})
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
	dir, err := os.MkdirTemp("", "fleetc-invoke-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	inv := &Invocation{Detail: detail}
	execCmd, err := invokeCommand(cfg, a, dir, o, inv)
	if err != nil {
		return nil, err
	}
	workerBin, err := findWorker(o.WorkerBin)
	if err != nil {
		return nil, err
	}
	cfgFile, inFile := filepath.Join(dir, "config.json"), filepath.Join(dir, "input.json")
	if err := errors.Join(os.WriteFile(cfgFile, raw, 0o600), os.WriteFile(inFile, detail, 0o600)); err != nil {
		return nil, err
	}
	// The step's own bound, as the worker's deadline.
	args := []string{contract.DryRunCommand, "--config", cfgFile, "--input", inFile, "--timeout", a.StepMax.String()}
	if execCmd != nil {
		b, _ := json.Marshal(execCmd)
		args = append(args, "--exec", string(b))
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, workerBin, args...)
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errb, orDiscard(o.Stderr))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", workerBin, contract.DryRunCommand, err, bytes.TrimSpace(errb.Bytes()))
	}
	if err := json.Unmarshal(out.Bytes(), &inv.DryRun); err != nil {
		return nil, fmt.Errorf("%s %s answered %q: %v", workerBin, contract.DryRunCommand, out.Bytes(), err)
	}
	return inv, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// invokeCommand is the exec command the dry run runs instead of the config's handler (nil:
// the config's own, an http handler as is): an exec handler's, its image paths mapped to the
// project's; or dev's stand-in handler (this fleetc's dev-handler), answering with the
// class's output example. An llm handler needs a model, or the stand-in. It fills inv's Ran
// and Command.
func invokeCommand(cfg *config.Config, a *ir.Agent, dir string, o InvokeOptions, inv *Invocation) ([]string, error) {
	switch {
	case o.StandIn:
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := []string{exe, HandlerCommand, "--class", cfg.Class}
		example, err := OutputExample(a)
		if err != nil {
			return nil, err
		}
		if example != nil {
			path := filepath.Join(dir, "output-example.json")
			if err := os.WriteFile(path, example, 0o600); err != nil {
				return nil, err
			}
			cmd = append(cmd, StandInOutputFlag, path)
		}
		inv.Ran = "the stand-in handler (fleetc dev's)"
		return cmd, nil
	case cfg.Handler.Type == config.HandlerLLM:
		return nil, fmt.Errorf("class %s has an llm handler: it %w (fleetc dev serves a stand-in one); pass --stand-in to run dev's stand-in handler", cfg.Class, ErrNeedsModel)
	case cfg.Handler.Type == config.HandlerExec:
		local, _ := o.Paths.Local(cfg.Handler.Command)
		inv.Ran, inv.Command = CommandLine(local), local
		return local, nil
	}
	inv.Ran = cfg.Handler.URL
	return nil, nil
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
