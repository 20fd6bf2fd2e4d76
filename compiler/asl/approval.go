package asl

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// An approval step waits for a person. The token it waits for must reach `fleetc approve`
// without passing through the bus: every rule on the bus (and every API destination or
// webhook behind one) would otherwise hold a credential that completes the step. Pure ASL
// cannot store it another way from the waiting state itself: .waitForTaskToken exists for
// SQS, SNS, EventBridge PutEvents, Lambda, ECS, Step Functions StartExecution and a few
// more, but not for DynamoDB, a state before the wait has no token yet ($$.Task.Token is the
// waiting task's), and the intrinsics hash but have no keyed MAC.
//
// So the approval state starts the fleet's approval recorder (an Express state machine,
// RecorderPath) with .waitForTaskToken and hands it the token. The recorder writes the token
// to the idempotency table (pk = ir.ApprovalPartitionKey(execution ARN), sk =
// ir.ApprovalSortKey(state)) and then puts the notify event on the bus carrying only
// execution_id, state and trace_id: the handle. A handle is not a credential, so there is
// nothing to forge: knowing (or making up) one gives no way to complete the step without
// dynamodb:GetItem on the approval keys and states:SendTaskSuccess, which `fleetc approve`
// uses with the operator's own credentials. The workflow's own classes have
// SendTaskSuccess (for their callback steps) and GetItem on the table, so their roles are
// denied every item whose partition key starts with ir.ApprovalKeyPrefix
// (compiler/terraform, IdempotencyClaims): a worker cannot approve its own workflow.
// The recorder logs no execution data, so the token is not in its log group either.

// StartExecutionResource starts the approval recorder and waits for the token it carries.
const StartExecutionResource = "arn:aws:states:::states:startExecution.waitForTaskToken"

// Resources of the recorder's states.
const (
	PutItemResource   = "arn:aws:states:::dynamodb:putItem"
	PutEventsResource = "arn:aws:states:::events:putEvents"
	// SendTaskFailureResource fails the waiting approval when the recorder cannot record or
	// announce it, instead of letting it wait, unannounced, for its whole timeout.
	SendTaskFailureResource = "arn:aws:states:::aws-sdk:sfn:sendTaskFailure"
)

// ErrApprovalNotRequested is the error an approval fails with when its recorder gave up.
const ErrApprovalNotRequested = "fleetc.ApprovalNotRequested"

// RecorderPath is the artifact path of the approval recorder's definition. Workflow names
// have no '/', so no workflow's definition can take it.
const RecorderPath = "statemachines/fleetc/approvals.asl.json"

// recorderInput is what an approval state hands the recorder.
type recorderInput struct {
	Token       string `json:"token.$"`
	ExecutionID string `json:"execution_id.$"`
	State       string `json:"state.$"`
	TraceID     string `json:"trace_id.$"`
	Source      string `json:"source"`
	DetailType  string `json:"detail_type"`
	Timeout     int64  `json:"timeout_seconds"`
}

type startParams struct {
	StateMachineArn string        `json:"StateMachineArn"`
	Input           recorderInput `json:"Input"`
}

// approvalState waits for the token the recorder stores. No HeartbeatSeconds: nobody
// heartbeats while a person decides, so a heartbeat would fail every slow answer. No retry:
// a retry would ask again under a fresh token.
func approvalState(st *ir.Step) *state {
	ev := st.Approval.Notify
	return &state{
		Type:     "Task",
		Comment:  tmpl(fmt.Sprintf("Approval: record the task token out of band and announce %s on the bus; fleetc approve/reject completes it.", ev.DetailType)),
		Resource: StartExecutionResource,
		Parameters: &startParams{
			StateMachineArn: "${" + ir.ApprovalRecorderVar + "}",
			Input: recorderInput{
				Token: "$$.Task.Token", ExecutionID: "$$.Execution.Id", State: "$$.State.Name", TraceID: "$.trace_id",
				Source: tmpl(ev.Source), DetailType: tmpl(ev.DetailType), Timeout: ir.Seconds(st.Timeout),
			},
		},
		TimeoutSeconds: ir.Seconds(st.Timeout),
	}
}

// checkApproval refuses what CreateStateMachine would (S012, S013 of compiler/check).
func checkApproval(w *ir.Workflow, st *ir.Step, ds *diag.Diagnostics) {
	if w.IsExpress() {
		d := ds.Errorf("S013", st.Path+"/approval", "approval %q is in express workflow %q, which cannot wait for a task token", st.Name, w.Name)
		d.Detail = "Set the workflow's type: standard."
	}
	if st.Timeout < time.Second || st.Timeout > ir.TaskTokenMax {
		d := ds.Errorf("S012", st.Path+"/approval/timeout", "approval %q: timeout %ds is outside 1s-365d", st.Name, ir.Seconds(st.Timeout))
		d.Detail = "Step Functions waits for a task token at most one year."
	}
}

