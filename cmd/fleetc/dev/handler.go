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
	"strings"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/retry"
)

// HandlerCommand is the hidden fleetc subcommand `fleetc dev` puts in front of every exec
// handler of its workers: it applies the faults the live page set for the class, then runs
// the class's own command, or a stand-in when that command does not exist on this machine.
const HandlerCommand = "dev-handler"

// Fault kinds a handler can be given for a while.
type FaultKind string

const (
	FaultFail FaultKind = "fail" // exit 75 (EX_TEMPFAIL): retryable, so the queue retries it
	FaultSlow FaultKind = "slow" // sleep Delay before the step runs
)

// Fault is one class's active fault.
type Fault struct {
	Kind  FaultKind     `json:"kind"`
	Until time.Time     `json:"until"`
	Delay time.Duration `json:"delay,omitempty"`
}

// Faults are the active faults by class, shared with the handlers through one file.
type Faults map[string]Fault

// ReadFaults reads the faults file; a missing file is no fault.
func ReadFaults(path string) (Faults, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Faults{}, nil
	}
	if err != nil {
		return nil, err
	}
	f := Faults{}
	return f, json.Unmarshal(b, &f)
}

// WriteFaults replaces the faults file atomically, so a handler never reads half of it.
func WriteFaults(path string, f Faults) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".faults-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// StandInOutputFlag names the file holding the example of the class's output schema, which
// the stand-in answers with.
const StandInOutputFlag = "--output"

// OutputExample is the stand-in's answer for a class that declares its output: the example
// generated from the output schema as the event examples are, so the worker's output check
// (and the completion events filled from it) accept it. nil when the class declares none.
func OutputExample(a *ir.Agent) (json.RawMessage, error) {
	if a.Output == nil {
		return nil, nil
	}
	v, err := eventschema.ExampleOf(a.Output)
	if err != nil {
		return nil, fmt.Errorf("class %s: no example of its output schema: %w", a.Name, err)
	}
	return json.Marshal(v)
}

// modelCallTimeout bounds the stand-in's model call (the gateway's own retries included).
const modelCallTimeout = 2 * time.Minute

// stdinLimit bounds what the stand-in reads: SQS messages are at most 1 MiB (256 KiB
// before the claim check).
const stdinLimit = 4 << 20

// RunHandler is `fleetc dev-handler --faults F --class C [--output F] [--] COMMAND...`: it
// returns the process exit code. With no COMMAND, or one not found, it answers as a
// stand-in: the example of the class's output schema (--output, a file holding
// OutputExample's value) when the class declares one, else the step's input back under
// "echo", which any completion contract with an object result accepts.
func RunHandler(args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	var faultsPath, class, outputPath, stepsPath string
	var secrets []string
	for len(args) > 0 {
		switch {
		case args[0] == "--faults" && len(args) > 1:
			faultsPath, args = args[1], args[2:]
		case args[0] == "--class" && len(args) > 1:
			class, args = args[1], args[2:]
		case args[0] == StandInOutputFlag && len(args) > 1:
			outputPath, args = args[1], args[2:]
		case args[0] == StepsFlag && len(args) > 1:
			stepsPath, args = args[1], args[2:]
		case args[0] == SecretFlag && len(args) > 1:
			secrets, args = append(secrets, args[1]), args[2:]
		case args[0] == "--":
			args = args[1:]
			goto run
		default:
			goto run
		}
	}
run:
	if stepsPath == "" {
		code, _ := runStep(class, faultsPath, outputPath, args, stdin, stdout, stderr, now)
		return code
	}
	// Record what the worker gave the handler and what it answered, for dev's page and
	// --verbose: a copy of each stream, bounded, secrets redacted.
	rec := &StepRecord{Start: now(), Class: class}
	stepEnv(os.Getenv, rec)
	var in, out capture
	code, ran := runStep(class, faultsPath, outputPath, args, io.TeeReader(stdin, &in), io.MultiWriter(stdout, &out), stderr, now)
	_, _ = io.Copy(&in, stdin) // what the handler left unread was its input too
	rec.Exit, rec.Ran, rec.DurationMS = code, ran, now().Sub(rec.Start).Milliseconds()
	r := newRedactor(secrets, os.Getenv)
	rec.Input, rec.Result = in.payload(trace.PayloadInput, r), out.payload(trace.PayloadResult, r)
	if err := appendStep(stepsPath, rec); err != nil {
		fmt.Fprintf(stderr, "dev-handler: recording the step: %v\n", err)
	}
	return code
}

