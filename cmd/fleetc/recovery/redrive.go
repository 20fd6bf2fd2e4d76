// Package recovery re-runs a fleet's history after a fix: Step Functions redrive of failed
// workflow executions (fleetc redrive-execution) and EventBridge archive replay (fleetc
// replay), refused when it could repeat a non_idempotent class's side effects. The CLI files
// only parse flags, confirm and print.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
)

// RedrivableStatuses are the ListExecutions status filters whose executions RedriveExecution
// accepts (an execution that did not succeed; RUNNING and SUCCEEDED are not redrivable).
var RedrivableStatuses = []sfntypes.ExecutionStatus{
	sfntypes.ExecutionStatusFailed, sfntypes.ExecutionStatusTimedOut, sfntypes.ExecutionStatusAborted,
}

// Workflow finds a workflow of the fleet by name; a standard one, since Step Functions
// redrives no Express execution.
func Workflow(f *ir.Fleet, name string) (*ir.Workflow, error) {
	var names []string
	for _, w := range f.Workflows {
		if w.Name == name {
			if w.IsExpress() {
				return nil, fmt.Errorf("workflow %s is an Express workflow: Step Functions redrives Standard executions only (start a new execution instead)", name)
			}
			return w, nil
		}
		names = append(names, w.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown workflow %q: the fleet has no workflows", name)
	}
	return nil, fmt.Errorf("unknown workflow %q; the fleet's workflows: %s", name, strings.Join(names, ", "))
}

// StateMachineARN finds the deployed state machine of w by name (ListStateMachines).
func StateMachineARN(ctx context.Context, c *sfn.Client, w *ir.Workflow) (string, error) {
	p := sfn.NewListStateMachinesPaginator(c, &sfn.ListStateMachinesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("list state machines: %w", err)
		}
		for _, m := range page.StateMachines {
			if aws.ToString(m.Name) == w.StateMachineName {
				return aws.ToString(m.StateMachineArn), nil
			}
		}
	}
	return "", fmt.Errorf("state machine %s of workflow %s is not deployed in this account and region (fleetc apply first)", w.StateMachineName, w.Name)
}

// Executions lists the state machine's executions in status that stopped at or after since
// (zero: any time), oldest first.
func Executions(ctx context.Context, c *sfn.Client, machineARN string, status sfntypes.ExecutionStatus, since time.Time) ([]sfntypes.ExecutionListItem, error) {
	if !slices.Contains(RedrivableStatuses, status) {
		return nil, fmt.Errorf("status %s is not redrivable; use one of %v", status, RedrivableStatuses)
	}
	var out []sfntypes.ExecutionListItem
	p := sfn.NewListExecutionsPaginator(c, &sfn.ListExecutionsInput{StateMachineArn: aws.String(machineARN), StatusFilter: status})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list executions: %w", err)
		}
		for _, e := range page.Executions {
			if !since.IsZero() && e.StopDate != nil && e.StopDate.Before(since) {
				continue
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b sfntypes.ExecutionListItem) int {
		return aws.ToTime(a.StartDate).Compare(aws.ToTime(b.StartDate))
	})
	return out, nil
}

// ErrNotRedrivable is wrapped by Redrive's error when Step Functions refuses the execution
// as not redrivable (ExecutionNotRedrivable: succeeded, older than 14 days, over the event
// history limit, or an Express execution).
var ErrNotRedrivable = errors.New("not redrivable")

// Redrive restarts one execution from its failed step (RedriveExecution) and returns when
// Step Functions redrove it.
func Redrive(ctx context.Context, c *sfn.Client, executionARN string) (time.Time, error) {
	out, err := c.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(executionARN)})
	if err != nil {
		var nr *sfntypes.ExecutionNotRedrivable
		var gone *sfntypes.ExecutionDoesNotExist
		var limit *sfntypes.ExecutionLimitExceeded
		switch {
		case errors.As(err, &nr):
			return time.Time{}, fmt.Errorf("%w: %s", ErrNotRedrivable, aws.ToString(nr.Message))
		case errors.As(err, &gone):
			return time.Time{}, fmt.Errorf("execution does not exist: %s", aws.ToString(gone.Message))
		case errors.As(err, &limit):
			return time.Time{}, fmt.Errorf("too many open executions (ExecutionLimitExceeded): %s; retry when some finish", aws.ToString(limit.Message))
		}
		return time.Time{}, err
	}
	return aws.ToTime(out.RedriveDate), nil
}

// ParseTime reads a flag's time: RFC 3339 (2026-12-01T09:00:00Z), or a fleet.yaml duration
// meaning that long before now (90m, 6h, 2d).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := spec.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-12-01T09:00:00Z) or a duration ago (90m, 6h, 2d)", s)
	}
	return now.Add(-d), nil
}
