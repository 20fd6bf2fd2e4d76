package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/recovery"
	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

type traceOptions struct {
	dlqFlags
	since  string
	limit  int
	dev    bool
	port   int
	format *formatFlag
}

func newTraceCmd(s *streams) *cobra.Command {
	o := traceOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "trace TRACE_ID (FILE [--endpoint URL] | --dev [--port N]) [--since 1h] [--format text|json]",
		Short: "Show one conversation's timeline: dead letters, idempotency records, workflow executions",
		Long: `trace shows what happened to the conversation TRACE_ID since --since, oldest first,
from what the fleet keeps after the fact:

  dlq          each class's dead letters whose event carries the trace id, with the
               ERROR_CODE fleet-worker wrote (peeked, never consumed, as fleetc dlq)
  idempotency  the records of the steps that ran (running or done), found by the trace id
               fleet-worker writes on them, or by a key that is the trace id
  execution    each workflow's Step Functions executions whose input carries the trace id,
  history      and every event of their history

A failed step's idempotency record is deleted (so a redrive runs it again): a dead
letter is where a failure shows. Events that completed without a record (no class
consumed them) and the bus archive are not read. The idempotency tables are scanned:
the cost grows with the table, not the trace. See docs/trace.md.

With --dev, the timeline is the one the fleetc dev session on 127.0.0.1:--port shows on
its page: the same reads of its emulator, plus what dev saw itself:

  bus          each event of the conversation on the bus, with its detail
  step         each handler run, with its input and its result
  worker       each verdict the workers logged (finished, released, dead-lettered)

Arguments:
  TRACE_ID  the conversation's trace id (detail.trace_id)
  FILE      the fleet.yaml (not with --dev)

Exit 0 shown (even when nothing was found), 1 invalid spec or AWS error, 2 usage error.`,
		Example: `  fleetc trace 4bf92f3577b34da6a3ce929d0e0e4736 fleet.yaml
  fleetc trace conv-42 fleet.yaml --since 6h --format json --endpoint http://127.0.0.1:4566
  fleetc trace 4bf92f3577b34da6a3ce929d0e0e4736 --dev`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runTrace(args, o, s.stdout, s.stderr))
		},
	}
	o.register(c)
	c.Flags().StringVar(&o.since, "since", "1h", "how far back: a duration ago (90m, 6h, 2d) or RFC 3339")
	c.Flags().IntVar(&o.limit, "limit", 0, "peek at most this many dead letters per class (default 1000)")
	c.Flags().BoolVar(&o.dev, "dev", false, "read the timeline of the fleetc dev session on 127.0.0.1:--port (its events, steps and verdicts too)")
	c.Flags().IntVar(&o.port, "port", devPagePort, "with --dev: the port of the session's page")
	addFormat(c, o.format, "")
	return c
}

func runTrace(pos []string, o traceOptions, stdout, stderr io.Writer) int {
	const cmd = "trace"
	since, err := recovery.ParseTime(o.since, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: --since: %v\n", cmd, err)
		return exitUsage
	}
	if o.dev != (len(pos) == 1) {
		fmt.Fprintf(stderr, "fleetc %s: name TRACE_ID and FILE, or TRACE_ID and --dev\n", cmd)
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	if o.dev {
		t, err := devTrace(ctx, o.port, pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return exitInvalid
		}
		return writeTrace(t.After(since), o, stdout)
	}
	f, ts, cfg, code := o.connect(ctx, cmd, pos[1], "", stderr)
	if f == nil {
		return code
	}
	src := trace.Sources{SQS: awsconfig.SQS(cfg), DDB: dynamo(cfg, o.endpoint), Targets: ts, Machines: map[string]string{}, Limit: o.limit}
	var notes []string
	if len(f.Workflows) > 0 {
		c := awsconfig.SFN(cfg)
		src.SFN = c
		for _, w := range f.Workflows {
			if w.IsExpress() {
				notes = append(notes, fmt.Sprintf("workflow %s not read: Step Functions keeps no history of express executions", w.Name))
				continue
			}
			arn, err := recovery.StateMachineARN(ctx, c, w)
			if err != nil {
				notes = append(notes, fmt.Sprintf("workflow %s not read: %v", w.Name, err))
				continue
			}
			src.Machines[w.Name] = arn
		}
	}
	t, err := trace.Read(ctx, src, pos[0], since)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	t.Notes = append(t.Notes, notes...)
	t.Sort()
	return writeTrace(t, o, stdout)
}

// writeTrace prints the timeline in --format.
func writeTrace(t *trace.Timeline, o traceOptions, stdout io.Writer) int {
	if o.format.value == "json" {
		b, _ := json.MarshalIndent(t, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	t.WriteText(stdout)
	return exitOK
}

// devTrace asks the fleetc dev session on 127.0.0.1:port for the conversation's timeline
// (GET /api/trace/{trace_id}, what its page shows).
func devTrace(ctx context.Context, port int, traceID string) (*trace.Timeline, error) {
	base := devBase(port)
	body, err := devGet(ctx, base, "/api/trace/"+url.PathEscape(traceID))
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var t trace.Timeline
	if err := json.NewDecoder(body).Decode(&t); err != nil {
		return nil, fmt.Errorf("%s: the timeline: %w", base, err)
	}
	return &t, nil
}
