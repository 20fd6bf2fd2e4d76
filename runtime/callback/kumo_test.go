package callback

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// taskMessage is message shape 2 of the runtime config contract: what a
// .waitForTaskToken Task puts on a worker queue.
type taskMessage struct {
	TaskToken   string          `json:"TaskToken"`
	ExecutionID string          `json:"execution_id"`
	State       string          `json:"state"`
	TraceID     string          `json:"trace_id"`
	Detail      json.RawMessage `json:"detail"`
}

// dispatchDefinition is a Standard workflow whose Dispatch state sends a
// contract-shaped task message to queueURL and waits for the token, then
// a Pass state records that the workflow resumed.
//
// kumo's context object models only $$.Task.Token, so execution_id rides
// the execution input here; generated state machines use $$.Execution.Id.
func dispatchDefinition(queueURL string, timeoutSeconds, heartbeatSeconds int) string {
	task := map[string]any{
		"Type":     "Task",
		"Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
		"Parameters": map[string]any{
			"QueueUrl": queueURL,
			"MessageBody": map[string]any{
				"TaskToken.$":    "$$.Task.Token",
				"execution_id.$": "$.execution_id",
				"state":          "Researcher",
				"trace_id.$":     "$.trace_id",
				"detail.$":       "$.detail",
			},
		},
		"ResultPath": "$.result",
		"Next":       "Done",
	}
	if timeoutSeconds > 0 {
		task["TimeoutSeconds"] = timeoutSeconds
	}
	if heartbeatSeconds > 0 {
		task["HeartbeatSeconds"] = heartbeatSeconds
	}
	def := map[string]any{
		"Comment": "fleetc callback test",
		"StartAt": "Researcher",
		"States": map[string]any{
			"Researcher": task,
			"Done":       map[string]any{"Type": "Pass", "Result": "resumed", "ResultPath": "$.after", "End": true},
		},
	}
	b, _ := json.Marshal(def)
	return string(b)
}

type harness struct {
	sfn      *sfn.Client
	sqs      *sqs.Client
	cb       *Client
	queueURL string
	smARN    string
}

func newHarness(t *testing.T, timeoutSeconds, heartbeatSeconds int) *harness {
	t.Helper()
	cfg := kumotest.Require(t)
	_, url := kumotest.Queue(t, cfg, "cb", false, nil)
	h := &harness{sfn: awsconfig.SFN(cfg), sqs: awsconfig.SQS(cfg), queueURL: url}
	h.cb = New(h.sfn)
	out, err := h.sfn.CreateStateMachine(context.Background(), &sfn.CreateStateMachineInput{
		Name:       aws.String(kumotest.Name(t, "sm")),
		Definition: aws.String(dispatchDefinition(url, timeoutSeconds, heartbeatSeconds)),
		RoleArn:    aws.String("arn:aws:iam::" + kumotest.Account + ":role/fleet-sfn"),
		Type:       sfntypes.StateMachineTypeStandard,
	})
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	h.smARN = aws.ToString(out.StateMachineArn)
	t.Cleanup(func() {
		_, _ = h.sfn.DeleteStateMachine(context.Background(), &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(h.smARN)})
	})
	return h
}

// start begins an execution and returns its ARN.
func (h *harness) start(t *testing.T, name, input string) string {
	t.Helper()
	out, err := h.sfn.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(h.smARN), Name: aws.String(name), Input: aws.String(input),
	})
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return aws.ToString(out.ExecutionArn)
}

// receive long-polls the worker queue for one task message and deletes it.
func (h *harness) receive(t *testing.T) taskMessage {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := h.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.queueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		m := out.Messages[0]
		var tm taskMessage
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &tm); err != nil {
			t.Fatalf("task message %q: %v", aws.ToString(m.Body), err)
		}
		if _, err := h.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(h.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatalf("DeleteMessage: %v", err)
		}
		return tm
	}
	t.Fatal("no task message arrived within 10s")
	return taskMessage{}
}

