package asl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/verifytest"
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

// jsonata evaluates a Step Functions JSONata expression ({% … %}) with the reference JSONata
// engine (the jsonata package tools/install.sh installs beside asl-validator), $states bound
// to states, and returns its JSON result.
func jsonata(t *testing.T, expr string, states map[string]any) map[string]any {
	t.Helper()
	node, err := verifytest.Tool("node")
	verifytest.SkipIfMissing(t, err)
	root, err := verifytest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "tools", "node", "node_modules", "jsonata")
	if _, err := os.Stat(lib); err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: %v", verifytest.ErrToolMissing, err))
		t.Fatal(err)
	}
	body, opened := strings.CutPrefix(expr, "{%")
	body, closed := strings.CutSuffix(body, "%}")
	if !opened || !closed {
		t.Fatalf("%q is not a JSONata expression", expr)
	}
	in, _ := json.Marshal(map[string]any{"expr": body, "states": states})
	cmd := exec.Command(node, "-e", `const jsonata = require(process.argv[1]);
const {expr, states} = JSON.parse(require("fs").readFileSync(0, "utf8"));
jsonata(expr).evaluate({}, {states}).then(r => process.stdout.write(JSON.stringify(r)), e => { console.error(e.message); process.exit(1); });`, lib)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jsonata %s: %v\n%s", body, err, out)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("jsonata result %s: %v", out, err)
	}
	return res
}

// TestApprovalRecordExpires: the recorder stores each approval with the idempotency table's
// TTL attribute, set to when it started + the approval's timeout + ir.ApprovalRecordGrace,
// so an approval nobody answers does not stay in the table forever. The Expiry state's
// JSONata runs on the reference engine, as Step Functions would run it.
func TestApprovalRecordExpires(t *testing.T) {
	f := lower(t, "../../examples/approvals/fleet.yaml")
	files, ds := Generate(f)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	def := decode(t, files[len(files)-1].Bytes)
	sts := def["States"].(map[string]any)
	expiry, _ := sts[def["StartAt"].(string)].(map[string]any)
	if expiry["Type"] != "Pass" || expiry["QueryLanguage"] != "JSONata" || expiry["Next"] != "Record" {
		t.Fatalf("the recorder does not start by computing the expiry: StartAt %v = %v", def["StartAt"], expiry)
	}
	item := sts["Record"].(map[string]any)["Parameters"].(map[string]any)["Item"].(map[string]any)
	want := map[string]any{"N.$": "$." + ir.IdempotencyExpiresAttr}
	if !reflect.DeepEqual(item[ir.IdempotencyExpiresAttr], want) {
		t.Errorf("Record's item %v: %s is %v, want %v", item, ir.IdempotencyExpiresAttr, item[ir.IdempotencyExpiresAttr], want)
	}

	entered := time.Date(2026, 3, 1, 10, 0, 0, 250e6, time.UTC)
	const timeout = 3 * 24 * 3600
	input := map[string]any{"token": "tok", "execution_id": "arn:x", "state": "Approve", "trace_id": "t", "timeout_seconds": timeout}
	got := jsonata(t, expiry["Output"].(string), map[string]any{
		"input":   input,
		"context": map[string]any{"State": map[string]any{"EnteredTime": entered.Format(time.RFC3339Nano), "Name": "Expiry"}},
	})
	wantAt := strconv.FormatInt(entered.Unix()+timeout+ir.Seconds(ir.ApprovalRecordGrace), 10)
	if got[ir.IdempotencyExpiresAttr] != wantAt {
		t.Errorf("%s = %v, want %s (entered %s + %ds + %v)", ir.IdempotencyExpiresAttr, got[ir.IdempotencyExpiresAttr], wantAt, entered, timeout, ir.ApprovalRecordGrace)
	}
	for k, v := range input {
		if got[k] != v && !(k == "timeout_seconds" && got[k] == float64(timeout)) {
			t.Errorf("Expiry dropped or changed input %s: %v, want %v", k, got[k], v)
		}
	}
}
