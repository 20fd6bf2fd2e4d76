package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/fleetc/fleetc/compiler/ir"
)

// ErrRejected is the error a rejected approval fails with (SendTaskFailure): the state's
// Catch leads to its Fail state, so the execution fails with it and the reason as cause.
const ErrRejected = "fleetc.Rejected"

// Decision is the output a granted approval's state gets at $.steps.<state>.
type Decision struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
}

// ErrNoApproval: no recorded token for the execution and state: the approval was never
// requested (the execution has not reached it), was already decided, or its recorder failed.
var ErrNoApproval = errors.New("no pending approval")

// ErrApprovalClosed: Step Functions no longer waits for the token (it timed out, the
// execution ended, or someone decided first).
var ErrApprovalClosed = errors.New("the approval is no longer waiting")

// ApprovalStep finds the approval step named state, in the workflow whose state machine the
// execution ARN names (any workflow when run is a bare execution name).
func ApprovalStep(f *ir.Fleet, run, state string) (*ir.Workflow, *ir.Step, error) {
	machine := ""
	if strings.HasPrefix(run, "arn:") {
		// arn:<partition>:states:<region>:<account>:execution:<machine>:<name>
		parts := strings.Split(run, ":")
		if len(parts) != 8 || parts[5] != "execution" {
			return nil, nil, fmt.Errorf("%q is not a Step Functions execution ARN", run)
		}
		machine = parts[6]
	}
	var found []string
	for _, w := range f.Workflows {
		if machine != "" && w.StateMachineName != machine {
			continue
		}
		for _, st := range w.Steps {
			if st.Approval != nil {
				if st.Name == state {
					return w, st, nil
				}
				found = append(found, w.Name+"/"+st.Name)
			}
		}
	}
	if len(found) == 0 {
		return nil, nil, fmt.Errorf("no approval step %q: the fleet has no approval steps%s", state, machineNote(machine))
	}
	return nil, nil, fmt.Errorf("no approval step %q%s; approval steps: %s", state, machineNote(machine), strings.Join(found, ", "))
}

func machineNote(machine string) string {
	if machine == "" {
		return ""
	}
	return " in state machine " + machine
}

// ExecutionARN is run as an execution ARN: run itself, or the execution named run of the
// state machine machineARN.
func ExecutionARN(machineARN, run string) string {
	if strings.HasPrefix(run, "arn:") {
		return run
	}
	return strings.Replace(machineARN, ":stateMachine:", ":execution:", 1) + ":" + run
}

// Decide completes the approval state of execution execARN: it reads the token the recorder
// stored in table, answers Step Functions (SendTaskSuccess with a Decision, or
// SendTaskFailure with ErrRejected), then deletes the record so the token is not kept.
func Decide(ctx context.Context, db *dynamodb.Client, c *sfn.Client, table, execARN, state string, approve bool, reason string) error {
	key := map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: ir.ApprovalPartitionKey(execARN)},
		"sk": &ddbtypes.AttributeValueMemberS{Value: ir.ApprovalSortKey(state)},
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("read the approval record: %w", err)
	}
	tok, _ := out.Item["token"].(*ddbtypes.AttributeValueMemberS)
	if tok == nil || tok.Value == "" {
		return fmt.Errorf("%w %s for %s (not requested yet, already decided, or not recorded)", ErrNoApproval, state, execARN)
	}
	if approve {
		b, _ := json.Marshal(Decision{Approved: true, Reason: reason})
		_, err = c.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok.Value), Output: aws.String(string(b))})
	} else {
		_, err = c.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(tok.Value), Error: aws.String(ErrRejected), Cause: aws.String(reason)})
	}
	var timedOut *sfntypes.TaskTimedOut
	var gone *sfntypes.TaskDoesNotExist
	if errors.As(err, &timedOut) || errors.As(err, &gone) {
		err = fmt.Errorf("%w: %v", ErrApprovalClosed, err)
	} else if err != nil {
		return fmt.Errorf("answer Step Functions: %w", err)
	}
	// The token is spent (or dead) either way: drop it, but only if it is still this one
	// (a redriven execution records a fresh token for the same state).
	_, derr := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key,
		ConditionExpression:       aws.String("#t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": "token"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":t": &ddbtypes.AttributeValueMemberS{Value: tok.Value}},
	})
	var cond *ddbtypes.ConditionalCheckFailedException
	if derr != nil && !errors.As(derr, &cond) && err == nil {
		return fmt.Errorf("answered, but could not delete the approval record: %w", derr)
	}
	return err
}
