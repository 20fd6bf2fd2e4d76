package deploy

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// planFixture is the part of `terraform show -json` Summarize reads: a FIFO change that
// replaces a class queue and its DLQ, an in-place update, a create and a delete.
func planFixture() *tfjson.Plan {
	rc := func(typ, name string, reason tfjson.ActionReason, paths []any, actions ...tfjson.Action) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Address: typ + "." + name, Mode: tfjson.ManagedResourceMode, Type: typ, Name: name,
			ActionReason: reason, Change: &tfjson.Change{Actions: actions, ReplacePaths: paths}}
	}
	return &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		rc("aws_sqs_queue", "solver", tfjson.ActionReasonReplaceBecauseCannotUpdate, []any{[]any{"fifo_queue"}, []any{"name"}}, tfjson.ActionDelete, tfjson.ActionCreate),
		rc("aws_sqs_queue", "solver_dlq", tfjson.ActionReasonReplaceBecauseCannotUpdate, []any{[]any{"fifo_queue"}}, tfjson.ActionDelete, tfjson.ActionCreate),
		rc("aws_cloudwatch_event_target", "solver", "", nil, tfjson.ActionUpdate),
		rc("aws_sqs_queue", "solver_ingress", "", nil, tfjson.ActionCreate),
		rc("aws_dynamodb_table", "idempotency", "", nil, tfjson.ActionDelete),
		rc("aws_sfn_state_machine", "flow", tfjson.ActionReasonReplaceBecauseTainted, nil, tfjson.ActionCreate, tfjson.ActionDelete),
		rc("aws_cloudwatch_event_bus", "fleet", "", nil, tfjson.ActionNoop),
		rc("aws_sqs_queue_policy", "solver", tfjson.ActionReasonDeleteBecauseNoResourceConfig, nil, tfjson.ActionDelete),
		{Address: "data.aws_iam_policy_document.x", Mode: tfjson.DataResourceMode, Type: "aws_iam_policy_document", Name: "x",
			Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}}},
	}}
}

var fixtureGroups = map[string]string{
	"aws_sqs_queue.solver": "class solver", "aws_sqs_queue.solver_dlq": "class solver", "aws_sqs_queue.solver_ingress": "class solver",
	"aws_cloudwatch_event_target.solver": "class solver", "aws_dynamodb_table.idempotency": "state",
	"aws_sfn_state_machine.flow": "workflow flow", "aws_cloudwatch_event_bus.fleet": "bus",
	// No longer generated: its owner comes from the previous inventory (Groups).
	"aws_sqs_queue_policy.solver": "class solver",
}

