package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/recovery"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// decideOptions are approve's and reject's flags.
type decideOptions struct {
	file, reason, endpoint string
	env                    string // the root's --env
}

// newDecideCmd is `fleetc approve` (approve true) or `fleetc reject`.
func newDecideCmd(verb string, approve bool) func(*streams) *cobra.Command {
	return func(s *streams) *cobra.Command {
		var o decideOptions
		answer := "SendTaskSuccess with {\"approved\": true, \"reason\": ...} as the step's result, and the workflow goes on"
		if !approve {
			answer = "SendTaskFailure with error " + recovery.ErrRejected + " and the reason as cause, and the execution fails"
		}
		c := &cobra.Command{
			Use:   verb + " RUN STEP [--reason TEXT] [--file fleet.yaml] [--endpoint URL]",
			Short: map[bool]string{true: "Approve", false: "Reject"}[approve] + " a workflow execution's waiting approval step",
			Long: `Reads the task token fleetc's approval recorder stored for the execution's approval step
(the idempotency table, key: execution ARN + approval#STEP) and answers Step Functions: ` + answer + `.
The record is deleted afterwards. The notify event on the bus carries only the execution and
the step, never the token (docs/approvals.md).

Without --endpoint it goes to AWS through the SDK's default credential chain, in the fleet's
region (AWS_REGION wins); it needs dynamodb:GetItem and DeleteItem on the table and
states:SendTaskSuccess/SendTaskFailure.

Arguments:
  RUN   the execution: its ARN (execution_id in the notify event), or its name
  STEP  the approval step's name (state in the notify event)

Exit 0 answered, 1 nothing waiting or AWS refused, 2 usage error.`,
			Example: "  fleetc " + verb + " arn:aws:states:eu-west-1:111122223333:execution:refunds-refund:r-42 Approve --reason \"checked the order\"\n" +
				"  fleetc " + verb + " r-42 Approve --file examples/approvals/fleet.yaml --endpoint http://127.0.0.1:4566",
			RunE: func(_ *cobra.Command, args []string) error {
				o.env = s.env
				return exit(runDecide(verb, approve, args, o, s.stdout, s.stderr))
			},
		}
		c.Flags().StringVar(&o.reason, "reason", "", "why: the step's result reason (approve) or the execution's failure cause (reject)")
		c.Flags().StringVarP(&o.file, "file", "f", "fleet.yaml", "the fleet.yaml")
		endpointFlag(c, &o.endpoint)
		return c
	}
}

func runDecide(cmd string, approve bool, pos []string, o decideOptions, stdout, stderr io.Writer) int {
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "fleetc %s: name one execution (RUN) and one approval step (STEP)\n", cmd)
		return exitUsage
	}
	run, state := pos[0], pos[1]
	f, code := loadFleet(cmd, o.file, o.env, stderr)
	if f == nil {
		return code
	}
	w, st, err := recovery.ApprovalStep(f, run, state)
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
	execARN := run
	if !strings.HasPrefix(run, "arn:") {
		// A bare name: the execution of the deployed state machine of the step's workflow.
		machine, err := recovery.StateMachineARN(ctx, c, w)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return exitInvalid
		}
		execARN = recovery.ExecutionARN(machine, run)
	}
	db := awsconfig.DynamoDB(cfg)
	if o.endpoint != "" {
		db = awsconfig.DynamoDB(cfg, awsconfig.WithoutCRC32) // emulators do not sign bodies with a CRC32
	}
	err = recovery.Decide(ctx, db, c, f.State.IdempotencyTable, execARN, st.Name, approve, o.reason)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %s %s: %v\n", cmd, execARN, st.Name, err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "%s: %s %sd.\n", execARN, st.Name, cmd)
	return exitOK
}
