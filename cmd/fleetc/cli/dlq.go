package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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

Without CLASS it also shows the bus's delivery DLQ: the events EventBridge gave up
delivering to a target (a class queue, a tool, a notify destination), grouped by the
ERROR_CODE EventBridge wrote and counted by TARGET_ARN, naming the class whose queue it is
(redrive those with dlq redrive FILE CLASS --delivery).

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
	api := awsconfig.SQS(cfg)
	r, err := dlq.Inspect(ctx, api, f.Name, ts, o.limit, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dlq: %v\n", err)
		return exitInvalid
	}
	if class == "" {
		if r.Delivery, code = inspectDelivery(ctx, api, f, ts, o.limit, stderr); code != exitOK {
			return code
		}
	}
	if o.format.value == "json" {
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	r.WriteText(stdout)
	return exitOK
}

// inspectDelivery peeks at the bus's delivery DLQ.
func inspectDelivery(ctx context.Context, api dlq.API, f *ir.Fleet, ts []*dlq.Target, limit int, stderr io.Writer) (*dlq.DeliveryReport, int) {
	name := f.TargetDLQ.Name
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dlq: the bus's delivery DLQ %s: %v\n", name, err)
		return nil, exitInvalid
	}
	d, err := dlq.InspectDelivery(ctx, api, name, aws.ToString(out.QueueUrl), ts, limit, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "fleetc dlq: %v\n", err)
		return nil, exitInvalid
	}
	return d, exitOK
}

type redriveOptions struct {
	dlqFlags
	delivery      bool
	code          string
	max, canary   int
	rate          float64
	canaryTimeout time.Duration
	auto          bool
	format        *formatFlag
}

