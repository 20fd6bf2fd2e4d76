package terraform

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// mixedDispatch has one lambda class reached both ways in one workflow: through its queue
// with a task token (a standard step) and synchronously (EXPRESS fan-out children).
const mixedDispatch = `version: 1
fleet: mx
region: us-east-1
bus: { name: mx }
worker: { image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0, eks: { cluster: agents, keda_operator_role: "arn:aws:iam::111122223333:role/keda-operator" } }
events:
  e: { version: 1, source: mx.app, detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } } }
agents:
  both: { runtime: lambda, step: { p95: 1s, max: 20s }, handler: { exec: [/app/both] } }
  only-sync: { runtime: lambda, step: { p95: 1s, max: 20s }, handler: { exec: [/app/sync] } }
  queued: { runtime: eks, step: { p95: 1s, max: 20s }, handler: { exec: [/app/q] } }
workflows:
  flow:
    steps:
      - { agent: both }
      - { agent: queued }
      - fan_out: { items: $.xs, agent: both, execution_type: EXPRESS }
      - fan_out: { items: $.ys, agent: only-sync, execution_type: EXPRESS }
`

// TestSynchronousStepIAM (issue 7 item 4): the state machine role may invoke exactly the
// functions it calls synchronously and send only to the queues it dispatches to; a class
// answers task tokens only of workflows that send it some; and a class reached both ways
// does not make Terraform see a cycle (terraform validate).
func TestSynchronousStepIAM(t *testing.T) {
	f := irtest.LoadSource(t, mixedDispatch)
	h := parseFiles(t, generate(t, f), "workflows.tf", "agent_both.tf", "agent_only-sync.tf")
	st := h.statements(t, "flow_sfn")
	if got := st["InvokeClassFunctions"]; got.actions != `["lambda:InvokeFunction"]` || got.resources != "[aws_lambda_function.both.arn, aws_lambda_function.only_sync.arn]" {
		t.Errorf("invoke statement = %+v", got)
	}
	if got := st["DispatchToClassQueues"]; got.resources != "[aws_sqs_queue.both.arn, aws_sqs_queue.queued.arn]" {
		t.Errorf("dispatch statement = %+v", got)
	}
	if _, ok := h.statements(t, "only_sync_worker")["TaskTokenCallbacks"]; ok {
		t.Error("a class only invoked synchronously may answer task tokens")
	}
	if got := h.statements(t, "both_worker")["TaskTokenCallbacks"].resources; strings.Contains(got, "aws_sfn_state_machine.flow") || !strings.Contains(got, ":stateMachine:mx-flow/*") {
		t.Errorf("callbacks of a class the machine also invokes = %s; want the ARN spelled out (no reference cycle)", got)
	}
	sm := h.block(t, "resource", "aws_sfn_state_machine", "flow")
	def := squash(h.src(sm.Body.Attributes["definition"].Expr))
	if !strings.Contains(def, "function_arn_both = aws_lambda_function.both.arn function_arn_only_sync = aws_lambda_function.only_sync.arn queue_url_both") || strings.Contains(def, "queue_url_only_sync") {
		t.Errorf("definition variables = %s", def)
	}

	root := writeOut(t, f)
	checkFmtAndSchema(t, filepath.Join(root, Dir))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("%v", err)
	}
}
