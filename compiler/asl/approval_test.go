package asl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// checkApprovalTask asserts an approval state: it hands the recorder the token, waits at
// most a year, and has no heartbeat (nobody heartbeats while a person decides) nor retry (a
// retry would ask again under a new token).
func checkApprovalTask(t *testing.T, where string, s map[string]any) {
	t.Helper()
	params := s["Parameters"].(map[string]any)
	if params["StateMachineArn"] != "${"+ir.ApprovalRecorderVar+"}" {
		t.Errorf("%s: StateMachineArn %v", where, params["StateMachineArn"])
	}
	in := params["Input"].(map[string]any)
	if in["token.$"] != "$$.Task.Token" || in["execution_id.$"] != "$$.Execution.Id" || in["state.$"] != "$$.State.Name" {
		t.Errorf("%s: Input %v does not carry the token and its handle", where, in)
	}
	timeout, _ := s["TimeoutSeconds"].(float64)
	if timeout < 1 || timeout > float64(ir.Seconds(ir.TaskTokenMax)) || in["timeout_seconds"] != timeout {
		t.Errorf("%s: TimeoutSeconds %v (input %v) outside 1 s – 1 year", where, timeout, in["timeout_seconds"])
	}
	if s["HeartbeatSeconds"] != nil || s["Retry"] != nil {
		t.Errorf("%s: approval has HeartbeatSeconds %v / Retry %v", where, s["HeartbeatSeconds"], s["Retry"])
	}
}

// checkRecorderTask asserts the recorder's states: the token reaches the table and nothing
// else but the give-up callback; every other state gives up through GiveUp.
func checkRecorderTask(t *testing.T, name string, s map[string]any) {
	t.Helper()
	b, _ := json.Marshal(s["Parameters"])
	carries := strings.Contains(string(b), `"$.token"`)
	switch s["Resource"] {
	case PutItemResource:
		if !carries {
			t.Errorf("recorder %s does not store the token: %s", name, b)
		}
	case SendTaskFailureResource:
		if !carries {
			t.Errorf("recorder %s does not fail the waiting approval: %s", name, b)
		}
		return
	default:
		if carries {
			t.Errorf("recorder %s (%v) sends the token: %s", name, s["Resource"], b)
		}
	}
	catch, _ := s["Catch"].([]any)
	if len(catch) != 1 || catch[0].(map[string]any)["Next"] != "GiveUp" {
		t.Errorf("recorder %s: Catch %v does not give up through GiveUp", name, catch)
	}
}

// TestApprovalRefused: the generator writes no definition CreateStateMachine would refuse:
// an approval timeout one second outside 1 s – 365 d (S012), an approval in express (S013).
func TestApprovalRefused(t *testing.T) {
	const example = "../../examples/approvals/fleet.yaml"
	for _, c := range []struct {
		timeout time.Duration
		express bool
		code    string
	}{
		{0, false, "S012"}, {time.Second, false, ""},
		{ir.TaskTokenMax, false, ""}, {ir.TaskTokenMax + time.Second, false, "S012"},
		{time.Hour, true, "S013"},
	} {
		f := lower(t, example)
		w := f.Workflows[0]
		st := w.Steps[1]
		if st.Approval == nil {
			t.Fatalf("%s: step 1 is not the approval", example)
		}
		st.Timeout = c.timeout
		if c.express {
			w.Type = "express"
		}
		files, ds := Generate(f)
		var codes []string
		for _, d := range ds {
			if d.Severity == diag.Error {
				codes = append(codes, d.Code)
			}
		}
		if c.code == "" && (len(codes) != 0 || len(files) != 2) {
			t.Errorf("timeout %v: %v, %d files", c.timeout, codes, len(files))
		}
		if c.code != "" && (len(files) != 0 || len(codes) != 1 || codes[0] != c.code) {
			t.Errorf("timeout %v express %v: %v, %d files; want only %s and no file", c.timeout, c.express, codes, len(files), c.code)
		}
	}
}

// TestApprovalOnTimeout: continue catches States.Timeout into the next state (or, as the last
// step, a Succeed state) with the timeout as the step's result; fail leaves it to the Fail state.
func TestApprovalOnTimeout(t *testing.T) {
	for _, c := range []struct {
		on       spec.OnTimeout
		last     bool
		wantNext string // "" : no States.Timeout catcher
	}{{spec.OnTimeoutFail, false, ""}, {spec.OnTimeoutContinue, false, "Pay"}, {spec.OnTimeoutContinue, true, "ApproveTimedOut"}} {
		f := lower(t, "../../examples/approvals/fleet.yaml")
		w := f.Workflows[0]
		w.Steps[1].Approval.OnTimeout = c.on
		if c.last {
			w.Steps = w.Steps[:2]
		}
		files, ds := Generate(f)
		if ds.HasErrors() {
			t.Fatalf("%s last=%v: %v", c.on, c.last, ds)
		}
		checkASL(t, f, files)
		sts := decode(t, files[0].Bytes)["States"].(map[string]any)
		catch := sts["Approve"].(map[string]any)["Catch"].([]any)
		first := catch[0].(map[string]any)
		got := ""
		if first["ErrorEquals"].([]any)[0] == "States.Timeout" {
			got = first["Next"].(string)
			if first["ResultPath"] != "$.steps.Approve" {
				t.Errorf("%s: timeout recorded at %v", c.on, first["ResultPath"])
			}
		}
		if got != c.wantNext {
			t.Errorf("%s last=%v: timeout goes to %q, want %q", c.on, c.last, got, c.wantNext)
		}
		if c.last && sts["ApproveTimedOut"].(map[string]any)["Type"] != "Succeed" {
			t.Errorf("ApproveTimedOut is %v", sts["ApproveTimedOut"])
		}
		if last := catch[len(catch)-1].(map[string]any); last["Next"] != "ApproveFailed" {
			t.Errorf("%s: States.ALL goes to %v", c.on, last["Next"])
		}
	}
}
