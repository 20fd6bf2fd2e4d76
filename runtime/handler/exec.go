package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/contract"
)

// Exit codes with a meaning (sysexits.h). Any other non-zero exit is a crash
// and retryable; EX_TEMPFAIL and EX_UNAVAILABLE ask for a retry; the rest of
// the sysexits range says the input or setup is wrong, which a retry won't fix.
const (
	exitTempFail    = 75
	exitUnavailable = 69
)

// maxOutput caps captured stdout; a larger answer belongs in the claim check.
const maxOutput = 16 << 20

// Exec runs a command per step: the input JSON on stdin, the result JSON on
// stdout. The command runs in its own process group, killed as a whole at the
// deadline so no grandchild outlives its step; on Linux it is also killed
// when the worker dies.
type Exec struct {
	Command []string
	Env     []string // extra environment the worker sets (the model gateway's URLs and token)
	// InheritEnv names worker variables the command also receives (handler.inherit_env).
	InheritEnv []string
	// Secrets are NAME=value pairs the worker read for handler.secrets: the command's
	// environment is the only place they go (never logged, never in a span).
	Secrets []string
	// Stderr, when set, gets every line the command writes to stderr, as it is written,
	// whether the step succeeds or not (as Lambda logs a function's output); at most
	// MaxStderrLines lines of at most MaxStderrLine bytes per step, then one note of what
	// was dropped.
	Stderr StderrFunc
}

// inheritedEnv are the worker's variables every command receives (contract.ExecInheritedEnv).
var inheritedEnv = contract.ExecInheritedEnv

// stepEnvPrefix starts the variables the worker sets per step (FLEET_CLASS, …);
// traceParentEnv carries the step's W3C trace context.
const (
	stepEnvPrefix  = contract.ExecStepEnvPrefix
	traceParentEnv = contract.ExecTraceParentEnv
)

// ReservedEnv is contract.ReservedExecEnv: a handler secret may not take such a name.
func ReservedEnv(name string) bool { return contract.ReservedExecEnv(name) }

// environ is the command's environment: the allow-listed and inherit_env variables of the
// worker (from getenv), then the worker's extras, then the step's.
func (h *Exec) environ(lookup func(string) (string, bool), req Request) []string {
	var env []string
	for _, names := range [][]string{inheritedEnv, h.InheritEnv} {
		for _, name := range names {
			if v, ok := lookup(name); ok {
				env = append(env, name+"="+v)
			}
		}
	}
	env = append(env, h.Env...)
	env = append(env, h.Secrets...)
	env = append(env,
		contract.ExecClassEnv+"="+req.Class,
		contract.ExecKeyEnv+"="+req.Key,
		contract.ExecTraceIDEnv+"="+req.TraceID,
		contract.ExecAttemptEnv+"="+strconv.Itoa(req.Attempt),
	)
	if req.ModelPolicy != "" {
		env = append(env, "FLEET_MODEL_POLICY="+req.ModelPolicy)
	}
	if !req.Deadline.IsZero() {
		env = append(env, "FLEET_DEADLINE="+req.Deadline.UTC().Format(time.RFC3339Nano))
	}
	if req.TraceParent != "" {
		env = append(env, traceParentEnv+"="+req.TraceParent)
	}
	return env
}

// StderrFunc receives one line of a step's handler stderr.
type StderrFunc func(req Request, line string)

// Bounds of the stderr a step logs: one runaway handler must not flood the worker's log.
const (
	MaxStderrLine  = 2048
	MaxStderrLines = 200
)

// NewExec checks the command exists.
func NewExec(command []string) (*Exec, error) {
	if len(command) == 0 {
		return nil, errors.New("exec handler: empty command")
	}
	if _, err := exec.LookPath(command[0]); err != nil {
		return nil, fmt.Errorf("exec handler: %w", err)
	}
	return &Exec{Command: command}, nil
}