func TestSummarize(t *testing.T) {
	s := Summarize(planFixture(), fixtureGroups)
	if s.Add != 4 || s.Change != 1 || s.Destroy != 5 {
		t.Errorf("counts: +%d ~%d -%d, want +4 ~1 -5 (as Terraform counts a replacement)", s.Add, s.Change, s.Destroy)
	}
	// The queue policy no longer in the configuration still belongs to its class, as the
	// previous inventory recorded it.
	want := []GroupCount{{Group: "class solver", Create: 1, Update: 1, Replace: 2, Delete: 1}, {Group: "state", Delete: 1}, {Group: "workflow flow", Replace: 1}}
	if len(s.Groups) != len(want) {
		t.Fatalf("groups %+v", s.Groups)
	}
	for i := range want {
		if s.Groups[i] != want[i] {
			t.Errorf("group %d: %+v, want %+v", i, s.Groups[i], want[i])
		}
	}
	var text bytes.Buffer
	s.WriteText(&text)
	for _, line := range []string{
		"  class solver   1 to create, 1 to update, 2 to replace, 1 to delete\n",
		"  delete aws_sqs_queue_policy.solver (class solver) [delete_because_no_resource_config]\n",
		"  replace aws_sqs_queue.solver (class solver): fifo_queue, name forces replacement [replace_because_cannot_update]\n" +
			"      destroys a queue and every message in it; apply needs --allow-replace aws_sqs_queue.solver\n",
		"      destroys a dead-letter queue and every dead-lettered message in it; apply needs --allow-replace aws_sqs_queue.solver_dlq\n",
		"  delete aws_dynamodb_table.idempotency (state)\n      destroys the idempotency table and its claims",
		"  replace aws_sfn_state_machine.flow (workflow flow) [replace_because_tainted]\n      destroys a state machine and its running executions\n\nPlan",
		"Plan: 4 to add, 1 to change, 5 to destroy.\n",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
}

func TestGuard(t *testing.T) {
	s := Summarize(planFixture(), fixtureGroups)
	addrs := func(cs []Change) string {
		var a []string
		for _, c := range cs {
			a = append(a, c.Address)
		}
		return strings.Join(a, " ")
	}
	// The state machine replacement loses no data; the queues and the table do.
	if got := addrs(s.Blocked(nil)); got != "aws_sqs_queue.solver aws_sqs_queue.solver_dlq aws_dynamodb_table.idempotency" {
		t.Errorf("blocked: %s", got)
	}
	if got := addrs(s.Blocked([]string{"aws_sqs_queue.solver", "aws_dynamodb_table.idempotency"})); got != "aws_sqs_queue.solver_dlq" {
		t.Errorf("blocked with two allowed: %s", got)
	}
	if got := s.Blocked([]string{"aws_sqs_queue.solver", "aws_sqs_queue.solver_dlq", "aws_dynamodb_table.idempotency"}); len(got) != 0 {
		t.Errorf("all allowed, still blocked: %v", got)
	}
}

func TestNoChanges(t *testing.T) {
	s := Summarize(&tfjson.Plan{}, nil)
	var b bytes.Buffer
	s.WriteText(&b)
	if s.HasChanges() || !strings.HasPrefix(b.String(), "No changes.") {
		t.Errorf("%v %q", s.HasChanges(), b.String())
	}
}

// TestStreamer: Terraform's -json UI lines become its own progress messages, tagged with
// the class or plane, split across writes anywhere; diagnostics go to their own stream.
func TestStreamer(t *testing.T) {
	var out, diags bytes.Buffer
	s := &streamer{groups: fixtureGroups, out: &out, diags: &diags}
	lines := `{"@level":"info","@message":"Terraform 1.11.0","type":"version"}
{"@level":"info","@message":"aws_sqs_queue.solver: Creating...","type":"apply_start","hook":{"resource":{"addr":"aws_sqs_queue.solver"},"action":"create"}}
{"@level":"info","@message":"aws_sqs_queue.solver: Still creating... [10s elapsed]","type":"apply_progress","hook":{"resource":{"addr":"aws_sqs_queue.solver"},"elapsed_seconds":10}}
{"@level":"info","@message":"aws_sqs_queue.solver: Creation complete after 12s [id=x]","type":"apply_complete","hook":{"resource":{"addr":"aws_sqs_queue.solver"},"elapsed_seconds":12}}
{"@level":"error","@message":"Error: boom","type":"diagnostic","diagnostic":{"severity":"error","summary":"boom","detail":"line one\nline two","address":"aws_dynamodb_table.idempotency"}}
{"@level":"info","@message":"Apply complete! Resources: 1 added, 0 changed, 0 destroyed.","type":"change_summary"}
`
	for i := 0; i < len(lines); i += 7 {
		s.Write([]byte(lines[i:min(i+7, len(lines))]))
	}
	s.flush()
	want := "[class solver] aws_sqs_queue.solver: Creating...\n" +
		"[class solver] aws_sqs_queue.solver: Still creating... [10s elapsed]\n" +
		"[class solver] aws_sqs_queue.solver: Creation complete after 12s [id=x]\n" +
		"Apply complete! Resources: 1 added, 0 changed, 0 destroyed.\n"
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
	if diags.String() != "Error: boom (aws_dynamodb_table.idempotency)\n  line one\n  line two\n" {
		t.Errorf("diagnostics: %q", diags.String())
	}
}

// What Terraform writes last without a newline is not lost at the end of the apply, however
// short: a warning (no address, no detail), then a one-character line that is not JSON.
func TestStreamerFlushesTheLastLine(t *testing.T) {
	var out, diags bytes.Buffer
	s := &streamer{groups: fixtureGroups, out: &out, diags: &diags}
	s.Write([]byte(`{"type":"diagnostic","diagnostic":{"severity":"warning","summary":"deprecated"}}` + "\n"))
	s.Write([]byte("x"))
	if diags.String() != "Warning: deprecated\n" {
		t.Errorf("before flush: %q", diags.String())
	}
	s.flush()
	if diags.String() != "Warning: deprecated\nx\n" || out.Len() != 0 {
		t.Errorf("after flush: diagnostics %q, progress %q", diags.String(), out.String())
	}
}

var update = flag.Bool("update", false, "rewrite testdata/plan-*.md; read the diff before committing")

// The plan as a pull-request comment: the fixture's stateful replacements make the guard's
// verdict blocking, and each is listed with what it destroys and the flag apply needs.
func TestWriteMarkdown(t *testing.T) {
	for _, tc := range []struct {
		golden string
		s      *Summary
	}{
		{"testdata/plan-fixture.md", Summarize(planFixture(), fixtureGroups)},
		{"testdata/plan-empty.md", Summarize(&tfjson.Plan{}, nil)},
	} {
		var b bytes.Buffer
		if err := tc.s.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(tc.golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(tc.golden)
		if err != nil {
			t.Fatalf("%v (go test ./compiler/deploy -run TestWriteMarkdown -update)", err)
		}
		if b.String() != string(want) {
			t.Errorf("%s differs (go test ./compiler/deploy -run TestWriteMarkdown -update, then read the diff):\n%s", tc.golden, b.String())
		}
	}
}

// TestGroupsFromInventories: an address the configuration generates belongs to the owner its
// inventory records; one it no longer generates to the owner the inventory plan and apply
// kept from the previous run (written and read back here), never to a guess from its name;
// one neither knows is "removed".
func TestGroupsFromInventories(t *testing.T) {
	set := generate(t, "testdata/e2e.yaml")
	dir := t.TempDir()
	if prev, err := ReadInventory(dir); err != nil || prev != nil {
		t.Fatalf("no inventory yet: %v %v", prev, err)
	}
	if err := WriteInventory(dir, set); err != nil {
		t.Fatal(err)
	}
	prev, err := ReadInventory(dir)
	if err != nil || len(prev) != len(set.Inventory()) {
		t.Fatalf("inventory read back: %d of %d resources, %v", len(prev), len(set.Inventory()), err)
	}
	// The previous run generated a class that is gone now; its name starts like solver's.
	prev = append(prev, artifact.Resource{Address: "aws_sqs_queue.solver_archive", Type: "aws_sqs_queue", Part: "class archivist"})
	groups, err := Groups(set, prev)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"aws_sqs_queue.solver":           "class solver",
		"aws_dynamodb_table.idempotency": "state",
		"aws_sqs_queue.solver_archive":   "class archivist",
		"aws_sqs_queue.solver_replay":    "removed",
		`aws_sqs_queue.solver["x"]`:      "class solver",
	} {
		if got := groupOf(groups, addr); got != want {
			t.Errorf("%s: group %q, want %q", addr, got, want)
		}
	}
}

// One change is a change: the text and the markdown say so.
func TestOneChange(t *testing.T) {
	s := Summarize(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{{Address: "aws_sqs_queue.solver", Mode: tfjson.ManagedResourceMode,
		Type: "aws_sqs_queue", Name: "solver", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionCreate}}}}}, fixtureGroups)
	var text, md bytes.Buffer
	s.WriteText(&text)
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !s.HasChanges() || !strings.Contains(text.String(), "Plan: 1 to add, 0 to change, 0 to destroy.") || !strings.Contains(md.String(), "changes to apply") {
		t.Errorf("one create:\n%s\n%s", text.String(), md.String())
	}
}

