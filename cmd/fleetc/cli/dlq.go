package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/wire"
)

// dlqFlags are the flags dlq and dlq redrive share.
type dlqFlags struct {
	endpoint string
	env      string // the root's --env
}

func (d *dlqFlags) register(c *cobra.Command) {
	endpointFlag(c, &d.endpoint)
}

// connect loads the fleet, resolves the classes' queues and makes the AWS config.
func (d *dlqFlags) connect(ctx context.Context, cmd, file, class string, stderr io.Writer) (*ir.Fleet, []*dlq.Target, aws.Config, int) {
	f, code := loadFleet(cmd, file, d.env, stderr)
	if f == nil {
		return nil, nil, aws.Config{}, code
	}
	ts, err := dlq.Targets(f, class)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return nil, nil, aws.Config{}, exitInvalid
	}
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: region(f), Endpoint: d.endpoint, MaxAttempts: sendAttempts})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return nil, nil, aws.Config{}, exitInvalid
	}
	api := awsconfig.SQS(cfg)
	for _, t := range ts {
		if err := t.Resolve(ctx, api); err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return nil, nil, aws.Config{}, exitInvalid
		}
	}
	return f, ts, cfg, exitOK
}

type dlqOptions struct {
	dlqFlags
	limit  int
	format *formatFlag
}

func newDLQCmd(s *streams) *cobra.Command {
	o := dlqOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "dlq FILE [CLASS] [--endpoint URL] [--format text|json]",
		Short: "Show each class's dead letters grouped by ERROR_CODE, without consuming them",
		Long: `For each class (or CLASS), dlq shows its DLQ's depth, the age of its oldest dead letter,
and the dead letters grouped by the ERROR_CODE fleet-worker wrote on them: count, first and
last seen, and the latest one as a sample (ERROR_MESSAGE, RETRY_ATTEMPTS, body).

Messages are peeked, never consumed: each is received with a 30 s visibility and made
visible again when the peek ends. The output says when the peek could not see every
message (some in flight, --limit reached, a FIFO group behind its first message).

Arguments:
  FILE   the fleet.yaml
  CLASS  optional: one agent class

Exit 0 shown, 1 invalid spec or AWS error, 2 usage error.`,
		Example: `  fleetc dlq fleet.yaml
  fleetc dlq fleet.yaml researcher --format json --endpoint http://127.0.0.1:4566`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runDLQ(args, o, s.stdout, s.stderr))
		},
	}
	o.register(c)
	c.Flags().IntVar(&o.limit, "limit", dlq.DefaultLimit, "peek at most this many messages per class")
	addFormat(c, o.format, "")
	c.AddCommand(newDLQRedriveCmd(s))
	return c
}

