package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// taskStateMachine sends contract-shaped task messages (shape 2) to the
// worker queue with .waitForTaskToken. kumo's context object models only
// $$.Task.Token, so execution_id rides the input.
//
// HeartbeatSeconds is always set: kumo v0.33.1 crashes (nil timer) on a
// SendTaskHeartbeat for a task without it, where AWS accepts the call.
func taskStateMachine(t *testing.T, e *env, timeoutSeconds, heartbeatSeconds int) (*sfn.Client, string) {
	t.Helper()
	task := map[string]any{
		"Type":     "Task",
		"Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
		"Parameters": map[string]any{
			"QueueUrl": e.queueURL,
			"MessageBody": map[string]any{
				"TaskToken.$": "$$.Task.Token", "execution_id.$": "$.execution_id", "state": "Researcher",
				"trace_id.$": "$.trace_id", "detail.$": "$.detail",
			},
		},
		"ResultPath": "$.result",
		"End":        true,
	}
	if timeoutSeconds > 0 {
		task["TimeoutSeconds"] = timeoutSeconds
	}
	task["HeartbeatSeconds"] = heartbeatSeconds
	def, _ := json.Marshal(map[string]any{"StartAt": "Researcher", "States": map[string]any{"Researcher": task}})
	c := awsconfig.SFN(kumotest.Require(t))
	out, err := c.CreateStateMachine(context.Background(), &sfn.CreateStateMachineInput{
		Name: aws.String(kumotest.Name(t, "sm")), Definition: aws.String(string(def)),
		RoleArn: aws.String("arn:aws:iam::" + kumotest.Account + ":role/fleet-sfn"), Type: sfntypes.StateMachineTypeStandard,
	})
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	return c, aws.ToString(out.StateMachineArn)
}

func startExec(t *testing.T, c *sfn.Client, sm, name, key string, spec stepSpec) string {
	t.Helper()
	spec.TraceID = key
	in, _ := json.Marshal(map[string]any{"execution_id": "exec-" + name, "trace_id": key, "detail": spec})
	out, err := c.StartExecution(context.Background(), &sfn.StartExecutionInput{StateMachineArn: aws.String(sm), Name: aws.String(name), Input: aws.String(string(in))})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ExecutionArn)
}

func waitExec(t *testing.T, c *sfn.Client, arn string, timeout time.Duration) *sfn.DescribeExecutionOutput {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := c.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != sfntypes.ExecutionStatusRunning || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Step Functions callbacks: a task completes with SendTaskSuccess carrying
// the handler output; a task that times out while the worker runs is
// detected by the heartbeat (stale token), its step cancelled, the message
// deleted and never retried, and nothing dead-lettered.
func TestFaultSFNCallbackAndStaleToken(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{visibility: 3, heartbeat: 1})
	c, okSM := taskStateMachine(t, e, 0, 30)
	_, slowSM := taskStateMachine(t, e, 3, 2)
	okArn := startExec(t, c, okSM, kumotest.Name(t, "ok"), "sfn-ok", stepSpec{Seq: 7})
	staleArn := startExec(t, c, slowSM, kumotest.Name(t, "stale"), "sfn-stale", stepSpec{SleepMS: 8000})
	e.startWorker(5 * time.Second)

	ok := waitExec(t, c, okArn, 20*time.Second)
	if ok.Status != sfntypes.ExecutionStatusSucceeded || !strings.Contains(aws.ToString(ok.Output), `"key":"sfn-ok"`) {
		t.Errorf("ok execution: %s output %s", ok.Status, aws.ToString(ok.Output))
	}
	stale := waitExec(t, c, staleArn, 20*time.Second)
	if stale.Status != sfntypes.ExecutionStatusFailed || aws.ToString(stale.Error) != "States.Timeout" {
		t.Errorf("stale execution: %s %s", stale.Status, aws.ToString(stale.Error))
	}
	waitFor(t, "the queue to empty", 20*time.Second, func() bool {
		v, inf := e.queueDepth(e.queueURL)
		return v+inf == 0
	})
	time.Sleep(4 * time.Second) // a retry would have reappeared by now
	calls, done := e.fx.snapshot()
	if calls["sfn-stale"] != 1 {
		t.Errorf("stale task ran %d times, want 1 (never retried)", calls["sfn-stale"])
	}
	if done["sfn-stale"] != 0 {
		t.Errorf("stale task's step was not cancelled: committed %d", done["sfn-stale"])
	}
	if calls["sfn-ok"] != 1 || done["sfn-ok"] != 1 {
		t.Errorf("ok task: calls %d committed %d", calls["sfn-ok"], done["sfn-ok"])
	}
	if dl := e.drainDLQ(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
	if v, inf := e.queueDepth(e.queueURL); v+inf != 0 {
		t.Errorf("queue not empty: %d/%d", v, inf)
	}
	t.Logf("sfn: ok=%s stale=%s (%s); stale task attempts=%d committed=%d", ok.Status, stale.Status, aws.ToString(stale.Error), calls["sfn-stale"], done["sfn-stale"])
}
