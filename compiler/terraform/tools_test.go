package terraform

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/schemas/jobs"
)

// allFiles parses every generated top-level .tf file.
func allFiles(t *testing.T, files []artifact.File) *hclFile {
	t.Helper()
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".tf") && strings.HasPrefix(f.Path, Dir+"/") && !strings.Contains(strings.TrimPrefix(f.Path, Dir+"/"), "/") {
			names = append(names, strings.TrimPrefix(f.Path, Dir+"/"))
		}
	}
	return parseFiles(t, files, names...)
}

// items splits a tuple's source into its elements' sources.
func items(tuple string) []string {
	tuple = strings.TrimSuffix(strings.TrimPrefix(squash(tuple), "["), "]")
	var out []string
	for _, p := range strings.Split(tuple, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// conditionValues is the value list a statement's conditions give one variable.
func conditionValues(conds, variable string) []string {
	for _, c := range strings.Split(conds, "; ") {
		if f := strings.SplitN(c, " ", 3); len(f) == 3 && f[1] == variable {
			return items(f[2])
		}
	}
	return nil
}

// agentSids are the statements of the agent side of the async tools (agentSide): the tools
// role's, and those an llm class gets for the async classes it names.
var agentSids = []string{"CreateAndReadJobs", "ListOwnersJobs", "RequestJobs"}

// TestToolsRoleSharesNothingWithWorkers: no agent side of the async tools (the tools role;
// the agent-side statements of an llm class's role) can do anything a worker role's own
// statements allow: no (action, resource) pair in common, and where both may PutEvents on
// the bus, the detail-types they may publish are disjoint. It also pins what the tools role
// and the llm class's agent side are allowed (exactly the request events of the classes
// named, and its own jobs), and that the jobs table expires records and has the owner index.
func TestToolsRoleSharesNothingWithWorkers(t *testing.T) {
	f := example(t, "async-tools")
	h := allFiles(t, generate(t, f))
	tools := h.statements(t, "async_tools")
	agents := map[string]map[string]statement{"async_tools": tools}
	workers := map[string]map[string]statement{}
	for _, a := range f.Agents {
		n := local(a.Name) + "_worker"
		agents[n], workers[n] = map[string]statement{}, map[string]statement{}
		for sid, s := range h.statements(t, n) {
			if slices.Contains(agentSids, sid) {
				agents[n][sid] = s
			} else {
				workers[n][sid] = s
			}
		}
	}
	for an, as := range agents {
		for wn, ws := range workers {
			sharesNothing(t, an, as, wn, ws)
		}
	}
	want := map[string]string{
		"CreateAndReadJobs": `["dynamodb:GetItem", "dynamodb:PutItem"] [aws_dynamodb_table.jobs.arn] ForAllValues:StringLike dynamodb:LeadingKeys ["JOB#*"]`,
		"ListOwnersJobs":    `["dynamodb:Query"] ["${aws_dynamodb_table.jobs.arn}/index/by_owner"] ForAllValues:StringLike dynamodb:LeadingKeys ["OWNER#*"]`,
		"WriteFunctionLogs": `["logs:CreateLogStream", "logs:PutLogEvents"] ["${aws_cloudwatch_log_group.async_tools.arn}:*"] `,
		"ReadOwnConfig":     `["s3:GetObject"] ["${aws_s3_bucket.claimcheck.arn}/config/tools/tools/*"] `,
		"RequestJobs":       `["events:PutEvents"] [aws_cloudwatch_event_bus.fleet.arn] StringEquals events:detail-type ["CdkSynthRequested"]; StringEquals events:source ["com.cheatcoders.agents"]`,
	}
	if len(tools) != len(want) {
		t.Errorf("tools role has %d statements, want %d", len(tools), len(want))
	}
	for sid, w := range want {
		s := tools[sid]
		if got := s.actions + " " + s.resources + " " + s.conditions; got != w {
			t.Errorf("%s:\n got  %s\n want %s", sid, got, w)
		}
	}

	// release-assistant names async:cdk-synth: the agent side of cdk-synth only, as
	// class:release-assistant; the async worker classes and synth-alerts get none.
	wantLLM := map[string]string{
		// Its own jobs' items only: the key prefix of class:release-assistant's job ids.
		"CreateAndReadJobs": `["dynamodb:GetItem", "dynamodb:PutItem"] [aws_dynamodb_table.jobs.arn] ForAllValues:StringLike dynamodb:LeadingKeys ["` +
			jobs.JobKeyPrefix("class:release-assistant") + `*"]`,
		"ListOwnersJobs": `["dynamodb:Query"] ["${aws_dynamodb_table.jobs.arn}/index/by_owner"] ForAllValues:StringLike dynamodb:LeadingKeys ["OWNER#23:class:release-assistant#*"]`,
		"RequestJobs":    want["RequestJobs"],
	}
	for n, as := range agents {
		switch {
		case n == "async_tools":
		case n == "release_assistant_worker":
			if len(as) != len(wantLLM) {
				t.Errorf("%s has %d agent-side statements, want %d", n, len(as), len(wantLLM))
			}
			for sid, w := range wantLLM {
				s := as[sid]
				if got := s.actions + " " + s.resources + " " + s.conditions; got != w {
					t.Errorf("%s %s:\n got  %s\n want %s", n, sid, got, w)
				}
			}
		case len(as) > 0:
			t.Errorf("%s names no async tool, but has agent-side statements %v", n, slices.Sorted(maps.Keys(as)))
		}
	}
	if got := workers["cdk_synth_worker"]["JobStatus"].actions; got != `["dynamodb:UpdateItem"]` {
		t.Errorf("cdk-synth's JobStatus = %s", got)
	}
	if _, ok := workers["release_assistant_worker"]["JobStatus"]; ok {
		t.Error("release-assistant may move jobs (JobStatus): a worker's permission")
	}

	table := h.block(t, "resource", "aws_dynamodb_table", "jobs")
	ttl := h.blockIn(t, table, "ttl")
	if h.str(t, ttl, "attribute_name") != "expiresAt" || h.src(ttl.Body.Attributes["enabled"].Expr) != "true" {
		t.Errorf("jobs table TTL = %s %s", h.str(t, ttl, "attribute_name"), h.src(ttl.Body.Attributes["enabled"].Expr))
	}
	gsi := h.blockIn(t, table, "global_secondary_index")
	if h.str(t, gsi, "name") != "by_owner" || h.str(t, gsi, "hash_key") != "ownerKey" || h.str(t, gsi, "range_key") != "createdAt" {
		t.Errorf("jobs index = %s(%s, %s)", h.str(t, gsi, "name"), h.str(t, gsi, "hash_key"), h.str(t, gsi, "range_key"))
	}
	url := h.block(t, "resource", "aws_lambda_function_url", "async_tools")
	if h.str(t, url, "authorization_type") != "AWS_IAM" {
		t.Errorf("function URL auth = %s", h.str(t, url, "authorization_type"))
	}
	al := h.block(t, "resource", "aws_cloudwatch_metric_alarm", "cdk_synth_failed_jobs")
	if h.str(t, al, "metric_name") != "FailedJobs" {
		t.Errorf("failed jobs alarm metric = %s", h.str(t, al, "metric_name"))
	}
	mf := h.block(t, "resource", "aws_cloudwatch_log_metric_filter", "cdk_synth_failed_jobs")
	if got := h.str(t, mf, "pattern"); got != `{ $.msg = "job FAILED" }` {
		t.Errorf("metric filter pattern = %s", got)
	}
}

// sharesNothing fails when agent-side statements as (of role an) and worker statements ws
// (of role wn) allow one action on one resource, unless both publish events on the bus with
// disjoint detail-type conditions.
func sharesNothing(t *testing.T, an string, as map[string]statement, wn string, ws map[string]statement) {
	t.Helper()
	for asid, a := range as {
		for wsid, w := range ws {
			for _, act := range items(a.actions) {
				if !slices.Contains(items(w.actions), act) {
					continue
				}
				for _, res := range items(a.resources) {
					if !slices.Contains(items(w.resources), res) {
						continue
					}
					if act == `"events:PutEvents"` {
						at, wt := conditionValues(a.conditions, "events:detail-type"), conditionValues(w.conditions, "events:detail-type")
						if len(at) == 0 || len(wt) == 0 {
							t.Errorf("%s %s / %s %s: PutEvents without a detail-type condition", an, asid, wn, wsid)
						}
						for _, d := range at {
							if slices.Contains(wt, d) {
								t.Errorf("agent side %s %s and worker %s %s may both publish %s", an, asid, wn, wsid, d)
							}
						}
						continue
					}
					t.Errorf("agent side %s %s and worker %s %s both allow %s on %s", an, asid, wn, wsid, act, res)
				}
			}
		}
	}
}

// TestToolsNotify: tool.notify becomes a rule on the class's completion events targeting the
// API destination (through a role allowed exactly that destination) or a queue only that rule
// may send to; the whole configuration passes terraform validate and the provider schema.
func TestToolsNotify(t *testing.T) {
	f := lower(t, "testdata/tools-notify/fleet.yaml")
	h := allFiles(t, generate(t, f))
	rule := h.block(t, "resource", "aws_cloudwatch_event_rule", "reindex_notify")
	if got := squash(h.src(rule.Body.Attributes["event_pattern"].Expr)); !strings.Contains(got, `"detail-type" = ["ReindexCompleted"]`) || !strings.Contains(got, `source = ["app.workers"]`) {
		t.Errorf("reindex notify pattern = %s", got)
	}
	tg := h.block(t, "resource", "aws_cloudwatch_event_target", "reindex_notify")
	if h.str(t, tg, "arn") != "arn:aws:events:eu-west-1:111122223333:api-destination/client-hook/0a1b2c3d" {
		t.Errorf("reindex notify target = %s", h.str(t, tg, "arn"))
	}
	if got := h.statements(t, "reindex_notify")["InvokeNotifyDestination"]; got.actions != `["events:InvokeApiDestination"]` ||
		got.resources != `["arn:aws:events:eu-west-1:111122223333:api-destination/client-hook/0a1b2c3d"]` {
		t.Errorf("notify role = %+v", got)
	}
	if got := h.statements(t, "build_notify_queue")["NotifyRuleDelivery"]; got.conditions != "ArnEquals aws:SourceArn [aws_cloudwatch_event_rule.build_notify.arn]" {
		t.Errorf("notify queue policy = %+v", got)
	}
	if q := h.block(t, "resource", "aws_sqs_queue", "build_notify"); h.str(t, q, "name") != "notify-build-completions" {
		t.Errorf("notify queue name = %s", h.str(t, q, "name"))
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
