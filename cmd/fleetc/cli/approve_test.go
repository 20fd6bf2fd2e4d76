package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/recovery"
	"github.com/fleetc/fleetc/compiler"
)

const approvals = "../../../examples/approvals/fleet.yaml"

// approvalFake answers as DynamoDB and Step Functions document (an httptest server asserting
// the exact requests: kumo runs no Step Functions task tokens). GetItem returns token tok
// ("" = no record); the Step Functions answer is sfnCode/sfnBody.
func approvalFake(t *testing.T, tok string, sfnCode int, sfnBody any) (*awsFake, string) {
	fake, url := newAWSFake(t)
	fake.on("DynamoDB_20120810.GetItem", func(map[string]any) (int, any) {
		if tok == "" {
			return 200, map[string]any{}
		}
		return 200, map[string]any{"Item": map[string]any{"token": map[string]any{"S": tok}}}
	})
	fake.on("DynamoDB_20120810.DeleteItem", func(map[string]any) (int, any) { return 200, map[string]any{} })
	for _, op := range []string{"SendTaskSuccess", "SendTaskFailure"} {
		fake.on("AWSStepFunctions."+op, func(map[string]any) (int, any) { return sfnCode, sfnBody })
	}
	return fake, url
}

func TestApproveAndReject(t *testing.T) {
	_, f, ds := compiler.Load(approvals)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	w := f.Workflows[0]
	machine := "arn:aws:states:eu-west-1:" + acct + ":stateMachine:" + w.StateMachineName
	execARN := "arn:aws:states:eu-west-1:" + acct + ":execution:" + w.StateMachineName + ":r-42"
	key := map[string]any{"pk": map[string]any{"S": "approval#" + execARN}, "sk": map[string]any{"S": "approval#Approve"}}

	t.Run("approve by ARN", func(t *testing.T) {
		fake, url := approvalFake(t, "tok-1", 200, map[string]any{})
		code, out, errs := run(t, "approve", execARN, "Approve", "--reason", "order checked", "-f", approvals, "--endpoint", url)
		if code != exitOK || !strings.Contains(out, "Approve approved") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		get := fake.called("DynamoDB_20120810.GetItem")
		if len(get) != 1 || get[0]["TableName"] != f.State.IdempotencyTable || !reflect.DeepEqual(get[0]["Key"], key) || get[0]["ConsistentRead"] != true {
			t.Errorf("GetItem %v, want a consistent read of %v in %s", get, key, f.State.IdempotencyTable)
		}
		ok := fake.called("AWSStepFunctions.SendTaskSuccess")
		var dec recovery.Decision
		if len(ok) == 1 {
			_ = json.Unmarshal([]byte(ok[0]["output"].(string)), &dec)
		}
		if len(ok) != 1 || ok[0]["taskToken"] != "tok-1" || dec != (recovery.Decision{Approved: true, Reason: "order checked"}) {
			t.Errorf("SendTaskSuccess %v", ok)
		}
		del := fake.called("DynamoDB_20120810.DeleteItem")
		if len(del) != 1 || !reflect.DeepEqual(del[0]["Key"], key) || del[0]["ConditionExpression"] != "#t = :t" {
			t.Errorf("DeleteItem %v: the spent token is not dropped", del)
		}
	})

	t.Run("reject by name", func(t *testing.T) {
		fake, url := approvalFake(t, "tok-2", 200, map[string]any{})
		fake.on("AWSStepFunctions.ListStateMachines", func(map[string]any) (int, any) {
			return 200, map[string]any{"stateMachines": []any{map[string]any{"stateMachineArn": machine, "name": w.StateMachineName, "type": "STANDARD", "creationDate": epoch(time.Now())}}}
		})
		code, out, errs := run(t, "reject", "r-42", "Approve", "--reason", "duplicate", "-f", approvals, "--endpoint", url)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		if get := fake.called("DynamoDB_20120810.GetItem"); len(get) != 1 || !reflect.DeepEqual(get[0]["Key"], key) {
			t.Errorf("GetItem %v: the name did not resolve to %s", get, execARN)
		}
		fail := fake.called("AWSStepFunctions.SendTaskFailure")
		if len(fail) != 1 || fail[0]["taskToken"] != "tok-2" || fail[0]["error"] != recovery.ErrRejected || fail[0]["cause"] != "duplicate" {
			t.Errorf("SendTaskFailure %v", fail)
		}
	})

	t.Run("nothing waiting", func(t *testing.T) {
		fake, url := approvalFake(t, "", 200, map[string]any{})
		code, _, errs := run(t, "approve", execARN, "Approve", "-f", approvals, "--endpoint", url)
		if code != exitInvalid || !strings.Contains(errs, "no pending approval") || len(fake.called("AWSStepFunctions.SendTaskSuccess")) != 0 {
			t.Errorf("exit %d, %s", code, errs)
		}
	})

	t.Run("timed out", func(t *testing.T) {
		fake, url := approvalFake(t, "tok-3", 400, map[string]any{"__type": "TaskTimedOut", "message": "Task Timed Out"})
		code, _, errs := run(t, "approve", execARN, "Approve", "-f", approvals, "--endpoint", url)
		if code != exitInvalid || !strings.Contains(errs, "no longer waiting") {
			t.Errorf("exit %d, %s", code, errs)
		}
		if len(fake.called("DynamoDB_20120810.DeleteItem")) != 1 {
			t.Error("the dead token is kept")
		}
	})

	t.Run("record not deleted", func(t *testing.T) {
		fake, url := approvalFake(t, "tok-4", 200, map[string]any{})
		fake.on("DynamoDB_20120810.DeleteItem", func(map[string]any) (int, any) {
			return 400, map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException", "message": "not authorized to perform dynamodb:DeleteItem"}
		})
		code, _, errs := run(t, "approve", execARN, "Approve", "-f", approvals, "--endpoint", url)
		if code != exitInvalid || !strings.Contains(errs, "answered, but could not delete") {
			t.Errorf("exit %d, %s: a kept token is not reported", code, errs)
		}
	})

	t.Run("unknown step", func(t *testing.T) {
		code, _, errs := run(t, "approve", execARN, "Pay", "-f", approvals, "--endpoint", "http://127.0.0.1:1")
		if code != exitInvalid || !strings.Contains(errs, `no approval step "Pay"`) || !strings.Contains(errs, "refund/Approve") {
			t.Errorf("exit %d, %s", code, errs)
		}
	})
}