func runDLQ(pos []string, o dlqOptions, stdout, stderr io.Writer) int {
	class := ""
	if len(pos) == 2 {
		class = pos[1]
	}
	ctx, stop := interruptible()
	defer stop()
	f, ts, cfg, code := o.connect(ctx, "dlq", pos[0], class, stderr)
	if f == nil {
		return code
	}
	r, err := dlq.Inspect(ctx, awsconfig.SQS(cfg), f.Name, ts, o.limit, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dlq: %v\n", err)
		return exitInvalid
	}
	if o.format.value == "json" {
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	r.WriteText(stdout)
	return exitOK
}

type redriveOptions struct {
	dlqFlags
	code          string
	max, canary   int
	rate          float64
	canaryTimeout time.Duration
	auto          bool
}

func newDLQRedriveCmd(s *streams) *cobra.Command {
	var o redriveOptions
	c := &cobra.Command{
		Use:   "redrive FILE CLASS [--code CODE] [--max N] [--rate R] [--canary N] [--auto-approve] [--endpoint URL]",
		Short: "Move a class's dead letters back to its queue, optionally filtered and canaried",
		Long: `Redrive moves CLASS's dead letters back to the class queue, after showing what it will
move and asking for yes (unless --auto-approve).

Without --code, --max or --canary it uses SQS's managed redrive (StartMessageMoveTask,
progress from ListMessageMoveTasks, CancelMessageMoveTask on Ctrl-C). With them, or where
the endpoint has no managed redrive (kumo), it moves one message at a time at --rate per
second: the copy is sent to the class queue first (FIFO: the letter's group and a
deduplication id derived from the dead letter's id) and only then deleted from the DLQ, so
an interruption at any point loses nothing (at worst the letter is in both places, and the
worker's idempotency record answers the duplicate). The worker's ERROR_CODE, ERROR_MESSAGE
and RETRY_ATTEMPTS stay behind: the message starts over.

--canary N moves N first and waits for their outcome: completed (the idempotency record is
done) or dead-lettered again. Only when all N completed does it offer to move the rest.

Arguments:
  FILE   the fleet.yaml
  CLASS  the agent class whose DLQ to redrive

Exit 0 moved, 1 refused, cancelled, canary failed or AWS error, 2 usage error.`,
		Example: `  fleetc dlq redrive fleet.yaml researcher
  fleetc dlq redrive fleet.yaml researcher --code ModelUnavailable --canary 2 --rate 5`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runRedrive(args, o, s.stdin, s.stdout, s.stderr))
		},
	}
	o.register(c)
	c.Flags().StringVar(&o.code, "code", "", "move only dead letters of this ERROR_CODE")
	c.Flags().IntVar(&o.max, "max", 0, "move at most N dead letters (0: all)")
	c.Flags().Float64Var(&o.rate, "rate", 0, fmt.Sprintf("messages per second (default: SQS decides for a managed redrive, %g one at a time)", dlq.DefaultRate))
	c.Flags().IntVar(&o.canary, "canary", 0, "move N first, wait for their outcome and stop unless all completed")
	c.Flags().DurationVar(&o.canaryTimeout, "canary-timeout", 10*time.Minute, "how long to wait for the canaries' outcome")
	c.Flags().BoolVar(&o.auto, "auto-approve", false, "move without asking for yes")
	return c
}

// redriveCmd names dlq redrive in its messages.
const redriveCmd = "dlq redrive"

func runRedrive(pos []string, o redriveOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	if o.max < 0 || o.canary < 0 || o.rate < 0 {
		fmt.Fprintf(stderr, "fleetc %s: --max, --canary and --rate must not be negative\n", redriveCmd)
		return exitUsage
	}
	if !o.auto && !isTerminal(stdin) {
		fmt.Fprintf(stderr, "fleetc %s: no terminal to confirm on: review with fleetc dlq, then pass --auto-approve\n", redriveCmd)
		return exitInvalid
	}
	ctx, stop := interruptible()
	defer stop()
	_, ts, cfg, code := o.connect(ctx, redriveCmd, pos[0], pos[1], stderr)
	if ts == nil {
		return code
	}
	t, api := ts[0], awsconfig.SQS(cfg)
	p, err := dlq.Peek(ctx, api, t.DLQURL, dlq.DefaultLimit)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: peek %s: %v\n", redriveCmd, t.DLQ, err)
		return exitInvalid
	}
	groups := dlq.GroupByCode(p.Letters)
	if len(p.Letters) == 0 {
		fmt.Fprintf(stderr, "fleetc %s: the DLQ of class %s (%s) is empty (%d in flight); nothing to redrive\n", redriveCmd, t.Class, t.DLQ, p.Elsewhere)
		return exitInvalid
	}
	n := len(p.Letters)
	if o.code != "" {
		n = 0
		for _, g := range groups {
			if string(g.Code) == o.code {
				n = g.Count
			}
		}
		if n == 0 {
			fmt.Fprintf(stderr, "fleetc %s: no dead letter of class %s has ERROR_CODE %s; its codes: %s\nNothing was moved.\n", redriveCmd, t.Class, o.code, dlq.Codes(groups))
			return exitInvalid
		}
	}
	if o.max > 0 {
		n = min(n, o.max)
	}
	oneByOne := o.code != "" || o.max > 0 || o.canary > 0
	printRedrivePlan(stdout, o, t, p, groups, n, oneByOne)
	if !o.auto {
		ok, err := ask("Do you want to move them?", "review with fleetc dlq, then pass --auto-approve", stdin, stdout)
		if err != nil || !ok {
			fmt.Fprintf(stderr, "fleetc %s: cancelled; nothing was moved\n", redriveCmd)
			return exitInvalid
		}
		fmt.Fprintln(stdout)
	}
	if !oneByOne {
		if code, done := managedRedrive(ctx, api, t, o, stdout, stderr); done {
			return code
		}
	}
	m := &mover{ctx: ctx, api: api, t: t, o: dlq.MoveOptions{Code: wire.Code(o.code), Max: o.max, Rate: o.rate}, n: n, stdout: stdout, stderr: stderr}
	if o.canary > 0 {
		return m.canaryFirst(o, cfg, stdin)
	}
	if _, ok := m.move(o.max); !ok {
		return exitInvalid
	}
	fmt.Fprintf(stdout, "done: %d moved\n", m.total)
	return exitOK
}