// runStep runs one step (faults first, then the command or the stand-in) and says what ran.
func runStep(class, faultsPath, outputPath string, args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) (int, string) {
	if faultsPath != "" {
		fs, err := ReadFaults(faultsPath)
		if err != nil {
			fmt.Fprintf(stderr, "dev-handler: faults file: %v\n", err)
		}
		if f, ok := fs[class]; ok && now().Before(f.Until) {
			switch f.Kind {
			case FaultFail:
				fmt.Fprintf(stderr, "dev fault: %s fails until %s (exit %d, retryable)\n", class, f.Until.UTC().Format(time.TimeOnly), exitRetryable)
				return exitRetryable, "the page's fail fault"
			case FaultSlow:
				fmt.Fprintf(stderr, "dev fault: %s slowed by %s until %s\n", class, f.Delay, f.Until.UTC().Format(time.TimeOnly))
				time.Sleep(f.Delay)
			}
		}
	}
	if len(args) > 0 {
		if _, err := exec.LookPath(args[0]); err == nil {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
			ran := strings.Join(args, " ")
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode(), ran
				}
				fmt.Fprintf(stderr, "dev-handler: %v\n", err)
				return exitRetryable, ran
			}
			return 0, ran
		}
	}
	const ran = "the stand-in"
	in, err := io.ReadAll(io.LimitReader(stdin, stdinLimit))
	if err != nil {
		fmt.Fprintf(stderr, "dev-handler: reading the step: %v\n", err)
		return exitRetryable, ran
	}
	what := "no command"
	if len(args) > 0 {
		what = strings.Join(args, " ") + " is not on this machine"
	}
	var example json.RawMessage
	if outputPath != "" {
		if example, err = os.ReadFile(outputPath); err != nil {
			fmt.Fprintf(stderr, "dev-handler: the class's output example: %v\n", err)
			return exitRetryable, ran
		}
		fmt.Fprintf(stderr, "stand-in handler for %s (%s): answering with the example of the class's output schema\n", class, what)
	} else {
		fmt.Fprintf(stderr, "stand-in handler for %s (%s): echoing the step's input\n", class, what)
	}
	var v any
	if json.Unmarshal(in, &v) != nil {
		v = string(in)
	}
	res := map[string]any{"echo": v, "stand_in": true}
	// A class with a model policy: one call through the worker's model gateway, as a real
	// handler's, so a 429 wave from the page reaches the step.
	if base, token := gatewayEnv(); base != "" {
		ctx, cancel := context.WithTimeout(context.Background(), modelCallTimeout)
		text, err := askModel(ctx, base, token, string(in))
		cancel()
		if err != nil {
			return modelFailure(class, err, stdout, stderr), ran
		}
		res["model"] = text
	}
	if example != nil {
		// The class's contract decides the shape: nothing is added to the example.
		_, _ = stdout.Write(append(bytes.TrimSpace(example), '\n'))
		return 0, ran
	}
	out, _ := json.Marshal(res)
	_, _ = stdout.Write(append(out, '\n'))
	return 0, ran
}

// Exit codes of the stand-in handler (runtime/handler reads the exit code when stdout holds
// no failure object): 75 (EX_TEMPFAIL) is retryable.
const (
	exitRetryable = 75
	exitFailed    = 1
)

// handlerFailure is the object an exec handler prints on stdout to classify its failure
// (runtime/handler's contract: {"error":{"code","message","retryable","retry_after_seconds"}}).
type handlerFailure struct {
	Error handlerError `json:"error"`
}

type handlerError struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	Retryable         bool   `json:"retryable"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
}

// modelFailure ends a step whose model call failed, saying what the gateway said: a throttle
// as a failure object naming when to come back (retry_after_seconds, at least 1 so the worker
// reads it as a delay), a final answer (a spend limit, a rejected request) as not retryable,
// anything else (an outage without retry-after, no answer at all) as exit 75, retryable.
func modelFailure(class string, err error, stdout, stderr io.Writer) int {
	var re *retry.Error
	if !errors.As(err, &re) || (re.Retryable && !re.Throttle) {
		fmt.Fprintf(stderr, "stand-in handler for %s: %v: exit %d (retryable)\n", class, err, exitRetryable)
		return exitRetryable
	}
	f := handlerError{Code: string(re.Code), Message: re.Error(), Retryable: re.Retryable}
	code := exitFailed
	if re.Throttle {
		f.RetryAfterSeconds = max(1, int((re.RetryAfter+time.Second-1)/time.Second))
		code = exitRetryable
		fmt.Fprintf(stderr, "stand-in handler for %s: %v: throttled, retry after %ds\n", class, err, f.RetryAfterSeconds)
	} else {
		fmt.Fprintf(stderr, "stand-in handler for %s: %v: not retryable\n", class, err)
	}
	b, _ := json.Marshal(handlerFailure{Error: f})
	_, _ = stdout.Write(append(b, '\n'))
	return code
}
