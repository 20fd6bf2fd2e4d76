package review

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/lifecycle"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/spec/diag"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the review cases; read the diff before committing")

func research(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// edit applies old→new replacements to the spec, failing when one does not apply.
func edit(t *testing.T, src string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("edit: %q not in the spec", pairs[i])
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

func review(t *testing.T, base, head string) *Report {
	t.Helper()
	r, err := Compare(Load("base.yaml", []byte(base)), Load("head.yaml", []byte(head)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// find returns the changes of a category whose summary contains s.
func find(r *Report, cat Category, s string) []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Category == cat && strings.Contains(c.Summary+" "+c.Detail, s) {
			out = append(out, c)
		}
	}
	return out
}

const researcherFIFO = "    ordering: { fifo: true, group_by: conversation_id }\n    step: { p95: 90s, max: 10m }"

func TestReviewCases(t *testing.T) {
	base := research(t)
	type want struct {
		cat      Category
		sev      Severity
		contains string
		line     int // spec line of the finding's position; 0 to skip
	}
	for _, tc := range []struct {
		name string
		head string
		want []want
	}{
		{
			name: "FIFO toggled off replaces the class queues and their DLQ",
			head: edit(t, base, researcherFIFO, "    step: { p95: 90s, max: 10m }"),
			want: []want{
				{Replacement, Warning, "aws_sqs_queue.researcher will be destroyed and re-created", 95},
				{Replacement, Warning, "forced by fifo_queue removed; name changed; it destroys a queue and every message in it", 0},
				{Replacement, Warning, "aws_sqs_queue.researcher_ingress will be destroyed", 0},
				{Replacement, Info, "aws_sqs_queue_redrive_allow_policy.researcher_dlq will be destroyed and re-created", 0},
				{Replacement, Warning, "aws_sqs_queue.researcher_dlq will be destroyed and re-created", 0},
				{Replacement, Info, "aws_cloudwatch_metric_alarm.researcher_", 0}, // age, dlq_depth, stalled: alarm_name changed
				{Replacement, Info, "researcher_pipe will be destroyed", 0},       // the pipe's role and policy
				{Replacement, Info, "aws_pipes_pipe.researcher will be destroyed", 0},
				{Replacement, Info, "aws_sqs_queue_policy.researcher_ingress will be destroyed", 0},
				{Posture, Warning, "ordering.fifo: true → false", 95},
				{Posture, Warning, "ordering.group_by: conversation_id → (none)", 95},
				{Security, Warning, `new statement RuleDelivery: Allow "sqs:SendMessage" by Service "events.amazonaws.com" on aws_sqs_queue.researcher.arn when ArnEquals aws:SourceArn aws_cloudwatch_event_rule.researcher.arn`, 0},
				{Diagnostic, Error, "new error E020", 101},
				{Rollout, Info, "new pods roll out one pod at a time", 0},
				{Rollout, Info, "updated in place: new executions start on the new definition", 0},
			},
		},
		{
			name: "moving the eks classes to another cluster replaces their Pod Identity associations",
			head: edit(t, base, "cluster: agents-prod ", "cluster: agents-next "),
			want: []want{
				{Replacement, Info, "aws_eks_pod_identity_association.researcher_worker will be destroyed and re-created", 95},
				{Replacement, Info, "forced by cluster_name changed", 0},
				{Replacement, Info, "aws_eks_pod_identity_association.coder_worker will be destroyed and re-created", 110},
				{Security, Warning, `condition StringEquals aws:RequestTag/eks-cluster-name now also allows "agents-next"`, 0},
			},
		},
		{
			name: "renaming a class deletes its queue",
			head: strings.ReplaceAll(edit(t, base, "  coder:\n    description", "  programmer:\n    description"), "agent: coder", "agent: programmer"),
			want: []want{
				{Replacement, Warning, "aws_sqs_queue.coder will be destroyed", 110},
				{Replacement, Warning, "aws_sqs_queue.coder_dlq will be destroyed", 0},
				{Replacement, Warning, "aws_sqs_queue.coder_ingress will be destroyed", 0},
				{Replacement, Info, "will be destroyed it is no longer generated", 0}, // the class's rule, alarms, roles, pipe
				{Security, Warning, "new statement ", 0},                              // the programmer's roles and queue policy
				{Security, Warning, "condition ArnEquals aws:SourceArn now also allows aws_cloudwatch_event_rule.programmer.arn", 0},
				{Security, Warning, "(ReadQueueDepth) resources added: aws_sqs_queue.programmer.arn", 0},
				{Security, Warning, "(DispatchToClassQueues) resources added: aws_sqs_queue.programmer.arn", 0},
				{Posture, Info, "class programmer added", 0},
				{Posture, Info, "class coder removed", 110},
				{Posture, Info, "steps.Code.agent: coder → programmer", 0},
				{Rollout, Info, "updated in place: new executions start on the new definition", 0},
			},
		},
		{
			name: "classic retry defaults hide an outage",
			head: edit(t, base, "delivery: { attempts: 24, max_age: 1h }", "delivery: { attempts: 185, max_age: 24h }"),
			want: []want{
				{Posture, Warning, "delivery.attempts: 24 → 185", 0},
				{Posture, Warning, "delivery.max_age: 1h → 1d", 0},
				{Diagnostic, Warning, "new warning E006: delivery retries 185 times over 24h", 0},
			},
		},
		{
			name: "a new emitted event widens the worker's PutEvents condition",
			head: edit(t, base, "    emits: [agent.step.completed]\n    ordering: { fifo: true, group_by: conversation_id }\n    step: { p95: 3m",
				"    emits: [agent.step.completed, agent.step.requested]\n    ordering: { fifo: true, group_by: conversation_id }\n    step: { p95: 3m"),
			want: []want{
				{Security, Warning, `condition StringEquals events:detail-type now also allows "agent.step.requested"`, 110},
				// Consumers of agent.step.requested may now read coder's claim-checked outputs.
				{Security, Warning, `(ReadClaimCheckPayloads) resources added: "${aws_s3_bucket.claimcheck.arn}/outputs/coder/*"`, 0},
				{Posture, Info, "emits: [agent.step.completed] → [agent.step.completed, agent.step.requested]", 0},
				{Rollout, Info, "new pods roll out one pod at a time", 0},
			},
		},
		{
			name: "renaming the idempotency table loses its records",
			head: edit(t, base, "worker:\n", "state: { idempotency_table: research-idem-v2 }\n\nworker:\n"),
			want: []want{
				{Replacement, Warning, "aws_dynamodb_table.idempotency will be destroyed and re-created", 0},
				{Replacement, Warning, "the idempotency table and its claims (completed steps may run again)", 0},
				{Rollout, Info, "new pods roll out one pod at a time", 0},
			},
		},
		{
			name: "dropping the archive loses replay history",
			head: edit(t, base, "  archive: { retention: 7d }\n", ""),
			want: []want{
				{Replacement, Warning, "an event archive and the events kept for replay", 0},
				{Posture, Warning, "bus.archive: true → false", 0},
				{Posture, Info, "bus.archive.retention: 7d → 0 (none)", 0},
			},
		},
		{
			name: "removing a fallback and the cap",
			head: edit(t, base, "    fallbacks: [sonnet-overflow]\n", "", "    max_in_flight: 800\n", ""),
			want: []want{
				{Posture, Warning, "fallbacks: [sonnet-overflow] → []", 0},
				{Posture, Warning, "max_in_flight: 800 → 0", 0},
				{Diagnostic, Warning, "new warning M001", 72},
				{Rollout, Info, "new pods roll out one pod at a time", 0},
			},
		},
		{
			name: "a removed optional event field needs care",
			head: edit(t, base, "        ttl_seconds: { type: integer, minimum: 1 }\n", ""),
			want: []want{
				{Contract, Warning, `optional property "ttl_seconds" of detail removed`, 51},
				{Contract, Warning, "consumed by coder, researcher; dispatched by workflow conversation; version 1 not bumped", 0},
			},
		},
		{
			name: "a removed bound breaks the consumers still on the old contract",
			head: edit(t, base, "        ttl_seconds: { type: integer, minimum: 1 }\n", "        ttl_seconds: { type: integer }\n"),
			want: []want{
				{Contract, Error, "minimum of detail.ttl_seconds removed (was 1) (bound-loosened, breaks forward)", 51},
			},
		},
		{
			name: "a loosened bound with a version bump still breaks, as a warning",
			head: edit(t, base, "        ttl_seconds: { type: integer, minimum: 1 }\n", "        ttl_seconds: { type: integer }\n",
				"  agent.step.requested:\n    version: 1", "  agent.step.requested:\n    version: 2"),
			want: []want{
				{Contract, Warning, "minimum of detail.ttl_seconds removed (was 1) (bound-loosened, breaks forward)", 0},
				{Contract, Warning, "version 1 → 2", 0},
			},
		},
		{
			name: "an optional field is a safe change",
			head: edit(t, base, "        ttl_seconds: { type: integer, minimum: 1 }\n",
				"        ttl_seconds: { type: integer, minimum: 1 }\n        priority: { type: integer }\n"),
			want: []want{
				{Contract, Info, "(property-added, safe)", 0},
			},
		},
		{
			name: "a new KEDA operator role is a new trust principal",
			head: edit(t, base, "role/keda-operator ", "role/keda-operator-v2 "),
			want: []want{
				{Security, Warning, `IAM widened in data.aws_iam_policy_document.keda_scaler_trust (KEDAOperator) principals added: AWS "arn:aws:iam::111122223333:role/keda-operator-v2"`, 0},
			},
		},
		{
			name: "more receives before the DLQ",
			head: edit(t, base, "max_receives: 3", "max_receives: 6"),
			want: []want{
				{Posture, Warning, "queue.max_receives: 3 → 6", 0},
				{Rollout, Info, "new pods roll out one pod at a time", 0},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := review(t, base, tc.head)
			// Every change is expected: a finding no want names is a failure too.
			for _, c := range r.Changes {
				if !slices.ContainsFunc(tc.want, func(w want) bool {
					return w.cat == c.Category && w.sev == c.Severity && strings.Contains(c.Summary+" "+c.Detail, w.contains)
				}) {
					t.Errorf("unexpected %s %s change: %s: %s | %s", c.Category, c.Severity, c.Subject, c.Summary, c.Detail)
				}
			}
			golden(t, "testdata/cases/"+slug(tc.name)+".md", r)
			for _, w := range tc.want {
				got := slices.DeleteFunc(find(r, w.cat, w.contains), func(c Change) bool { return c.Severity != w.sev })
				if len(got) == 0 {
					var all []string
					for _, c := range r.Changes {
						all = append(all, string(c.Category)+" "+string(c.Severity)+" "+c.Summary+" | "+c.Detail)
					}
					t.Errorf("no %s %s change containing %q; changes:\n%s", w.cat, w.sev, w.contains, strings.Join(all, "\n"))
					continue
				}
				if w.line != 0 && (got[0].Position == nil || got[0].Position.Start.Line != w.line) {
					t.Errorf("%q: position %v, want line %d", w.contains, got[0].Position, w.line)
				}
			}
		})
	}
}

// Safe contract changes are listed but do not trip --fail-on breaking.
func TestSafeChangesDoNotFail(t *testing.T) {
	base := research(t)
	head := edit(t, base, "        ttl_seconds: { type: integer, minimum: 1 }\n",
		"        ttl_seconds: { type: integer, minimum: 1 }\n        priority: { type: integer }\n")
	r := review(t, base, head)
	if r.Has(FailBreaking) || r.Has(FailBlocking) || r.Has(string(Contract)) {
		t.Errorf("an added optional field counts as breaking: %+v", r.Changes)
	}
	if len(find(r, Contract, "(property-added, safe)")) == 0 {
		t.Errorf("the safe change is not listed: %+v", r.Changes)
	}
}

func TestIdenticalSpecs(t *testing.T) {
	r := review(t, research(t), research(t))
	if len(r.Changes) != 0 || len(r.Resources) != 0 || r.Verdict() != "no changes" {
		t.Fatalf("identical specs: %d changes, %d resources, verdict %q", len(r.Changes), len(r.Resources), r.Verdict())
	}
	var b bytes.Buffer
	if err := r.Render(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["format_version"] != float64(FormatVersion) || doc["changes"] == nil {
		t.Errorf("json report: %s", b.String())
	}
	if _, ok := doc["changes"].([]any); !ok {
		t.Errorf("changes must be an array even when empty: %s", b.String())
	}
}

// A head that does not load is still reviewed for its diagnostics, and says what it skipped.
func TestBrokenHead(t *testing.T) {
	r := review(t, research(t), "version: 1\nfleet: [\n")
	if r.Incomplete == "" || len(find(r, Diagnostic, "new error P001")) == 0 {
		t.Fatalf("broken head: incomplete %q, changes %+v", r.Incomplete, r.Changes)
	}
	if !strings.HasPrefix(r.Verdict(), "blocking") {
		t.Errorf("verdict %q", r.Verdict())
	}
}

// Every resource type fleetc generates has its force-new arguments on record.
func TestForceNewCoversEveryEmittedType(t *testing.T) {
	for _, ex := range []string{"research-fleet", "async-tools", "minimal", "../compiler/terraform/testdata/rollout"} {
		src, err := os.ReadFile("../../examples/" + ex + "/fleet.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s := Load(ex, src)
		if s.Files == nil {
			t.Fatalf("%s: %v", ex, s.Diags)
		}
		for _, r := range moduleResources(s.Files) {
			if !lifecycle.Known(r.Type) && !r.Data {
				t.Errorf("%s: resource type %s has no force-new entry in compiler/lifecycle", ex, r.Type)
			}
		}
	}
}

// The pull-request comment for the example change in docs/review.md: FIFO off plus a loosened bound.
func TestMarkdownGolden(t *testing.T) {
	base := research(t)
	head := edit(t, base, researcherFIFO, "    step: { p95: 90s, max: 10m }",
		"        ttl_seconds: { type: integer, minimum: 1 }\n", "        ttl_seconds: { type: integer }\n")
	r := review(t, base, head)
	var b bytes.Buffer
	if err := r.Render(&b, "markdown"); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/fifo-off.md"
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./compiler/review -update)", err)
	}
	if b.String() != string(want) {
		t.Errorf("markdown differs from %s (go test ./compiler/review -update, then read the diff):\n%s", golden, b.String())
	}
	// The docs show this comment, quoted; it must be the golden, not an older rendering.
	// -update rewrites the quoted block (the run of "> " lines that starts with the verdict).
	checkQuoted(t, docPage, string(want))
	// The diagram GitHub will render parses with mermaid's own parser.
	_, rest, ok := strings.Cut(b.String(), "```mermaid\n")
	diagram, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no mermaid block in the markdown report")
	}
	file := filepath.Join(t.TempDir(), "affected.mmd")
	if err := os.WriteFile(file, []byte(diagram), 0o644); err != nil {
		t.Fatal(err)
	}
	err = verifytest.Mermaid(file)
	verifytest.SkipIfMissing(t, err)
	if err != nil {
		t.Error(err)
	}
}

// docPage is the page that quotes the golden pull-request comment.
const docPage = "../../docs/review.md"

// checkQuoted asserts that doc quotes golden (each line prefixed with "> "); with -update it
// replaces the quoted comment in doc first.
func checkQuoted(t *testing.T, doc, golden string) {
	t.Helper()
	src, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var quoted strings.Builder
	for _, l := range strings.Split(strings.TrimRight(golden, "\n"), "\n") {
		quoted.WriteString(strings.TrimRight("> "+l, " ") + "\n")
	}
	text := string(src)
	if *update {
		start := strings.Index(text, "> ### ")
		if start < 0 {
			t.Fatalf("%s quotes no pull-request comment", doc)
		}
		end := start
		for end < len(text) && strings.HasPrefix(text[end:], ">") {
			nl := strings.IndexByte(text[end:], '\n')
			if nl < 0 {
				end = len(text)
				break
			}
			end += nl + 1
		}
		text = text[:start] + quoted.String() + text[end:]
		if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(text, quoted.String()) {
		t.Errorf("%s does not quote the golden as it is now (go test ./compiler/review -update)", doc)
	}
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func slug(name string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// golden compares the report's pull-request comment with a file (-update rewrites it).
func golden(t *testing.T, path string, r *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := r.Render(&b, "markdown"); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./compiler/review -update)", err)
	}
	if b.String() != string(want) {
		t.Errorf("the comment differs from %s (go test ./compiler/review -update, then read the diff):\n%s", path, b.String())
	}
}

// A removed condition and an added principal on an existing statement are reported; the same
// documents on both sides report nothing.
func TestSecurityConditionAndPrincipal(t *testing.T) {
	doc := func(principals string, condition bool) *Side {
		attrs := []artifact.Attr{
			{Path: "statement.0.sid", Src: `"AssumeRole"`},
			{Path: "statement.0.effect", Src: `"Allow"`},
			{Path: "statement.0.actions", Src: `["sts:AssumeRole"]`},
			{Path: "statement.0.principals.0.type", Src: `"Service"`},
			{Path: "statement.0.principals.0.identifiers", Src: "[" + principals + "]"},
		}
		if condition {
			attrs = append(attrs,
				artifact.Attr{Path: "statement.0.condition.0.test", Src: `"StringEquals"`},
				artifact.Attr{Path: "statement.0.condition.0.variable", Src: `"aws:SourceAccount"`},
				artifact.Attr{Path: "statement.0.condition.0.values", Src: `["111122223333"]`})
		}
		set := moduleSet(t, artifact.Block{Kind: artifact.KindData, Type: "aws_iam_policy_document", Name: "bus_trust", File: "terraform/bus.tf", Attrs: attrs})
		return &Side{Name: "x", Fleet: &ir.Fleet{}, Files: set}
	}
	const cond = true
	security := func(b, h *Side) []string {
		var out []string
		for _, c := range securityChanges(moduleResources(b.Files), moduleResources(h.Files), b, h) {
			out = append(out, c.Summary+": "+c.Detail)
		}
		return out
	}
	base := doc(`"pipes.amazonaws.com"`, cond)
	if got := security(base, doc(`"pipes.amazonaws.com"`, cond)); len(got) != 0 {
		t.Errorf("same documents: %q", got)
	}
	want := []string{`IAM widened in data.aws_iam_policy_document.bus_trust (AssumeRole): principals added: Service "scheduler.amazonaws.com"; condition removed: StringEquals aws:SourceAccount`}
	if got := security(base, doc(`"pipes.amazonaws.com", "scheduler.amazonaws.com"`, false)); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Narrowing is not a widening: the reverse change reports nothing.
	if got := security(doc(`"pipes.amazonaws.com", "scheduler.amazonaws.com"`, false), base); len(got) != 0 {
		t.Errorf("narrowed: %q", got)
	}
}

// A diagnostic on both sides is the same one when its code, subject and message are, even if
// its line and its index in a list moved: a step inserted before the one S003 is about.
func TestMovedDiagnosticIsNotNew(t *testing.T) {
	src, err := os.ReadFile("../../cmd/fleetc/cli/testdata/predict.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := edit(t, strings.ReplaceAll(string(src), "FLEET", "moved"), "        timeout: 5m\n", "        timeout: 5m\n        heartbeat: 1m\n")
	head := edit(t, base, "    steps:\n", "    steps:\n      - name: Prepare\n        agent: solver\n        timeout: 5m\n")
	r := review(t, base, head)
	if !slices.ContainsFunc(Load("base.yaml", []byte(base)).Diags, func(d *diag.Diagnostic) bool { return d.Code == "S003" }) {
		t.Fatal("the base has no S003 to move")
	}
	if got := find(r, Diagnostic, "S003"); len(got) != 0 {
		t.Errorf("the moved S003 is reported: %+v", got)
	}
	if len(find(r, Posture, "step order: [Solve] → [Prepare, Solve]")) != 1 {
		t.Errorf("the inserted step is not reported: %+v", r.Changes)
	}
}

// TestCapacityDelta: a traffic change moves the model policy's token use from 45 % to 112.5 %
// of its tokens_per_minute, makes that quota the first to break, and multiplies the
// estimated bill (model tokens included) by the same 2.5, in every format, from
// compiler/capacity's arithmetic.
func TestCapacityDelta(t *testing.T) {
	tokens := "    model: claude-haiku-then-sonnet\n    handler: { exec: [\"/app/researcher\"] }\n"
	base := edit(t, research(t), tokens, tokens+"    traffic: { tokens_per_step: 400 }\n")
	head := edit(t, base, "conversations_per_minute: 500", "conversations_per_minute: 1250")
	r := review(t, base, head)
	d := r.Capacity
	if d == nil {
		t.Fatal("no capacity delta")
	}
	i := slices.IndexFunc(d.Quotas, func(q capacity.QuotaDelta) bool {
		return q.Name == "model tokens per minute" && q.Scope == "claude-haiku-then-sonnet"
	})
	if i < 0 || d.Quotas[i].Before == nil || d.Quotas[i].After == nil {
		t.Fatalf("no token quota delta: %+v", d.Quotas)
	}
	// researcher: 75 steps/s × 400 tokens × 60 = 1.8M of 4M tokens/min; ×2.5 = 4.5M.
	if q := d.Quotas[i]; q.Before.ShareOfLimit != 0.45 || q.After.ShareOfLimit != 1.125 {
		t.Errorf("token quota share %v → %v, want 0.45 → 1.125", q.Before.ShareOfLimit, q.After.ShareOfLimit)
	}
	if b := d.FirstQuotaToBreak; b == nil || b.Before == nil || b.After == nil ||
		b.Before.Name != "Distributed Map open Map Runs" || b.After.Name != "model tokens per minute" {
		t.Errorf("first quota to break: %+v", d.FirstQuotaToBreak)
	}
	if c := d.Cost; c == nil || c.Before == nil || c.After == nil || math.Abs(*c.After-2.5**c.Before) > 1e-6**c.After {
		t.Errorf("monthly cost: %+v, want ×2.5", d.Cost)
	}
	line := "model tokens per minute (claude-haiku-then-sonnet): 45.0 % → 112.5 % of quota (1,800,000 → 4,500,000 tokens/min, BROKEN)"
	for _, f := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := r.Render(&b, f); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{line, "first quota to break: Distributed Map open Map Runs (fleet) at 1.25× → model tokens per minute (claude-haiku-then-sonnet) at 0.89×",
			// $2,974 of AWS requests, plus researcher's 75 steps/s × 400 tokens × 2,592,000 s a
			// month at claude-haiku-4-5's $1 per million input tokens: $77,760; ×2.5 at the head.
			"estimated cost/month: $80,734 → $201,834.9", "conversations per minute: 500 → 1,250"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s lacks %q:\n%s", f, want, b.String())
			}
		}
	}
	var b bytes.Buffer
	if err := r.Render(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Capacity struct {
			Quotas []struct {
				Name  string `json:"name"`
				After struct {
					Share float64 `json:"share_of_limit"`
				} `json:"after"`
			} `json:"quotas"`
			Cost struct{ Before, After float64 } `json:"monthly_cost_usd"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Capacity.Quotas) == 0 || doc.Capacity.Quotas[0].Name != "model tokens per minute" || doc.Capacity.Quotas[0].After.Share != 1.125 ||
		doc.Capacity.Cost.After <= doc.Capacity.Cost.Before {
		t.Errorf("json capacity: %s", b.String())
	}

	// A change that moves no traffic moves no figure.
	if r := review(t, base, edit(t, base, "max_receives: 3", "max_receives: 6")); !r.Capacity.Empty() {
		t.Errorf("a DLQ threshold change moved capacity: %q", r.Capacity.Lines())
	}
}

// A quota the head's traffic breaks that no rule checks (Lambda concurrency) is a capacity
// warning; one a rule checks (the token budget, S011) is that rule's new error instead; a move
// that breaks nothing is no finding, only the capacity section, which --fail-on capacity does
// not count.
func TestCapacityFindings(t *testing.T) {
	triage, err := os.ReadFile("../../examples/express-triage/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 600 conversations × 4 steps a minute of ~3 s lambda steps: 120 concurrent executions; ×10
	// is 1,200, over the account's 1,000.
	lambda := string(triage) + "traffic:\n  conversations_per_minute: 600\n  steps_per_conversation: 4\n"
	r := review(t, lambda, edit(t, lambda, "conversations_per_minute: 600", "conversations_per_minute: 6000"))
	got := find(r, Capacity, "Lambda concurrent executions (fleet) breaks at the head's traffic: 1,200 of 1,000 executions")
	if len(got) != 1 || got[0].Severity != Warning || got[0].Position == nil || !r.Has(string(Capacity)) {
		t.Errorf("broken Lambda concurrency: %+v", r.Changes)
	}
	tokens := "    model: claude-haiku-then-sonnet\n    handler: { exec: [\"/app/researcher\"] }\n"
	base := edit(t, research(t), tokens, tokens+"    traffic: { tokens_per_step: 400 }\n")
	r = review(t, base, edit(t, base, "conversations_per_minute: 500", "conversations_per_minute: 1250"))
	if len(find(r, Capacity, "model tokens per minute")) != 0 || len(find(r, Diagnostic, "S011")) != 1 {
		t.Errorf("broken token quota: want S011's new error, no capacity warning: %+v", r.Changes)
	}
	r = review(t, base, edit(t, base, "conversations_per_minute: 500", "conversations_per_minute: 600"))
	if len(r.Changes) != 0 || r.Capacity.Empty() || r.Has(string(Capacity)) || r.Verdict() != "safe: capacity moves, nothing else changes" {
		t.Errorf("a move that breaks nothing: %q %+v %q", r.Verdict(), r.Changes, r.Capacity.Lines())
	}
	// Neither side sized (no traffic): no capacity section at all.
	noTraffic := edit(t, base, "traffic:\n  conversations_per_minute: 500\n  steps_per_conversation: 15\n  step_duration: 90s\n  concurrent_conversations: 800\n", "")
	if r := review(t, noTraffic, edit(t, noTraffic, "max_receives: 3", "max_receives: 6")); !r.Capacity.Empty() {
		t.Errorf("fleets without traffic: %q", r.Capacity.Lines())
	}
}

// A workflow step is one posture change when it appears or goes (its own settings are not
// listed): news when added, a warning when removed, since executions in flight that reach it
// fail.
func TestPostureStepAddedAndRemoved(t *testing.T) {
	src, err := os.ReadFile("../../cmd/fleetc/cli/testdata/predict.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := strings.ReplaceAll(string(src), "FLEET", "steps")
	head := edit(t, base, "    steps:\n", "    steps:\n      - name: Prepare\n        agent: solver\n        timeout: 5m\n")
	for _, tc := range []struct {
		base, head, summary string
		sev                 Severity
	}{
		{base, head, "steps.Prepare: (none) → a step on solver", Info},
		{head, base, "steps.Prepare: a step on solver → (none)", Warning},
	} {
		r := review(t, tc.base, tc.head)
		got := find(r, Posture, "steps.Prepare")
		if len(got) != 1 || got[0].Summary != tc.summary || got[0].Severity != tc.sev {
			t.Errorf("want one %s %q, got %+v", tc.sev, tc.summary, got)
		}
	}
}

// Each posture rule judges its own direction: a rise of delivery.attempts warns, a fall
// informs; a setting that appears (group_by from none) is a change of ordering, a warning.
func TestPostureRules(t *testing.T) {
	row := func(name string) rule {
		for _, s := range classSettings {
			if s.name == name {
				return s.worse
			}
		}
		t.Fatalf("no class setting %s", name)
		return nil
	}
	for _, tc := range []struct {
		field    string
		old, new value
		want     Severity
	}{
		{"delivery.attempts", intValue(24), intValue(185), Warning},
		{"delivery.attempts", intValue(185), intValue(24), Info},
		{"queue.visibility", durValue(time.Minute), durValue(time.Second), Warning},
		{"queue.visibility", durValue(time.Second), durValue(time.Minute), Info},
		{"step.heartbeat", durValue(time.Minute), durValue(0), Warning},
		{"step.heartbeat", durValue(0), durValue(time.Minute), Info},
		{"ordering.group_by", strValue(""), strValue("conversation_id"), Warning},
		{"step.max", durValue(time.Minute), durValue(time.Hour), Info},
	} {
		if got, _ := judge("class x", fieldChange{Field: tc.field, Old: tc.old, New: tc.new, worse: row(tc.field)}); got != tc.want {
			t.Errorf("%s %s → %s: %s, want %s", tc.field, tc.old.text, tc.new.text, got, tc.want)
		}
	}
}
