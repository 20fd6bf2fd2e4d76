package callback

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/google/go-cmp/cmp"
)

// TestE2EStandardWorkflowCallback is the end-to-end token loop in kumo: a
// Standard workflow dispatches a step to an SQS queue with
// sqs:sendMessage.waitForTaskToken, a consumer (raw SQS receive here;
// the full fleet-worker can take its place) does the work and calls
// SendTaskSuccess, and the execution resumes and SUCCEEDS with the
// output placed by ResultPath.
func TestE2EStandardWorkflowCallback(t *testing.T) {
	h := newHarness(t, 60, 0)
	input := `{"execution_id":"conv-8842","trace_id":"conv-8842-step-7","detail":{"conversation_id":"8842","step":7}}`
	arn := h.start(t, "e2e-1", input)

	tm := h.receive(t)
	if tm.TaskToken == "" || tm.State != "Researcher" || tm.TraceID != "conv-8842-step-7" || tm.ExecutionID != "conv-8842" {
		t.Fatalf("task message %+v", tm)
	}
	if d := cmp.Diff(`{"conversation_id":"8842","step":7}`, compact(t, tm.Detail)); d != "" {
		t.Fatalf("detail (-want +got):\n%s", d)
	}

	output := []byte(`{"summary":"three sources found","tokens":812}`)
	if err := h.cb.Success(context.Background(), tm.TaskToken, output); err != nil {
		t.Fatal(err)
	}
	out := h.wait(t, arn)
	if out.Status != sfntypes.ExecutionStatusSucceeded {
		t.Fatalf("status %s error %q cause %q", out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
	}
	var got, want any
	if err := json.Unmarshal([]byte(aws.ToString(out.Output)), &got); err != nil {
		t.Fatalf("output %q: %v", aws.ToString(out.Output), err)
	}
	_ = json.Unmarshal([]byte(`{"execution_id":"conv-8842","trace_id":"conv-8842-step-7",
		"detail":{"conversation_id":"8842","step":7},
		"result":{"summary":"three sources found","tokens":812},"after":"resumed"}`), &want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("execution output (-want +got):\n%s", d)
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
