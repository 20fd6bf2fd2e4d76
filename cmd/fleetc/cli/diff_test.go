package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const researcherFIFO = "    ordering: { fifo: true, group_by: conversation_id }\n    step: { p95: 90s, max: 10m }"

func fifoOff(t *testing.T) (base, head string) {
	t.Helper()
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, head = filepath.Join(dir, "base.yaml"), filepath.Join(dir, "head.yaml")
	if !strings.Contains(string(src), researcherFIFO) {
		t.Fatal("research example changed; update the test")
	}
	changed := strings.Replace(string(src), researcherFIFO, "    step: { p95: 90s, max: 10m }", 1)
	if err := os.WriteFile(base, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return base, head
}

func TestDiffExitCodes(t *testing.T) {
	base, head := fifoOff(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"diff", research, research}, 0},
		{[]string{"diff", research, research, "--fail-on", "any"}, 0},
		// The head introduces an error (E020 below): a blocking verdict exits 1 by default.
		{[]string{"diff", base, head}, 1},
		{[]string{"diff", base, head, "--fail-on", "none"}, 0},
		{[]string{"diff", base, head, "--exit-zero"}, 0},
		{[]string{"diff", base, head, "--fail-on", "blocking"}, 1},
		// No contract change in this pair: breaking and contract do not trip.
		{[]string{"diff", base, head, "--fail-on", "breaking"}, 0},
		{[]string{"diff", base, head, "--fail-on", "contract"}, 0},
		// Without the E020 (head → base resolves it) the verdict is "needs review": exit 0.
		{[]string{"diff", head, base}, 0},
		{[]string{"diff", base, head, "--fail-on", "replacement"}, 1},
		{[]string{"diff", base, head, "--fail-on", "security"}, 1},
		// FIFO off leaves the fan-out step without the conversation id its completion event
		// requires: the head introduces E020.
		{[]string{"diff", base, head, "--fail-on", "diagnostic"}, 1},
		{[]string{"diff", base, base, "--fail-on", "diagnostic"}, 0},
		// The other way round the head resolves that error: an improvement, not a failure.
		{[]string{"diff", head, base, "--fail-on", "diagnostic"}, 0},
		{[]string{"diff", base, head, "--fail-on", "breaking,any"}, 1},
		{[]string{"diff", base}, 2},
		{[]string{"diff", base, head, "--fail-on", "everything"}, 2},
		{[]string{"diff", base, head, "--format", "html"}, 2},
		{[]string{"diff", base, filepath.Join(t.TempDir(), "missing.yaml")}, 2},
	} {
		code, out, errs := run(t, tc.args...)
		if code != tc.code {
			t.Errorf("fleetc %s: exit %d, want %d\n%s%s", strings.Join(tc.args, " "), code, tc.code, out, errs)
		}
	}
	if _, out, _ := run(t, "diff", research, research); !strings.Contains(out, ": no changes\n") {
		t.Errorf("identical specs should say no changes:\n%s", out)
	}
}

