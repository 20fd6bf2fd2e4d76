package cli

import (
	"encoding/json"
	"fmt"
	"io"
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
	format *formatFlag
}

func newTraceCmd(s *streams) *cobra.Command {
	o := traceOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "trace TRACE_ID FILE [--endpoint URL] [--since 1h] [--format text|json]",
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

Arguments:
  TRACE_ID  the conversation's trace id (detail.trace_id)
  FILE      the fleet.yaml

Exit 0 shown (even when nothing was found), 1 invalid spec or AWS error, 2 usage error.`,
		Example: `  fleetc trace 4bf92f3577b34da6a3ce929d0e0e4736 fleet.yaml
  fleetc trace conv-42 fleet.yaml --since 6h --format json --endpoint http://127.0.0.1:4566`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runTrace(args, o, s.stdout, s.stderr))
		},
	}
	o.register(c)
	c.Flags().StringVar(&o.since, "since", "1h", "how far back: a duration ago (90m, 6h, 2d) or RFC 3339")
	c.Flags().IntVar(&o.limit, "limit", 0, "peek at most this many dead letters per class (default 1000)")
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
	ctx, stop := interruptible()
	defer stop()
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
	if o.format.value == "json" {
		b, _ := json.MarshalIndent(t, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	t.WriteText(stdout)
	return exitOK
}