// Handle runs the command once.
func (h *Exec) Handle(ctx context.Context, req Request) (json.RawMessage, error) {
	cmd := exec.CommandContext(ctx, h.Command[0], h.Command[1:]...)
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error {
		// Negative pid: the whole group the command leads.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A grandchild holding stdout open must not hang Wait after the kill.
	cmd.WaitDelay = 2 * time.Second
	cmd.Env = h.environ(os.LookupEnv, req)
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	cmd.Stdin = bytes.NewReader(input)
	stdout := limitedBuffer{max: maxOutput}
	var stderr tailBuffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	var lines *lineWriter
	if h.Stderr != nil {
		lines = &lineWriter{emit: func(l string) { h.Stderr(req, l) }}
		cmd.Stderr = io.MultiWriter(&stderr, lines)
		defer lines.close()
	}

	err := cmd.Run()
	if ctx.Err() != nil {
		// Killed at the deadline (or shutdown); the step may fit next time.
		return nil, &retry.Error{Code: wire.Timeout, Message: fmt.Sprintf("%s killed: %v; stderr: %s", h.Command[0], ctx.Err(), stderr.String()), Retryable: true, Err: ctx.Err()}
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, retry.Retryable(wire.ExecFailed, err)
		}
		return nil, classifyExit(ee, stdout.Bytes(), stderr.String())
	}
	if stdout.overflow {
		return nil, &retry.Error{Code: wire.OutputTooLarge, Message: fmt.Sprintf("stdout above %d bytes", maxOutput)}
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if !json.Valid(out) {
		return nil, &retry.Error{Code: wire.BadOutput, Message: "stdout is not one JSON value: " + trunc(string(out), 256)}
	}
	if e := answerFailure(out, "stdout"); e != nil {
		if e.Message == "" {
			e.Message = trunc(stderr.String(), 1024)
		}
		return nil, e
	}
	return json.RawMessage(out), nil
}

func classifyExit(ee *exec.ExitError, stdout []byte, stderr string) error {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &retry.Error{Code: wire.Crashed, Message: fmt.Sprintf("killed by %v; stderr: %s", ws.Signal(), stderr), Retryable: true, Err: ee}
	}
	code := ee.ExitCode()
	if e := parseFailure(stdout); e != nil {
		if e.Message == "" {
			e.Message = stderr
		}
		return e
	}
	e := &retry.Error{Code: wire.Code("Exit" + strconv.Itoa(code)), Message: trunc(stderr, 1024), Err: ee}
	switch {
	case code == exitTempFail || code == exitUnavailable:
		e.Retryable = true
	case code >= 64 && code <= 78:
		e.Retryable = false
	default:
		e.Retryable = true
	}
	return e
}

// answerFailure applies the protocol to an answer that claims success (exit 0, HTTP 2xx):
// {"error":{"code",...}} is the handler's failure whatever the exit, so it is never
// delivered as a result; an "error" object without a code is a malformed failure, refused
// as BadOutput (HandlerOutputInvalid) with the reason rather than passed on. A top-level
// "error" that is not an object (a string, say) is an ordinary result field.
func answerFailure(b []byte, where string) *retry.Error {
	if e := parseFailure(b); e != nil {
		return e
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil
	}
	raw := bytes.TrimSpace(obj["error"])
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return &retry.Error{Code: wire.BadOutput, Message: where + ` has an "error" object without a "code" (the failure form is {"error":{"code","message","retryable","retry_after_seconds"}}): ` + trunc(string(raw), 256)}
}

// parseFailure reads {"error":{"code","message","retryable","retry_after_seconds"}}.
func parseFailure(b []byte) *retry.Error {
	var f failure
	if err := json.Unmarshal(bytes.TrimSpace(b), &f); err != nil || f.Error == nil || f.Error.Code == "" {
		return nil
	}
	e := &retry.Error{Code: wire.Code(f.Error.Code), Message: f.Error.Message, Retryable: true}
	if f.Error.Retryable != nil {
		e.Retryable = *f.Error.Retryable
	}
	if f.Error.RetryAfterSeconds > 0 && e.Retryable {
		// The handler named when to come back (its dependency throttled it): a throttle,
		// held through without spending the class's failure budget.
		e.RetryAfter = retry.CapRetryAfter(float64(f.Error.RetryAfterSeconds) * float64(time.Second))
		e.Throttle = true
	}
	return e
}

// limitedBuffer keeps at most max bytes and notes an overflow. It holds its buffer in a
// field, not embedded: an embedded bytes.Buffer's ReadFrom would be promoted, and io.Copy
// (which os/exec uses) would read the whole stream through it past the limit.
type limitedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

// Write keeps p if it fits and drains it otherwise, so the command never blocks on a full pipe.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.overflow || b.buf.Len()+len(p) > b.max {
		b.overflow = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailBuffer keeps the last 4 KiB of stderr for diagnoses.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(bytes.TrimSpace(t.b)) }

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var _ io.Writer = (*tailBuffer)(nil)

// lineWriter splits a stream into lines for emit, bounded by MaxStderrLine and
// MaxStderrLines. exec copies a child's stderr from one goroutine, so no lock is needed.
type lineWriter struct {
	emit    func(string)
	buf     []byte
	lines   int
	dropped int
	long    bool // the current line is past MaxStderrLine: its rest is skipped
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.line()
			continue
		}
		if len(w.buf) < MaxStderrLine {
			w.buf = append(w.buf, c)
		} else {
			w.long = true
		}
	}
	return len(p), nil
}

func (w *lineWriter) line() {
	l := string(bytes.TrimRight(w.buf, "\r"))
	if w.long {
		l += "…"
	}
	w.buf, w.long = w.buf[:0], false
	if w.lines >= MaxStderrLines {
		w.dropped++
		return
	}
	w.lines++
	w.emit(l)
}

// close emits a last unterminated line and says how many lines were dropped.
func (w *lineWriter) close() {
	if len(w.buf) > 0 || w.long {
		w.line()
	}
	if w.dropped > 0 {
		w.emit(fmt.Sprintf("(%d more stderr lines dropped: at most %d per step are logged)", w.dropped, MaxStderrLines))
	}
}
