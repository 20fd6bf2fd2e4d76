package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
)

// devPagePort is where `fleetc dev` serves its page and API unless told otherwise, and
// where the action commands look for it.
const devPagePort = 8765

// devAction is one action on a running `fleetc dev` session: one request to its page's API
// (docs/dev.md lists the endpoints), so the terminal and the page do exactly the same.
type devAction struct {
	name, arg, short string
	// durations: the action takes --for (and, for slow, --delay).
	durations, delay bool
	path             func(arg string) string
	body             func(o devActionOptions, arg string) any
	done             func(answer map[string]any, o devActionOptions, arg string) string
}

type devActionOptions struct {
	port       int
	dur, delay time.Duration
	input      string
}

func classPath(suffix string) func(string) string {
	return func(class string) string { return "/api/classes/" + url.PathEscape(class) + "/" + suffix }
}

var devActions = []devAction{
	{name: "kill", arg: "CLASS", short: "Kill -9 a class's worker (it restarts as a pod would)",
		path: classPath("kill"),
		done: func(a map[string]any, _ devActionOptions, c string) string {
			return fmt.Sprintf("killed %s's worker (pid %v); it restarts in %s", c, a["killed"], dev.RestartDelay)
		}},
	{name: "pause", arg: "CLASS", short: "Drain and stop a class's worker until resume",
		path: classPath("pause"),
		body: func(devActionOptions, string) any { return map[string]any{"paused": true} },
		done: func(_ map[string]any, _ devActionOptions, c string) string {
			return fmt.Sprintf("paused %s: its worker drains and stops; its queue keeps the work", c)
		}},
	{name: "resume", arg: "CLASS", short: "Start a paused class's worker again",
		path: classPath("pause"),
		body: func(devActionOptions, string) any { return map[string]any{"paused": false} },
		done: func(_ map[string]any, _ devActionOptions, c string) string { return "resumed " + c }},
	{name: "fail", arg: "CLASS", durations: true, short: "Make a class's handler fail retryably (exit 75) for a while",
		path: classPath("fault"),
		body: func(o devActionOptions, _ string) any {
			return map[string]any{"kind": dev.FaultFail, "seconds": o.dur.Seconds()}
		},
		done: func(_ map[string]any, o devActionOptions, c string) string {
			return fmt.Sprintf("%s's handler fails (exit 75, retryable) for %s", c, o.dur)
		}},
	{name: "slow", arg: "CLASS", durations: true, delay: true, short: "Make a class's handler sleep before each step for a while",
		path: classPath("fault"),
		body: func(o devActionOptions, _ string) any {
			return map[string]any{"kind": dev.FaultSlow, "seconds": o.dur.Seconds(), "delay_seconds": o.delay.Seconds()}
		},
		done: func(_ map[string]any, o devActionOptions, c string) string {
			return fmt.Sprintf("%s's handler sleeps %s before each step for %s", c, o.delay, o.dur)
		}},
	{name: "throttle", durations: true, short: "A 429 wave: the model answers every call 429 ThrottlingException for a while",
		path: func(string) string { return "/api/faults/model-429" },
		body: func(o devActionOptions, _ string) any { return map[string]any{"seconds": o.dur.Seconds()} },
		done: func(_ map[string]any, o devActionOptions, _ string) string {
			return fmt.Sprintf("the model answers every call 429 ThrottlingException for %s", o.dur)
		}},
	{name: "redrive", arg: "CLASS", short: "Move a class's dead letters back to its queue",
		path: classPath("redrive"),
		done: func(a map[string]any, _ devActionOptions, c string) string {
			return fmt.Sprintf("%s's DLQ: moved %v back to its queue, %v failed again, %v left", c, a["moved"], a["failed_again"], a["left"])
		}},
	{name: "start", arg: "WORKFLOW", short: "Start a workflow execution (default input: the generated example)",
		path: func(w string) string { return "/api/workflows/" + url.PathEscape(w) + "/executions" },
		body: func(o devActionOptions, _ string) any {
			if o.input == "" {
				return nil
			}
			return map[string]any{"input": json.RawMessage(o.input)}
		},
		done: func(a map[string]any, _ devActionOptions, w string) string {
			return fmt.Sprintf("started %s: %v (trace id %v)", w, a["execution_arn"], a["trace_id"])
		}},
}