// expiryComment says what the recorder's first state computes.
const expiryComment = "The record's expiry: when the recorder started, plus the approval's timeout, plus a grace period (JSONPath has no clock arithmetic)."

// expiryOutput is the JSONata expression of the recorder's Expiry state: its input with
// expires_at (epoch seconds, as a string for DynamoDB's N) = the state's entered time + the
// approval's timeout + ir.ApprovalRecordGrace. The recorder starts after the approval state,
// so the record outlives the task token. The expression cannot fail on the input every
// approval state hands over (a number timeout_seconds), so the Pass state needs no catcher.
func expiryOutput() string {
	return fmt.Sprintf("{%% $merge([$states.input, {'%s': $string($floor($toMillis($states.context.State.EnteredTime) / 1000) + $states.input.timeout_seconds + %d)}]) %%}",
		ir.IdempotencyExpiresAttr, ir.Seconds(ir.ApprovalRecordGrace))
}

// recorder is the approval recorder: work out when the record expires, put the token in the
// idempotency table, then the notify event on the bus; on any failure (after retries) fail
// the waiting approval.
func recorder() *definition {
	const giveUp = "GiveUp"
	retry := []retrier{{
		ErrorEquals: []string{"States.ALL"}, IntervalSeconds: sqsRetryInterval, MaxAttempts: sqsRetryAttempts,
		BackoffRate: backoffRate, MaxDelaySeconds: sqsRetryMaxDelay, JitterStrategy: "FULL",
	}}
	catch := []catcher{{ErrorEquals: []string{"States.ALL"}, ResultPath: "$.error", Next: giveUp}}
	return &definition{
		Comment:       "Approval recorder (generated by fleetc): stores an approval's task token where only fleetc approve reads it, then announces the approval on the bus without it.",
		QueryLanguage: "JSONPath",
		StartAt:       "Expiry",
		States: states{
			{"Expiry", &state{
				Type: "Pass", QueryLanguage: "JSONata", Comment: tmpl(expiryComment), Output: tmpl(expiryOutput()), Next: "Record",
			}},
			{"Record", &state{
				Type: "Task", Resource: PutItemResource,
				Comment: "pk = approval#<execution ARN>, sk = approval#<state>: the handle fleetc approve RUN STEP looks up; worker roles may not touch approval# keys.",
				Parameters: map[string]any{
					"TableName": "${" + ir.IdempotencyTableVar + "}",
					"Item": map[string]any{
						"pk":    map[string]string{"S.$": fmt.Sprintf("States.Format('%s', $.execution_id)", ir.ApprovalPartitionKey("{}"))},
						"sk":    map[string]string{"S.$": fmt.Sprintf("States.Format('%s', $.state)", ir.ApprovalSortKey("{}"))},
						"token": map[string]string{"S.$": "$.token"},
						// The table's TTL: the record goes when its token can no longer be answered.
						ir.IdempotencyExpiresAttr: map[string]string{"N.$": "$." + ir.IdempotencyExpiresAttr},
					},
				},
				ResultPath: "$.recorded", Retry: retry, Catch: catch, Next: "Announce",
			}},
			{"Announce", &state{
				Type: "Task", Resource: PutEventsResource,
				Comment: "The notify event: the handle (execution_id, state), never the token.",
				Parameters: map[string]any{"Entries": []map[string]any{{
					"EventBusName": "${" + ir.BusNameVar + "}",
					"Source.$":     "$.source",
					"DetailType.$": "$.detail_type",
					"Detail": map[string]string{
						"execution_id.$": "$.execution_id", "state.$": "$.state",
						"trace_id.$": "$.trace_id", "timeout_seconds.$": "$.timeout_seconds",
					},
				}}},
				ResultPath: "$.announced", Retry: retry, Catch: catch, End: true,
			}},
			{giveUp, &state{
				Type: "Task", Resource: SendTaskFailureResource,
				Comment: "Fail the waiting approval now rather than at its timeout.",
				Parameters: map[string]string{
					"TaskToken.$": "$.token", "Error": ErrApprovalNotRequested, "Cause.$": "$.error.Cause",
				},
				End: true,
			}},
		},
	}
}
