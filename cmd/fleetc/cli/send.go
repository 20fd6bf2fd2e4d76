package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// sendAttempts is how often `fleetc send` tries PutEvents: a person is waiting, so the
// SDK's standard retries (with jitter) are the right layer here, unlike in the workers.
const sendAttempts = 3

// sendOptions are send's flags.
type sendOptions struct {
	detailFlags
	endpoint string
}

// detailFlags are --detail, --detail-file and --example: how send and invoke take an event's
// detail.
type detailFlags struct {
	detail, detailFile string
	example            bool
}

// register adds the three flags, --detail and --example described as the command says.
func (d *detailFlags) register(c *cobra.Command, detailHelp, exampleHelp string) {
	c.Flags().StringVar(&d.detail, "detail", "", detailHelp)
	c.Flags().StringVar(&d.detailFile, "detail-file", "", "read the detail from this file (- for stdin)")
	c.Flags().BoolVar(&d.example, "example", false, exampleHelp)
}

// one reports whether exactly one of the three was given.
func (d detailFlags) one() bool {
	given := 0
	for _, b := range []bool{d.detail != "", d.detailFile != "", d.example} {
		if b {
			given++
		}
	}
	return given == 1
}

// read is the given detail's bytes (nil with --example).
func (d detailFlags) read(stdin io.Reader) ([]byte, error) {
	switch {
	case d.detail != "":
		return []byte(d.detail), nil
	case d.detailFile == "-":
		return io.ReadAll(stdin)
	case d.detailFile != "":
		return os.ReadFile(d.detailFile)
	}
	return nil, nil
}

func newSendCmd(s *streams) *cobra.Command {
	var o sendOptions
	c := &cobra.Command{
		Use:   "send FILE EVENT (--detail JSON | --detail-file F | --example) [--endpoint URL]",
		Short: "Put one event on the fleet's bus, checked against its generated schema",
		Long: `Send checks the detail against the event's generated schema (schemas/EVENT.json, the
envelope fleetc build writes), refusing it with every violation, then puts it on the fleet's
bus with the event's source and detail-type, and prints the event id and trace id. A detail
without trace_id, when the schema declares one, gets a fresh one.

Without --endpoint it goes to AWS through the SDK's default credential chain, in the fleet's
region (AWS_REGION wins).

Arguments:
  FILE   the fleet.yaml
  EVENT  the event's detail-type

Exit 0 sent, 1 refused or failed, 2 usage error.`,
		Example: `  fleetc send fleet.yaml agent.step.requested --example --endpoint http://127.0.0.1:4566
  fleetc send fleet.yaml agent.step.requested --detail '{"conversation_id":"c1","step":1,"agent_class":"coder"}'`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runSend(args, s.env, o, s.stdin, s.stdout, s.stderr))
		},
	}
	o.register(c, "the event's detail, as JSON", "send the generated example detail (with a fresh trace_id)")
	endpointFlag(c, &o.endpoint)
	return c
}

func runSend(pos []string, env string, o sendOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "fleetc send: name one fleet.yaml and one event (detail-type)")
		return exitUsage
	}
	if !o.one() {
		fmt.Fprintln(stderr, "fleetc send: pass exactly one of --detail JSON, --detail-file F or --example")
		return exitUsage
	}
	f, code := loadFleet("send", pos[0], env, stderr)
	if f == nil {
		return code
	}
	body, err := o.read(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitUsage
	}
	cs, err := dev.Contracts(f)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	ev, err := dev.NewEvent(f, cs, pos[1], body)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\nNothing was sent.\n", err)
		return exitInvalid
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: region(f), Endpoint: o.endpoint, MaxAttempts: sendAttempts})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	id, err := dev.Put(ctx, awsconfig.EventBridge(cfg), ev)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "sent %s (source %s) to bus %s\n  event id: %s\n  trace id: %s\n", ev.DetailType, ev.Source, ev.Bus, id, orNone(ev.TraceID))
	warnUnconsumed(f, ev, stderr)
	return exitOK
}

// warnUnconsumed says when no class's rule takes the event as sent, which is no error (a
// bus may carry events for others) but leaves a first try waiting for a step that never
// runs: with the match fields each consuming class needs.
func warnUnconsumed(f *ir.Fleet, ev *dev.Event, stderr io.Writer) {
	classes := f.ConsumersOf(ev.DetailType, ev.Source)
	if len(classes) == 0 {
		fmt.Fprintf(stderr, "fleetc send: warning: no class consumes %s in fleet %s; nothing will run it\n", ev.DetailType, f.Name)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(ev.Detail))
	dec.UseNumber()
	var detail map[string]any
	_ = dec.Decode(&detail) // NewEvent checked it is one object
	for _, a := range classes {
		if a.Consumes.Matches(detail) {
			return
		}
	}
	fmt.Fprintf(stderr, "fleetc send: warning: no class consumes this %s: the detail fails the match of every class consuming it; nothing will run it. Set:\n", ev.DetailType)
	for _, a := range classes {
		var sets []string
		for _, m := range a.Consumes.Match {
			if !m.Holds(detail) {
				vals, _ := json.Marshal(m.Values)
				sets = append(sets, fmt.Sprintf("%s to one of %s", m.Field, vals))
			}
		}
		fmt.Fprintf(stderr, "  for class %s (agents.%s.consumes.match): %s\n", a.Name, a.Name, strings.Join(sets, ", "))
	}
	fmt.Fprintln(stderr, "and send with --detail or --detail-file.")
}

// region is the fleet's region unless the environment names one (AWS_REGION wins, as in
// every AWS tool).
func region(f *ir.Fleet) string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return f.Region
}

func orNone(s string) string {
	if s == "" {
		return "(none: the event has no trace_id field)"
	}
	return s
}

// loadFleet loads and checks a spec, printing its diagnostics; nil with the exit code when
// it has errors.
func loadFleet(cmd, path, env string, stderr io.Writer) (*ir.Fleet, int) {
	_, f, ds := compiler.LoadEnv(path, env)
	if ds.HasErrors() || f == nil {
		render(stderr, "text", ds, judge(ds, false))
		fmt.Fprintf(stderr, "fleetc %s: %s does not load\n", cmd, path)
		return nil, exitInvalid
	}
	return f, exitOK
}

// endpointFlag registers --endpoint for a command that calls AWS APIs directly (send, dlq,
// replay, redrive-execution): one flag, one default, one help text, and plan's loopback
// check before the command runs. These commands sign with the caller's own credentials, so
// unlike plan they have no --force: another host would receive real signed requests.
func endpointFlag(c *cobra.Command, p *string) {
	c.Flags().StringVar(p, "endpoint", os.Getenv(deploy.EnvEndpoint), "local AWS emulator URL (also "+deploy.EnvEndpoint+"); default: AWS")
	run := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if err := deploy.LoopbackEndpoint(*p); err != nil {
			return fmt.Errorf("%w: %s signs with your AWS credentials", err, cmd.CommandPath())
		}
		if run != nil {
			return run(cmd, args)
		}
		return nil
	}
}