// printRedrivePlan says what dlq redrive is about to move, and how.
func printRedrivePlan(stdout io.Writer, o redriveOptions, t *dlq.Target, p *dlq.Peeked, groups []dlq.Group, n int, oneByOne bool) {
	fmt.Fprintf(stdout, "class %s: %s in %s: %s\n", t.Class, dlq.Count(len(p.Letters), "dead letter"), t.DLQ, dlq.Codes(groups))
	if !p.Complete {
		fmt.Fprintf(stdout, "  (peek incomplete: saw %d of about %d; %d in flight)\n", len(p.Letters), p.Depth, p.Elsewhere)
	}
	what := "every dead letter"
	if o.code != "" || o.max > 0 {
		what = dlq.Count(n, "dead letter")
		if o.code != "" {
			what += " of ERROR_CODE " + o.code
		}
	}
	how := "by SQS's managed redrive"
	if oneByOne {
		how = fmt.Sprintf("one at a time at %g/s", rateOr(o.rate))
	}
	fmt.Fprintf(stdout, "Redrive %s to %s, %s", what, t.Queue, how)
	if o.canary > 0 {
		fmt.Fprintf(stdout, ", %d canary first", o.canary)
	}
	fmt.Fprintln(stdout, ".")
}

// managedRedrive moves every dead letter with SQS's managed redrive; done is false where
// the endpoint has none (kumo), and the caller moves them one at a time.
func managedRedrive(ctx context.Context, api dlq.API, t *dlq.Target, o redriveOptions, stdout, stderr io.Writer) (code int, done bool) {
	task, err := dlq.Redrive(ctx, api, t, dlq.ManagedOptions{Rate: int(o.rate), Progress: func(k dlq.Task) {
		fmt.Fprintf(stdout, "  %s: %d of %d moved\n", k.Status, k.Moved, k.ToMove)
	}})
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "managed redrive %s: %d moved\n", task.Status, task.Moved)
		return exitOK, true
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "fleetc %s: interrupted; the move task is %s after %d moved; the rest stays in %s\n", redriveCmd, task.Status, task.Moved, t.DLQ)
		return exitInvalid, true
	case !errors.Is(err, dlq.ErrNoManagedRedrive):
		fmt.Fprintf(stderr, "fleetc %s: %v\n", redriveCmd, err)
		return exitInvalid, true
	}
	fmt.Fprintf(stdout, "%v; moving one at a time at %g/s\n", dlq.ErrNoManagedRedrive, rateOr(o.rate))
	return 0, false
}