// wait polls until the execution leaves RUNNING.
func (h *harness) wait(t *testing.T, arn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := h.sfn.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("DescribeExecution: %v", err)
		}
		if out.Status != sfntypes.ExecutionStatusRunning {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s still RUNNING after 10s", arn)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKumoFailure(t *testing.T) {
	h := newHarness(t, 0, 0)
	arn := h.start(t, "fail-1", `{"execution_id":"e","trace_id":"t","detail":{}}`)
	tm := h.receive(t)
	if err := h.cb.Failure(context.Background(), tm.TaskToken, "Agent.InvalidInput", "missing field query"); err != nil {
		t.Fatal(err)
	}
	out := h.wait(t, arn)
	if out.Status != sfntypes.ExecutionStatusFailed || aws.ToString(out.Error) != "Agent.InvalidInput" || aws.ToString(out.Cause) != "missing field query" {
		t.Fatalf("status %s error %q cause %q", out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
	}
	// The token is closed now: a second callback is stale.
	if err := h.cb.Failure(context.Background(), tm.TaskToken, "x", "y"); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("second failure: %v, want ErrStaleToken", err)
	}
}

func TestKumoStaleTokens(t *testing.T) {
	h := newHarness(t, 1, 0) // TimeoutSeconds: 1
	ctx := context.Background()

	// Never-issued token: TaskDoesNotExist.
	err := h.cb.Success(ctx, "00000000-0000-0000-0000-000000000000", []byte(`{}`))
	var ste *StaleTokenError
	if !errors.As(err, &ste) || ste.Code != "TaskDoesNotExist" || !errors.Is(err, ErrStaleToken) {
		t.Fatalf("unknown token: %v", err)
	}

	// A worker slower than TimeoutSeconds: the task times out, and its
	// late SendTaskSuccess reports TaskTimedOut.
	arn := h.start(t, "slow-1", `{"execution_id":"e","trace_id":"t","detail":{}}`)
	tm := h.receive(t)
	out := h.wait(t, arn)
	if out.Status != sfntypes.ExecutionStatusFailed || aws.ToString(out.Error) != "States.Timeout" {
		t.Fatalf("status %s error %q, want FAILED States.Timeout", out.Status, aws.ToString(out.Error))
	}
	err = h.cb.Success(ctx, tm.TaskToken, []byte(`{"late":true}`))
	if !errors.As(err, &ste) || ste.Code != "TaskTimedOut" || ste.Op != "SendTaskSuccess" {
		t.Fatalf("late success: %v, want TaskTimedOut", err)
	}
	if err := h.cb.Heartbeat(ctx, tm.TaskToken); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("late heartbeat: %v", err)
	}
}

func TestKumoHeartbeatKeepsTaskAlive(t *testing.T) {
	h := newHarness(t, 0, 1) // HeartbeatSeconds: 1
	arn := h.start(t, "hb-1", `{"execution_id":"e","trace_id":"t","detail":{}}`)
	tm := h.receive(t)
	var hbErrs []error
	stop := h.cb.StartHeartbeat(context.Background(), tm.TaskToken, 300*time.Millisecond, func(err error) { hbErrs = append(hbErrs, err) })
	time.Sleep(1600 * time.Millisecond) // longer than HeartbeatSeconds
	stop()
	stop() // idempotent
	if len(hbErrs) != 0 {
		t.Fatalf("heartbeat errors: %v", hbErrs)
	}
	if err := h.cb.Success(context.Background(), tm.TaskToken, []byte(`{"ok":1}`)); err != nil {
		t.Fatalf("success after heartbeats: %v", err)
	}
	if out := h.wait(t, arn); out.Status != sfntypes.ExecutionStatusSucceeded {
		t.Fatalf("status %s error %q", out.Status, aws.ToString(out.Error))
	}
}