func TestDiffFormats(t *testing.T) {
	base, head := fifoOff(t)
	_, out, _ := run(t, "diff", base, head, "--format", "json")
	var doc struct {
		FormatVersion int `json:"format_version"`
		Changes       []struct {
			Category, Severity, Subject, Summary string
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.FormatVersion != 2 || len(doc.Changes) == 0 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	for _, c := range doc.Changes {
		if c.Category == "" || c.Severity == "" || c.Subject == "" || c.Summary == "" {
			t.Errorf("change without category, severity, subject or summary: %+v", c)
		}
	}
	_, out, _ = run(t, "diff", base, head, "--format", "github-actions")
	if !strings.Contains(out, "::warning file="+head+",line=95,col=3,title=fleetc diff%3A replacement (class researcher)::aws_sqs_queue.researcher will be destroyed and re-created%0A") {
		t.Errorf("github-actions annotations:\n%s", out)
	}
	_, out, _ = run(t, "diff", base, head, "--format", "markdown")
	if !strings.HasPrefix(out, "### 🛑 fleetc diff: blocking: 1 change to fix before merge") || !strings.Contains(out, "```mermaid\nflowchart LR\n") {
		t.Errorf("markdown:\n%s", out)
	}
}

// --base REF reads the spec as it was at a revision of the repository, with git, no checkout.
func TestDiffAgainstGitRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // git resolves the repository from the working directory
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	spec := filepath.Join(dir, "fleets", "fleet.yaml")
	if err := os.MkdirAll(filepath.Dir(spec), 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	if err := os.WriteFile(spec, src, 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "base")
	changed := strings.Replace(string(src), researcherFIFO, "    step: { p95: 90s, max: 10m }", 1)
	if err := os.WriteFile(spec, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "head")

	code, out, errs := run(t, "diff", "--base", "HEAD~1", spec, "--fail-on", "replacement")
	if code != 1 || !strings.Contains(out, "aws_sqs_queue.researcher will be destroyed and re-created") {
		t.Errorf("diff --base HEAD~1: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "HEAD~1:fleets/fleet.yaml") {
		t.Errorf("the base side should be named REF:FILE:\n%s", out)
	}
	if code, out, _ := run(t, "diff", "--base", "HEAD", spec); code != 0 || !strings.Contains(out, "no changes") {
		t.Errorf("diff --base HEAD of a committed file: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "diff", "--base", "no-such-ref", spec); code != 2 || !strings.Contains(errs, "no-such-ref") {
		t.Errorf("unknown revision: exit %d, stderr %q", code, errs)
	}
	// A spec new in the pull request: the base is empty and everything is added.
	added := filepath.Join(dir, "fleets", "new.yaml")
	if err := os.WriteFile(added, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "diff", "--base", "HEAD", added, "--format", "json")
	var doc struct {
		Base      string
		Changes   []struct{ Category, Severity, Summary string }
		Resources []struct{ Action string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("new spec: exit %d %v\n%s%s", code, err, out, errs)
	}
	if doc.Base != "HEAD:fleets/new.yaml (absent)" || len(doc.Resources) == 0 {
		t.Errorf("new spec: base %q, %d resources", doc.Base, len(doc.Resources))
	}
	for _, rc := range doc.Resources {
		if rc.Action != "create" {
			t.Errorf("new spec: a resource is %s, not create", rc.Action)
		}
	}
	var events int
	for _, c := range doc.Changes {
		if c.Category == "contract" && strings.Contains(c.Summary, "event-added") {
			events++
		}
		if c.Severity == "error" {
			t.Errorf("new spec: an error: %+v", c)
		}
	}
	if events != 2 {
		t.Errorf("new spec: %d events added, want 2: %+v", events, doc.Changes)
	}
}

// A contract change that breaks consumers blocks (exit 1 without flags) and trips
// --fail-on breaking; one that needs care (an optional field removed) does neither.
func TestDiffContractExitCodes(t *testing.T) {
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = "        ttl_seconds: { type: integer, minimum: 1 }\n"
	if !strings.Contains(string(src), ttl) {
		t.Fatal("research example changed; update the test")
	}
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := write("base.yaml", string(src))
	loosened := write("loosened.yaml", strings.Replace(string(src), ttl, "        ttl_seconds: { type: integer }\n", 1))
	dropped := write("dropped.yaml", strings.Replace(string(src), ttl, "", 1))
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"diff", base, loosened}, 1},
		{[]string{"diff", base, loosened, "--fail-on", "breaking"}, 1},
		{[]string{"diff", base, loosened, "--fail-on", "none"}, 0},
		{[]string{"diff", base, dropped}, 0},
		{[]string{"diff", base, dropped, "--fail-on", "breaking"}, 0},
		{[]string{"diff", base, dropped, "--fail-on", "contract"}, 1},
	} {
		if code, out, errs := run(t, tc.args...); code != tc.code {
			t.Errorf("fleetc %s: exit %d, want %d\n%s%s", strings.Join(tc.args[1:], " "), code, tc.code, out, errs)
		}
	}
}

// TestDiffCapacity: fleetc diff shows what a traffic change does to the quotas and the bill,
// in text and JSON. The quota it breaks has a rule (S006), whose new error blocks (exit 1),
// so it is not reported twice as a capacity warning.
func TestDiffCapacity(t *testing.T) {
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, head := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "head.yaml")
	// 500 → 1,000 conversations a minute: 800 → 1,600 concurrent conversations open a Map Run
	// each, over the 1,000 open Map Runs an account allows.
	changed := strings.Replace(string(src), "concurrent_conversations: 800", "concurrent_conversations: 1600", 1)
	changed = strings.Replace(changed, "conversations_per_minute: 500", "conversations_per_minute: 1000", 1)
	if changed == string(src) {
		t.Fatal("research example changed; update the test")
	}
	if err := os.WriteFile(base, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "diff", base, head)
	for _, want := range []string{
		"diagnostic error: traffic: new error S006: 1,600 concurrent conversations each open a Map Run; an account allows 1,000 open Map Runs",
		"Capacity, head against base:",
		"first quota to break: Distributed Map open Map Runs (fleet) at 1.25× → Distributed Map open Map Runs (fleet) at 0.62×",
		"estimated cost/month: $2,974 → $5,947.9",
		"Distributed Map open Map Runs (fleet): 80.0 % → 160.0 % of quota (800 → 1,600 map runs, BROKEN)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s%s", want, out, errs)
		}
	}
	if code != 1 || strings.Contains(out, "capacity warning") {
		t.Errorf("diff: exit %d, want 1 from S006 alone:\n%s", code, out)
	}
	if code, _, _ := run(t, "diff", base, head, "--fail-on", "capacity"); code != 0 {
		t.Errorf("--fail-on capacity: exit %d, want 0 (no capacity finding beside the rule's)", code)
	}
	_, out, _ = run(t, "diff", base, head, "--format", "json", "--exit-zero")
	var doc struct {
		Capacity struct {
			Cost struct{ Before, After float64 } `json:"monthly_cost_usd"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Capacity.Cost.After != 2*doc.Capacity.Cost.Before || doc.Capacity.Cost.Before == 0 {
		t.Errorf("json capacity: %v\n%s", err, out)
	}
}
