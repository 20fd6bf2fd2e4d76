package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/recovery"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// redriveExecOptions are redrive-execution's flags.
type redriveExecOptions struct {
	since, status, endpoint string
	auto                    bool
	env                     string // the root's --env
}

func newRedriveExecutionCmd(s *streams) *cobra.Command {
	var o redriveExecOptions
	c := &cobra.Command{
		Use:   "redrive-execution FILE WORKFLOW [--since T] [--status FAILED|TIMED_OUT|ABORTED] [--endpoint URL] [--auto-approve]",
		Short: "Redrive a workflow's failed Step Functions executions from the step that failed",
		Long: `Redrive-execution lists the executions of the workflow's state machine that ended in
--status (default FAILED), stopped since --since if given, asks for yes (unless
--auto-approve) and redrives each (Step Functions RedriveExecution): it continues from the
failed step with the same input, keeping the results of the steps that succeeded. Step
Functions redrives Standard executions that stopped within the last 14 days; it refuses the
others (ExecutionNotRedrivable), which is reported per execution.

Without --endpoint it goes to AWS through the SDK's default credential chain, in the fleet's
region (AWS_REGION wins).

Arguments:
  FILE      the fleet.yaml
  WORKFLOW  the workflow's name in the spec

Exit 0 every listed execution redriven (or none to redrive), 1 refused or failed, 2 usage error.`,
		Example: `  fleetc redrive-execution fleet.yaml conversation --since 6h
  fleetc redrive-execution fleet.yaml conversation --status TIMED_OUT --since 2026-12-01T09:00:00Z --auto-approve`,
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runRedriveExecution(args, o, s.stdin, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVar(&o.since, "since", "", "only executions that stopped since then: RFC 3339, or a duration ago (6h, 2d)")
	c.Flags().StringVar(&o.status, "status", string(sfntypes.ExecutionStatusFailed), "the executions' status: FAILED, TIMED_OUT or ABORTED")
	c.Flags().BoolVar(&o.auto, "auto-approve", false, "redrive without asking for yes")
	endpointFlag(c, &o.endpoint)
	return c
}

func runRedriveExecution(pos []string, o redriveExecOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	const cmd = "redrive-execution"
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "fleetc %s: name one fleet.yaml and one workflow\n", cmd)
		return exitUsage
	}
	now := time.Now()
	var since time.Time
	if o.since != "" {
		var err error
		if since, err = recovery.ParseTime(o.since, now); err != nil {
			fmt.Fprintf(stderr, "fleetc %s: --since: %v\n", cmd, err)
			return exitUsage
		}
	}
	f, code := loadFleet(cmd, pos[0], o.env, stderr)
	if f == nil {
		return code
	}
	w, err := recovery.Workflow(f, pos[1])
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
	c := awsconfig.SFN(cfg)
	arn, err := recovery.StateMachineARN(ctx, c, w)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	status := sfntypes.ExecutionStatus(strings.ToUpper(o.status))
	execs, err := recovery.Executions(ctx, c, arn, status, since)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	window := ""
	if !since.IsZero() {
		window = " since " + since.UTC().Format(time.RFC3339)
	}
	if len(execs) == 0 {
		fmt.Fprintf(stdout, "No %s executions of workflow %s%s: nothing to redrive.\n", status, w.Name, window)
		return exitOK
	}
	fmt.Fprintf(stdout, "%d %s executions of workflow %s (%s)%s:\n", len(execs), status, w.Name, w.StateMachineName, window)
	for _, e := range execs {
		fmt.Fprintf(stdout, "  %s  started %s  stopped %s  redriven %d times\n", aws.ToString(e.Name),
			stamp(e.StartDate), stamp(e.StopDate), aws.ToInt32(e.RedriveCount))
	}
	if !o.auto {
		ok, err := ask(fmt.Sprintf("Redrive these %d executions?", len(execs)), "pass --auto-approve", stdin, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return exitInvalid
		}
		if !ok {
			fmt.Fprintln(stdout, "Nothing redriven.")
			return exitInvalid
		}
	}
	return redriveAll(ctx, c, execs, stdout)
}

// redriveAll redrives every execution, going on past one that fails (each is independent),
// and reports each; the exit code is exitInvalid when any failed.
func redriveAll(ctx context.Context, c *sfn.Client, execs []sfntypes.ExecutionListItem, stdout io.Writer) int {
	failed := 0
	for _, e := range execs {
		at, err := recovery.Redrive(ctx, c, aws.ToString(e.ExecutionArn))
		if err != nil {
			failed++
			verb := "failed"
			if errors.Is(err, recovery.ErrNotRedrivable) {
				verb = "refused"
			}
			fmt.Fprintf(stdout, "  %s %s: %v\n", aws.ToString(e.Name), verb, err)
			continue
		}
		fmt.Fprintf(stdout, "  %s redriven at %s\n", aws.ToString(e.Name), at.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(stdout, "Redriven %d of %d.\n", len(execs)-failed, len(execs))
	if failed > 0 {
		return exitInvalid
	}
	return exitOK
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