// The markdown lists the emulator's omissions only for an emulator plan that has some.
func TestMarkdownEmulatorOmissions(t *testing.T) {
	om := []Omission{{Gap: "cloudwatch-alarms", Address: "aws_cloudwatch_metric_alarm.x", What: "left out: no alarms on the emulator"}}
	for _, tc := range []struct {
		endpoint  string
		omissions []Omission
		want      string
	}{
		{"http://127.0.0.1:4566", om, "<details><summary>Emulator kumo at http://127.0.0.1:4566 leaves out or changes (1)</summary>\n\n" +
			"- [cloudwatch-alarms] `aws_cloudwatch_metric_alarm.x`: left out: no alarms on the emulator\n"},
		{"http://127.0.0.1:4566", nil, ""},
		{"", om, ""},
	} {
		s := Summarize(planFixture(), fixtureGroups)
		s.Endpoint, s.Emulator, s.EmulatorOmissions = tc.endpoint, Kumo, tc.omissions
		var b bytes.Buffer
		if err := s.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); tc.want != "" && !strings.Contains(got, tc.want) || tc.want == "" && strings.Contains(got, "Emulator") {
			t.Errorf("endpoint %q, %d omissions:\n%s", tc.endpoint, len(tc.omissions), got)
		}
	}
}

// One stateful replacement is enough to head the markdown with apply's refusal.
func TestMarkdownHeadlineOneBlocked(t *testing.T) {
	plan := planFixture()
	var kept []*tfjson.ResourceChange
	for _, rc := range plan.ResourceChanges {
		if rc.Address == "aws_dynamodb_table.idempotency" || rc.Address == "aws_cloudwatch_event_target.solver" {
			kept = append(kept, rc)
		}
	}
	plan.ResourceChanges = kept
	s := Summarize(plan, fixtureGroups)
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "### 🛑 fleetc plan: apply refuses 1 stateful replacement(s) or deletion(s) until named with --allow-replace\n"; !strings.HasPrefix(md.String(), want) {
		t.Errorf("markdown starts\n%.200s\nwant\n%s", md.String(), want)
	}
}