func newDLQRedriveCmd(s *streams) *cobra.Command {
	o := redriveOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "redrive FILE CLASS [--delivery] [--code CODE] [--max N] [--rate R] [--canary N] [--auto-approve] [--endpoint URL] [--format text|json]",
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
and RETRY_ATTEMPTS stay behind: the message starts over. Each copy carries FLEETC_REDRIVE,
which the worker keeps when it dead-letters the copy again: one invocation moves each dead
letter at most once, and ends.

--delivery takes the letters from the fleet's delivery DLQ instead: the events EventBridge
gave up delivering to CLASS's queue (their TARGET_ARN), one at a time, without
EventBridge's RULE_ARN, TARGET_ARN and EXHAUSTED_RETRY_CONDITION. A copy that fails again
dies in CLASS's DLQ, where the tally looks for it.

--canary N moves N first and waits for their outcome: completed (the idempotency record is
done) or dead-lettered again. Only when all N completed does it offer to move the rest; a
canary still pending at --canary-timeout is not a pass.

At the end it watches the DLQ for a few seconds and reports how many it moved, how many of
them failed again (came back to the DLQ during the invocation) and how many are left there.

Arguments:
  FILE   the fleet.yaml
  CLASS  the agent class whose DLQ to redrive

Exit 0 moved, none failed again; 1 refused, cancelled, canary failed or pending, a letter
failed again, or AWS error; 2 usage error.`,
		Example: `  fleetc dlq redrive fleet.yaml researcher
  fleetc dlq redrive fleet.yaml researcher --code ModelUnavailable --canary 2 --rate 5`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runRedrive(args, o, s.stdin, s.stdout, s.stderr))
		},
	}
	o.register(c)
	c.Flags().BoolVar(&o.delivery, "delivery", false, "move the events the bus could not deliver to CLASS's queue (from the fleet's delivery DLQ) instead of CLASS's dead letters")
	c.Flags().StringVar(&o.code, "code", "", "move only dead letters of this ERROR_CODE")
	c.Flags().IntVar(&o.max, "max", 0, "move at most N dead letters (0: all)")
	c.Flags().Float64Var(&o.rate, "rate", 0, fmt.Sprintf("messages per second (default: SQS decides for a managed redrive, %g one at a time)", dlq.DefaultRate))
	c.Flags().IntVar(&o.canary, "canary", 0, "move N first, wait for their outcome and stop unless all completed")
	c.Flags().DurationVar(&o.canaryTimeout, "canary-timeout", 10*time.Minute, "how long to wait for the canaries' outcome (one still pending then is not a pass)")
	c.Flags().BoolVar(&o.auto, "auto-approve", false, "move without asking for yes")
	addFormat(c, o.format, " (json: the counts as one document on stdout, the progress on stderr)")
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
	f, ts, cfg, code := o.connect(ctx, redriveCmd, pos[0], pos[1], stderr)
	if ts == nil {
		return code
	}
	t, api := ts[0], awsconfig.SQS(cfg)
	if o.delivery {
		t = dlq.DeliveryOf(t, f.TargetDLQ.Name)
		if err := t.Resolve(ctx, api); err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", redriveCmd, err)
			return exitInvalid
		}
	}
	p, err := dlq.Peek(ctx, api, t.DLQURL, dlq.DefaultLimit)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: peek %s: %v\n", redriveCmd, t.DLQ, err)
		return exitInvalid
	}
	p.Letters = t.ForClass(p.Letters)
	groups := dlq.GroupByCode(p.Letters)
	n, ok := redriveCount(o, t, p, groups, stderr)
	if !ok {
		return exitInvalid
	}
	// With --format json the document alone goes to stdout; what a person reads, to stderr.
	human := stdout
	if o.format.value == "json" {
		human = stderr
	}
	// SQS's managed redrive moves a whole DLQ to one queue; the delivery DLQ holds every
	// target's events, so its letters for this class move one at a time.
	oneByOne := o.code != "" || o.max > 0 || o.canary > 0 || t.Delivery()
	printRedrivePlan(human, o, t, p, groups, n, oneByOne)
	if !o.auto {
		ok, err := ask("Do you want to move them?", "review with fleetc dlq, then pass --auto-approve", stdin, human)
		if err != nil || !ok {
			fmt.Fprintf(stderr, "fleetc %s: cancelled; nothing was moved\n", redriveCmd)
			return exitInvalid
		}
		fmt.Fprintln(human)
	}
	s := dlq.NewSession()
	m := &mover{ctx: ctx, api: api, t: t, o: dlq.MoveOptions{Code: wire.Code(o.code), Max: o.max, Rate: o.rate, Session: s}, n: n,
		stdout: human, stderr: stderr, report: dlq.NewRedriveReport(f.Name, t, time.Now())}
	code, managed := exitOK, int64(-1)
	if !oneByOne {
		code, managed = managedRedrive(ctx, api, t, o, human, stderr)
	}
	switch {
	case managed >= 0:
	case o.canary > 0:
		code = m.canaryFirst(o, cfg, stdin)
	case !m.move(o.max):
		code = exitInvalid
	}
	return m.finish(s, managed, code, o.format.value == "json", stdout)
}

// redriveCount is how many dead letters the redrive will move: the class's, of --code's
// code, at most --max. None to move is an error that says what the DLQ holds instead.
func redriveCount(o redriveOptions, t *dlq.Target, p *dlq.Peeked, groups []dlq.Group, stderr io.Writer) (int, bool) {
	if len(p.Letters) == 0 {
		if t.Delivery() {
			fmt.Fprintf(stderr, "fleetc %s: the delivery DLQ %s holds no event for class %s's queue (%d in flight); nothing to redrive\n", redriveCmd, t.DLQ, t.Class, p.Elsewhere)
			return 0, false
		}
		fmt.Fprintf(stderr, "fleetc %s: the DLQ of class %s (%s) is empty (%d in flight); nothing to redrive\n", redriveCmd, t.Class, t.DLQ, p.Elsewhere)
		return 0, false
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
			return 0, false
		}
	}
	if o.max > 0 {
		n = min(n, o.max)
	}
	return n, true
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

// managedRedrive moves every dead letter with SQS's managed redrive and returns how many it
// moved; moved is -1 where the endpoint has none (kumo), and the caller moves them one at a
// time.
func managedRedrive(ctx context.Context, api dlq.API, t *dlq.Target, o redriveOptions, stdout, stderr io.Writer) (code int, moved int64) {
	task, err := dlq.Redrive(ctx, api, t, dlq.ManagedOptions{Rate: int(o.rate), Progress: func(k dlq.Task) {
		fmt.Fprintf(stdout, "  %s: %d of %d moved\n", k.Status, k.Moved, k.ToMove)
	}})
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "managed redrive %s: %d moved\n", task.Status, task.Moved)
		return exitOK, task.Moved
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "fleetc %s: interrupted; the move task is %s after %d moved; the rest stays in %s\n", redriveCmd, task.Status, task.Moved, t.DLQ)
		return exitInvalid, task.Moved
	case !errors.Is(err, dlq.ErrNoManagedRedrive):
		fmt.Fprintf(stderr, "fleetc %s: %v\n", redriveCmd, err)
		return exitInvalid, task.Moved
	}
	fmt.Fprintf(stdout, "%v; moving one at a time at %g/s\n", dlq.ErrNoManagedRedrive, rateOr(o.rate))
	return exitOK, -1
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
	report         *dlq.RedriveReport
}

// move moves up to limit letters (0: all that match), reporting progress every tenth; it
// returns false when it stopped on an error (said on stderr).
func (m *mover) move(limit int) bool {
	_, ok := m.moveSome(limit)
	return ok
}

func (m *mover) moveSome(limit int) ([]dlq.Moved, bool) {
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
		m.report.Stopped = err.Error()
		fmt.Fprintf(m.stderr, "fleetc %s: %v\n%d moved before it stopped; the rest stays in %s\n", redriveCmd, err, m.total, m.t.DLQ)
		return moved, false
	}
	return moved, true
}

// canaryFirst moves o.canary letters, waits for their outcome and moves the rest only when
// every canary completed (and, without --auto-approve, the user says yes).
func (m *mover) canaryFirst(o redriveOptions, cfg aws.Config, stdin io.Reader) int {
	stdout, stderr, t := m.stdout, m.stderr, m.t
	moved, ok := m.moveSome(min(o.canary, m.n))
	if !ok {
		return exitInvalid
	}
	fmt.Fprintf(stdout, "canary: %d moved; waiting for their outcome (up to %s)\n", len(moved), o.canaryTimeout)
	recs := &idem.Dynamo{API: dynamo(cfg, o.endpoint), Table: t.Table, Class: t.Class}
	v, err := dlq.Watch(m.ctx, m.api, recs, t, moved, time.Second, o.canaryTimeout)
	if err != nil {
		m.report.Stopped = "canary: " + err.Error()
		fmt.Fprintf(stderr, "fleetc %s: canary: %v\n", redriveCmd, err)
		return exitInvalid
	}
	m.report.Canary = v
	fmt.Fprintf(stdout, "canary: %d completed, %d back in the DLQ, %d pending\n", v.Completed, v.Failed, v.Pending)
	for _, w := range v.Watched {
		if w.Again != nil {
			fmt.Fprintf(stdout, "  %s died again: %s: %s\n", w.Moved.Letter.ID, w.Again.Code, w.Again.Message)
		}
	}
	rest := m.n - len(moved)
	if why := canaryFailure(v, o.canaryTimeout); why != "" {
		m.report.Stopped = why
		fmt.Fprintf(stderr, "fleetc %s: %s; the other %d stay in %s\n", redriveCmd, why, rest, t.DLQ)
		return exitInvalid
	}
	if rest <= 0 {
		return exitOK
	}
	if !o.auto {
		ok, err := ask(fmt.Sprintf("The canary passed. Move the other %d?", rest), "pass --auto-approve", stdin, stdout)
		if err != nil || !ok {
			m.report.Stopped = "stopped after the canary"
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
	if !m.move(restMax) {
		return exitInvalid
	}
	return exitOK
}

// canaryFailure says why the canary did not pass ("" when it did). A canary with no outcome
// by the timeout is not a pass: the work it stands for may be stuck as well as slow.
func canaryFailure(v *dlq.Verdict, timeout time.Duration) string {
	switch {
	case v.Failed > 0:
		return fmt.Sprintf("the canary did not pass: %d of %d back in the DLQ", v.Failed, len(v.Watched))
	case v.Pending > 0:
		return fmt.Sprintf("the canary did not pass: %d of %d still pending after --canary-timeout %s (no outcome is not a pass: are the workers running? raise --canary-timeout for slow steps)", v.Pending, len(v.Watched), timeout)
	case !v.OK():
		return "the canary did not pass"
	}
	return ""
}

// finish watches the DLQ for returning letters, reports what the invocation did (moved, failed
// again, left) and returns the exit code: code, or 1 when a moved letter failed again.
// managed is what SQS's managed redrive moved (-1: it did not run).
func (m *mover) finish(s *dlq.Session, managed int64, code int, asJSON bool, stdout io.Writer) int {
	r, err := s.Tally(m.ctx, m.api, m.t, dlq.DefaultSettle)
	if err != nil {
		fmt.Fprintf(m.stderr, "fleetc %s: %v\n", redriveCmd, err)
		return exitInvalid
	}
	if managed >= 0 {
		r.Moved = int(managed) // SQS's copies are not stamped: those back in the DLQ count as left
	}
	m.report.Result = *r
	if asJSON {
		b, _ := json.MarshalIndent(m.report, "", "  ")
		fmt.Fprintln(stdout, string(b))
	}
	fmt.Fprintf(m.stdout, "done: %s\n", r)
	if r.FailedAgain > 0 {
		fmt.Fprintf(m.stdout, "  failed again: %s\n", dlq.Codes(r.FailedAgainCodes))
	}
	if r.Left > 0 && len(r.LeftCodes) > 0 {
		fmt.Fprintf(m.stdout, "  left in %s: %s\n", m.t.DLQ, dlq.Codes(r.LeftCodes))
	}
	if r.FailedAgain > 0 && code == exitOK {
		fmt.Fprintf(m.stderr, "fleetc %s: %s came back to %s during this redrive: the cause is not fixed (see fleetc dlq)\n", redriveCmd, dlq.Count(r.FailedAgain, "moved letter"), m.t.DLQ)
		return exitInvalid
	}
	return code
}

func rateOr(r float64) float64 {
	if r <= 0 {
		return dlq.DefaultRate
	}
	return r
}

// dynamo is a DynamoDB client; an emulator (kumo) sends no CRC32 header to validate.
func dynamo(cfg aws.Config, endpoint string) *dynamodb.Client {
	if endpoint != "" {
		return awsconfig.DynamoDB(cfg, awsconfig.WithoutCRC32)
	}
	return awsconfig.DynamoDB(cfg)
}
