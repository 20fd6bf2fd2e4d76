package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/recovery"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// replayPollInterval is how often replay asks DescribeReplay for progress.
var replayPollInterval = 5 * time.Second

// replayOptions are replay's flags.
type replayOptions struct {
	from, to, endpoint string
	events             []string
	dryRun, auto       bool
	env                string // the root's --env
}

func newReplayCmd(s *streams) *cobra.Command {
	var o replayOptions
	c := &cobra.Command{
		Use:   "replay FILE --from T --to T [--event DETAIL_TYPE]... [--dry-run] [--auto-approve] [--endpoint URL]",
		Short: "Replay archived events into the fleet's bus, refused where it would repeat side effects",
		Long: `Replay re-delivers the events the fleet's archive (bus.archive) kept between --from and
--to to its bus (EventBridge StartReplay): every rule matches them as it did the first time.
With --event it replays to the rules of the classes consuming those detail-types only.

It reads the deployed archive (DescribeArchive) and refuses when a consuming class is
non_idempotent and the replay reaches events older than its idempotency window (rule E013's
reasoning, at run time, against the archive's real retention): their keys are forgotten, so
the replay would repeat their side effects. Without --event it also refuses when the bus has
a rule whose target is outside the fleet: a class's tool.notify (pushing its completion events
to an API destination or a client's queue), or any rule the spec does not define (ListRules;
rules a service manages are left out). Nothing there remembers keys, so every archived event
would be delivered there again. It prints the plan, asks for yes (unless
--auto-approve; --dry-run stops after the plan), starts the replay and follows it with
DescribeReplay until it is COMPLETED, CANCELLED or FAILED.

A window ending less than ` + fmt.Sprint(recovery.ArchiveLag.Minutes()) + ` minutes ago is refused: EventBridge archives events a
little after ingestion, so its newest events may not be in the archive yet.

Times are RFC 3339 (2026-12-01T09:00:00Z) or a duration ago (90m, 6h, 2d). Without
--endpoint it goes to AWS through the SDK's default credential chain, in the fleet's region
(AWS_REGION wins).

Arguments:
  FILE  the fleet.yaml (its bus.archive is the source)

Exit 0 completed (or planned, with --dry-run), 1 refused, cancelled or failed, 2 usage error.`,
		Example: `  fleetc replay fleet.yaml --from 6h --to 1h --event agent.step.requested --dry-run
  fleetc replay fleet.yaml --from 2026-12-01T09:00:00Z --to 2026-12-01T10:00:00Z --auto-approve`,
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runReplay(args, o, s.stdin, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVar(&o.from, "from", "", "start of the window of archived events (required)")
	c.Flags().StringVar(&o.to, "to", "", "end of the window (required)")
	c.Flags().StringArrayVar(&o.events, "event", nil, "replay only to the classes consuming this detail-type (repeatable)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "check against the deployed archive and print the plan; start nothing")
	c.Flags().BoolVar(&o.auto, "auto-approve", false, "replay without asking for yes")
	endpointFlag(c, &o.endpoint)
	return c
}

func runReplay(pos []string, o replayOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	const cmd = "replay"
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "fleetc %s: name one fleet.yaml\n", cmd)
		return exitUsage
	}
	if o.from == "" || o.to == "" {
		fmt.Fprintf(stderr, "fleetc %s: --from and --to are required\n", cmd)
		return exitUsage
	}
	now := time.Now()
	from, to, err := o.window(now)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitUsage
	}
	f, code := loadFleet(cmd, pos[0], o.env, stderr)
	if f == nil {
		return code
	}
	r, err := recovery.PlanReplay(f, from, to, o.events, now)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	ctx, stop := interruptible()
	defer stop()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: region(f), Endpoint: o.endpoint})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	c := awsconfig.EventBridge(cfg)
	if err := r.Resolve(ctx, c); err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	if err := r.Safe(); err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	printReplay(stdout, r, from, to)
	if o.dryRun {
		fmt.Fprintln(stdout, "Dry run: nothing replayed.")
		return exitOK
	}
	if !o.auto {
		ok, err := ask("Replay these events?", "check with --dry-run, then pass --auto-approve", stdin, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return exitInvalid
		}
		if !ok {
			fmt.Fprintln(stdout, "Nothing replayed.")
			return exitInvalid
		}
	}
	return startReplay(ctx, c, r, r.Name(now), stdout, stderr)
}

// window is --from and --to as times (each absolute, or a duration before now).
func (o replayOptions) window(now time.Time) (from, to time.Time, err error) {
	if from, err = recovery.ParseTime(o.from, now); err != nil {
		return from, to, err
	}
	to, err = recovery.ParseTime(o.to, now)
	return from, to, err
}

// printReplay says what the replay will send where, and which classes receive it: what a
// person confirms, or reads in a dry run.
func printReplay(stdout io.Writer, r *recovery.Replay, from, to time.Time) {
	var classes []string
	for _, a := range r.Consumers {
		classes = append(classes, a.Name)
	}
	what := "every archived event"
	if len(r.Events) > 0 {
		what = strings.Join(r.Events, ", ")
	}
	fmt.Fprintf(stdout, "Replay %s from archive %s to bus %s\n  window: %s to %s\n  consumers: %s (each replay-safe for events up to %s old)\n",
		what, r.Archive, r.Bus, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), strings.Join(classes, ", "), r.Reach().Round(time.Second))
}

// startReplay starts replay name and follows it to its end, printing its progress.
func startReplay(ctx context.Context, c *eventbridge.Client, r *recovery.Replay, name string, stdout, stderr io.Writer) int {
	const cmd = "replay"
	if _, err := r.Start(ctx, c, name); err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "Started replay %s\n", name)
	final, err := recovery.Wait(ctx, c, name, replayPollInterval, func(p recovery.Progress) {
		fmt.Fprintf(stdout, "  %-10s %3d%%%s\n", p.State, p.Percent(r), reason(p.Reason))
	})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v (the replay goes on: follow it with aws events describe-replay --replay-name %s)\n", cmd, err, name)
		return exitInvalid
	}
	if final.State != ebtypes.ReplayStateCompleted {
		fmt.Fprintf(stderr, "fleetc %s: replay %s ended %s%s\n", cmd, name, final.State, reason(final.Reason))
		return exitInvalid
	}
	fmt.Fprintf(stdout, "Replay %s completed.\n", name)
	return exitOK
}

func reason(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