// newDevActionCmds are dev's subcommands, one per action.
func newDevActionCmds(s *streams) []*cobra.Command {
	var cmds []*cobra.Command
	for _, a := range devActions {
		var o devActionOptions
		use := a.name
		if a.arg != "" {
			use += " " + a.arg
		}
		if a.durations {
			use += " --for D"
		}
		if a.delay {
			use += " [--delay D]"
		}
		if a.name == "start" {
			use += " [--input JSON]"
		}
		use += " [--port N]"
		c := &cobra.Command{
			Use:   use,
			Short: a.short,
			Long: fmt.Sprintf(`%s. The live page's action, from a terminal: one request to the API of the
fleetc dev session serving 127.0.0.1:--port (docs/dev.md lists the endpoints).

Exit 0 done, 1 refused or no session answering, 2 usage error.`, a.short),
			Example: "  fleetc dev " + a.name + devActionExample(a),
			RunE: func(_ *cobra.Command, args []string) error {
				return exit(runDevAction(a, args, o, s.stdout, s.stderr))
			},
		}
		c.Flags().IntVar(&o.port, "port", devPagePort, "the port of the fleetc dev session's page on 127.0.0.1")
		if a.durations {
			c.Flags().DurationVar(&o.dur, "for", 0, fmt.Sprintf("how long the fault lasts (e.g. 30s; at most %s)", dev.MaxFault))
		}
		if a.delay {
			c.Flags().DurationVar(&o.delay, "delay", dev.DefaultSlowDelay, "how long the handler sleeps before each step")
		}
		if a.name == "start" {
			c.Flags().StringVar(&o.input, "input", "", "the execution input, as JSON (default: the generated example with a fresh trace_id)")
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func devActionExample(a devAction) string {
	switch {
	case a.arg == "WORKFLOW":
		return " conversation"
	case a.arg == "" && a.durations:
		return " --for 20s"
	case a.durations:
		return " coder --for 30s"
	}
	return " researcher"
}

func runDevAction(a devAction, pos []string, o devActionOptions, stdout, stderr io.Writer) int {
	prog := "fleetc dev " + a.name
	want := 0
	if a.arg != "" {
		want = 1
	}
	if len(pos) != want {
		if want == 0 {
			fmt.Fprintf(stderr, "%s: takes no arguments\n", prog)
		} else {
			fmt.Fprintf(stderr, "%s: name one %s\n", prog, a.arg)
		}
		return exitUsage
	}
	if a.durations && o.dur <= 0 {
		fmt.Fprintf(stderr, "%s: --for D is required (e.g. --for 30s)\n", prog)
		return exitUsage
	}
	if o.input != "" && !json.Valid([]byte(o.input)) {
		fmt.Fprintf(stderr, "%s: --input is not JSON\n", prog)
		return exitUsage
	}
	arg := ""
	if want == 1 {
		arg = pos[0]
	}
	var body io.Reader = http.NoBody
	if a.body != nil {
		if v := a.body(o, arg); v != nil {
			b, err := json.Marshal(v)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", prog, err)
				return exitUsage
			}
			body = bytes.NewReader(b)
		}
	}
	base := devBase(o.port)
	resp, err := devClient.Post(base+a.path(arg), "application/json", body)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, devUnreachable(base, err))
		return exitInvalid
	}
	defer resp.Body.Close()
	answer := map[string]any{}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		fmt.Fprintf(stderr, "%s: %s answered %s, not JSON\n", prog, base, resp.Status)
		return exitInvalid
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "%s: %v\n", prog, answer["error"])
		return exitInvalid
	}
	fmt.Fprintln(stdout, a.done(answer, o, arg))
	return exitOK
}

// devBase is the API of the fleetc dev session serving 127.0.0.1:port.
func devBase(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// devClient asks the session: a minute, as a redrive moves messages one by one and a trace
// reads every DLQ.
var devClient = &http.Client{Timeout: time.Minute}

// devGet asks the session at base for path and returns the body of its 200 answer; any other
// answer is a *devAnswerError with the start of its body.
func devGet(ctx context.Context, base, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := devClient.Do(req)
	if err != nil {
		return nil, devUnreachable(base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, &devAnswerError{base: base, status: resp.Status, body: strings.TrimSpace(string(b))}
	}
	return resp.Body, nil
}

// devAnswerError is a session's answer other than 200 OK.
type devAnswerError struct{ base, status, body string }

func (e *devAnswerError) Error() string { return e.base + " answered " + e.status + ": " + e.body }

// devUnreachable says what a failed request to the session at base means.
func devUnreachable(base string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no fleetc dev session answers on %s (start one with fleetc dev FILE, or pass its --port)", base)
	}
	return err
}