// mover moves a class's dead letters one at a time, counting what it moved.
type mover struct {
	ctx            context.Context
	api            dlq.API
	t              *dlq.Target
	o              dlq.MoveOptions
	n              int // letters still to move, for the progress lines
	total          int // moved so far
	stdout, stderr io.Writer
}

// move moves up to limit letters (0: all that match), reporting progress every tenth; ok is
// false when it stopped on an error (said on stderr).
func (m *mover) move(limit int) ([]dlq.Moved, bool) {
	o := m.o
	o.Max = limit
	step := limit
	if step == 0 {
		step = m.n
	}
	o.Progress = func(k int) {
		if k == step || k%max(1, step/10) == 0 {
			fmt.Fprintf(m.stdout, "  moved %d/%d\n", k, step)
		}
	}
	moved, err := dlq.Move(m.ctx, m.api, m.t, o)
	m.total += len(moved)
	if err != nil {
		fmt.Fprintf(m.stderr, "fleetc %s: %v\n%d moved before it stopped; the rest stays in %s\n", redriveCmd, err, m.total, m.t.DLQ)
		return moved, false
	}
	return moved, true
}

// canaryFirst moves o.canary letters, waits for their outcome and moves the rest only when
// every canary completed (and, without --auto-approve, the user says yes).
func (m *mover) canaryFirst(o redriveOptions, cfg aws.Config, stdin io.Reader) int {
	stdout, stderr, t := m.stdout, m.stderr, m.t
	moved, ok := m.move(min(o.canary, m.n))
	if !ok {
		return exitInvalid
	}
	fmt.Fprintf(stdout, "canary: %d moved; waiting for their outcome (up to %s)\n", len(moved), o.canaryTimeout)
	recs := &idem.Dynamo{API: dynamo(cfg, o.endpoint), Table: t.Table, Class: t.Class}
	v, err := dlq.Watch(m.ctx, m.api, recs, t, moved, time.Second, o.canaryTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: canary: %v\n", redriveCmd, err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "canary: %d completed, %d back in the DLQ, %d pending\n", v.Completed, v.Failed, v.Pending)
	for _, w := range v.Watched {
		if w.Again != nil {
			fmt.Fprintf(stdout, "  %s died again: %s: %s\n", w.Moved.Letter.ID, w.Again.Code, w.Again.Message)
		}
	}
	if !v.OK() {
		fmt.Fprintf(stderr, "fleetc %s: the canary did not pass; the other %d stay in %s\n", redriveCmd, m.n-len(moved), t.DLQ)
		return exitInvalid
	}
	rest := m.n - len(moved)
	if rest <= 0 {
		fmt.Fprintf(stdout, "done: %d moved\n", m.total)
		return exitOK
	}
	if !o.auto {
		ok, err := ask(fmt.Sprintf("The canary passed. Move the other %d?", rest), "pass --auto-approve", stdin, stdout)
		if err != nil || !ok {
			fmt.Fprintf(stderr, "fleetc %s: stopped after the canary; the other %d stay in %s\n", redriveCmd, rest, t.DLQ)
			return exitInvalid
		}
		fmt.Fprintln(stdout)
	}
	restMax := 0
	if o.max > 0 {
		restMax = rest
	}
	m.n = rest
	if _, ok := m.move(restMax); !ok {
		return exitInvalid
	}
	fmt.Fprintf(stdout, "done: %d moved\n", m.total)
	return exitOK
}

func rateOr(r float64) float64 {
	if r <= 0 {
		return dlq.DefaultRate
	}
	return r
}

// dynamo is a DynamoDB client; an emulator (kumo) sends no CRC32 header to validate.
func dynamo(cfg aws.Config, endpoint string) idem.DynamoAPI {
	if endpoint != "" {
		return awsconfig.DynamoDB(cfg, awsconfig.WithoutCRC32)
	}
	return awsconfig.DynamoDB(cfg)
}
