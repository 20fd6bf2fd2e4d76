package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/schemas/contract"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/asl"
	"github.com/fleetc/fleetc/compiler/eventschema"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/spec/diag"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var examples = []string{"research-fleet", "async-tools", "minimal", "express-triage"}

var lower = irtest.Load

func example(t *testing.T, name string) *ir.Fleet {
	return lower(t, "../../examples/"+name+"/fleet.yaml")
}

// configs renders every class's runtime config, as the compiler driver does before it runs
// the backends.
func configs(t *testing.T, f *ir.Fleet) map[string][]byte {
	t.Helper()
	c, ds := runtimeconfig.RenderAll(f)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	return c
}

// classEnvSize is the size of the Lambda environment fleetc measures for a class, over its
// freshly rendered config.
func classEnvSize(t *testing.T, f *ir.Fleet, a *ir.Agent) int {
	t.Helper()
	cfg, err := runtimeconfig.Render(f, a)
	if err != nil {
		t.Fatal(err)
	}
	return envSize((&gen{f: f}).lambdaEnv(a, cfg))
}

func generate(t *testing.T, f *ir.Fleet) []artifact.File {
	t.Helper()
	files, ds := Generate(f, configs(t, f))
	if ds.HasErrors() {
		t.Fatalf("Generate: %v", ds)
	}
	return files
}

// writeOut writes the Terraform files plus the sibling artifacts they read (state machines,
// runtime configs and event schemas, from their own backends) under a temp root, so terraform
// validate also checks the cross-backend paths and templatefile variables.
func writeOut(t *testing.T, f *ir.Fleet) string {
	t.Helper()
	root := t.TempDir()
	all := generate(t, f)
	for _, gen := range []func(*ir.Fleet) ([]artifact.File, diag.Diagnostics){asl.Generate, runtimeconfig.Generate, eventschema.Generate} {
		fs, ds := gen(f)
		if ds.HasErrors() {
			t.Fatalf("sibling backend: %v", ds)
		}
		all = append(all, fs...)
	}
	for _, fl := range all {
		p := filepath.Join(root, filepath.FromSlash(fl.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, fl.Bytes, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func checkFmtAndSchema(t *testing.T, dir string) {
	t.Helper()
	if err := verifytest.TerraformFmt(dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform fmt: %v", err)
	}
	for _, err := range verifytest.CheckTerraformAgainstSchema(dir, "") {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("provider 6.x schema: %v", err)
	}
}

// TestExamplesValidate checks the examples' Terraform against the 6.x provider schema
// (terraform validate with the schema-only provider, and fmt). The real 5.100 provider
// validates the same files in compiler's TestConsumersAcceptEveryArtifact, which builds every
// example: one terraform validate of each with the real provider is enough (each costs
// about 4 s of CPU).
func TestExamplesValidate(t *testing.T) {
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			f := example(t, name)
			root := writeOut(t, f)
			dir := filepath.Join(root, Dir)
			checkFmtAndSchema(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := verifytest.TerraformValidateSchemaOut(ctx, root, Dir); err != nil {
				verifytest.SkipIfMissing(t, err)
				t.Errorf("aws-6.x-schema: %v", err)
			}
		})
	}
}

func TestAgentCoreFleet(t *testing.T) {
	f := lower(t, "testdata/agentcore/fleet.yaml")
	if got := Constraint(f); got != ConstraintAgentCore {
		t.Errorf("Constraint = %q, want %q", got, ConstraintAgentCore)
	}
	root := writeOut(t, f)
	dir := filepath.Join(root, Dir)
	checkFmtAndSchema(t, dir)
	src := read(t, dir, "versions.tf")
	if !strings.Contains(string(src), `version = ">= 6.18, < 7.0"`) {
		t.Errorf("versions.tf lacks the 6.18 constraint:\n%s", src)
	}

	ac := parse(t, dir, "agent_concierge.tf")
	rt := ac.block(t, "resource", "aws_bedrockagentcore_agent_runtime", "concierge")
	if got := ac.str(t, rt, "agent_runtime_name"); got != "sessions_concierge" {
		t.Errorf("agent_runtime_name = %q", got)
	}
	if got := ac.src(rt.Body.Attributes["lifecycle_configuration"].Expr); !strings.Contains(got, "max_lifetime                 = 7200") {
		t.Errorf("lifecycle_configuration = %s, want max_lifetime 7200 (2h session)", got)
	}
	env := ac.src(rt.Body.Attributes["environment_variables"].Expr)
	for _, want := range []string{`FLEET_MODE      = "agentcore"`, `FLEET_CONFIG_S3 = "s3://${aws_s3_object.concierge_config.bucket}/${aws_s3_object.concierge_config.key}?`} {
		if !strings.Contains(env, want) {
			t.Errorf("environment_variables lacks %s:\n%s", want, env)
		}
	}
	trust := ac.statements(t, "concierge_worker_trust")
	if got := trust["AssumeRole"].principals; got != `Service:["bedrock-agentcore.amazonaws.com"]` {
		t.Errorf("agentcore trust principals = %s", got)
	}
	pol := ac.statements(t, "concierge_worker")
	if got := pol["PullWorkerImage"].resources; got != `["arn:aws:ecr:us-west-2:123456789012:repository/fleet-worker"]` {
		t.Errorf("ECR pull resources = %s", got)
	}
	profile := `"arn:${data.aws_partition.current.partition}:bedrock:us-west-2:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-haiku-4-5"`
	models := pol["InvokeRoutedModels"].resources
	for _, want := range []string{profile,
		`"arn:${data.aws_partition.current.partition}:bedrock:us-west-2::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"`,
	} {
		if !strings.Contains(models, want) {
			t.Errorf("model resources lack %s:\n%s", want, models)
		}
	}
	if strings.Contains(models, ":bedrock:*:") {
		t.Errorf("models in any region without a profile:\n%s", models)
	}
	via := pol["InvokeModelsThroughProfiles"]
	if via.resources != `["arn:${data.aws_partition.current.partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5"]` ||
		via.conditions != "ArnEquals bedrock:InferenceProfileArn ["+profile+"]" {
		t.Errorf("models through profiles = %+v", via)
	}

	checkDispatcher(t, ac)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The real mirrored provider is 5.100.0, which has no aws_bedrockagentcore_*: the
	// constraint cannot be met, and verify says so instead of failing.
	err := verifytest.TerraformValidateOut(ctx, root, Dir)
	switch {
	case err == nil:
		t.Log("a provider >= 6.18 is mirrored: terraform validate passed")
	case errors.Is(err, verifytest.ErrProviderUnavailable):
		t.Logf("terraform validate with the real provider skipped: %v", err)
	default:
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform validate: %v", err)
	}
	if err := verifytest.TerraformValidateSchemaOut(ctx, root, Dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform validate (6.x schema-only provider): %v", err)
	}
}

func TestVersionConstraint(t *testing.T) {
	for _, name := range examples {
		if got := Constraint(example(t, name)); got != ConstraintDefault {
			t.Errorf("%s: Constraint = %q, want %q", name, got, ConstraintDefault)
		}
	}
}

func TestLocalNameCollision(t *testing.T) {
	f := lower(t, "testdata/collision/fleet.yaml")
	_, ds := Generate(f, configs(t, f))
	lines := map[int]bool{}
	for _, d := range ds {
		if d.Code == "TF002" && strings.Contains(d.Summary, "aws_schemas_schema.parcel_sent") && d.Subject != nil {
			lines[d.Subject.Start.Line] = true
		}
	}
	// Both events are named: line 14 (parcel.sent) and line 21 (parcel-sent).
	if !lines[14] || !lines[21] {
		t.Errorf("want TF002 naming aws_schemas_schema.parcel_sent at lines 14 and 21, got %v", ds)
	}
}

func TestQueuePoliciesScopedToRule(t *testing.T) {
	cases := []struct {
		example, class, target string
	}{
		{"minimal", "greeter", "greeter"},
		{"async-tools", "cdk-synth", "cdk_synth"},
		{"research-fleet", "researcher", "researcher_ingress"}, // FIFO: the rule delivers to the ingress queue
		{"research-fleet", "coder", "coder_ingress"},
	}
	for _, tc := range cases {
		t.Run(tc.example+"/"+tc.class, func(t *testing.T) {
			h := parseFiles(t, generate(t, example(t, tc.example)), "agent_"+tc.class+".tf")
			n := local(tc.class)
			st := h.statements(t, tc.target+"_queue")
			if len(st) != 1 {
				t.Fatalf("queue policy has %d statements, want 1", len(st))
			}
			s := st["RuleDelivery"]
			if s.actions != `["sqs:SendMessage"]` || s.resources != "[aws_sqs_queue."+tc.target+".arn]" ||
				s.principals != `Service:["events.amazonaws.com"]` ||
				s.conditions != "ArnEquals aws:SourceArn [aws_cloudwatch_event_rule."+n+".arn]" {
				t.Errorf("queue policy statement = %+v", s)
			}
			qp := h.block(t, "resource", "aws_sqs_queue_policy", tc.target)
			if got := h.src(qp.Body.Attributes["policy"].Expr); got != "data.aws_iam_policy_document."+tc.target+"_queue.json" {
				t.Errorf("queue policy document = %s", got)
			}
			tg := h.block(t, "resource", "aws_cloudwatch_event_target", n)
			if got := h.src(tg.Body.Attributes["arn"].Expr); got != "aws_sqs_queue."+tc.target+".arn" {
				t.Errorf("target arn = %s", got)
			}
			dl := h.blockIn(t, tg, "dead_letter_config")
			if got := h.src(dl.Body.Attributes["arn"].Expr); got != "aws_sqs_queue.delivery_dlq.arn" {
				t.Errorf("target DLQ = %s", got)
			}
			rp := h.blockIn(t, tg, "retry_policy")
			if h.src(rp.Body.Attributes["maximum_retry_attempts"].Expr) != "24" || h.src(rp.Body.Attributes["maximum_event_age_in_seconds"].Expr) != "3600" {
				t.Errorf("retry policy is not 24 attempts / 3600 s")
			}
		})
	}

	// The delivery DLQ accepts dead letters from every rule of the fleet, and only those.
	h := parseFiles(t, generate(t, example(t, "research-fleet")), "bus.tf")
	s := h.statements(t, "delivery_dlq")["RuleTargetDeadLetters"]
	if s.conditions != "ArnEquals aws:SourceArn [aws_cloudwatch_event_rule.coder.arn, aws_cloudwatch_event_rule.researcher.arn]" {
		t.Errorf("delivery DLQ condition = %s", s.conditions)
	}
}

func TestWorkerIAMExact(t *testing.T) {
	type want struct{ actions, resources string }
	base := func(n, consumed string) map[string]want {
		return map[string]want{
			"ConsumeClassQueue":         {`["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]`, "[aws_sqs_queue." + n + ".arn]"},
			"DeadLetterOwnMessages":     {`["sqs:GetQueueUrl", "sqs:SendMessage"]`, "[aws_sqs_queue." + n + "_dlq.arn]"},
			"IdempotencyClaims":         {`["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]`, "[aws_dynamodb_table.idempotency.arn]"},
			"ReadClaimCheckPayloads":    {`["s3:GetObject"]`, `["${aws_s3_bucket.claimcheck.arn}/inputs/events/` + consumed + `/*"]`},
			"WriteOwnClaimCheckOutputs": {`["s3:PutObject"]`, `["${aws_s3_bucket.claimcheck.arn}/outputs/` + strings.ReplaceAll(n, "_", "-") + `/*"]`},
		}
	}
	researcher := base("researcher", "agent.step.requested")
	// In workflow conversation: its fan-out results and the workflow's inputs too.
	researcher["ReadClaimCheckPayloads"] = want{`["s3:GetObject"]`, `["${aws_s3_bucket.claimcheck.arn}/fanout/conversation/*", ` +
		`"${aws_s3_bucket.claimcheck.arn}/inputs/events/agent.step.requested/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/conversation/*"]`}
	researcher["PublishCompletionEvents"] = want{`["events:PutEvents"]`, "[aws_cloudwatch_event_bus.fleet.arn]"}
	// "<arn>/*": Distributed Map children run as stateMachine:<name>/<label>.
	researcher["TaskTokenCallbacks"] = want{`["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]`,
		`[aws_sfn_state_machine.conversation.arn, "${aws_sfn_state_machine.conversation.arn}/*"]`}
	p := "arn:${data.aws_partition.current.partition}:bedrock"
	acct := "${data.aws_caller_identity.current.account_id}"
	profiles := `["` + p + `:us-east-1:` + acct + `:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", ` +
		`"` + p + `:us-east-1:` + acct + `:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", ` +
		`"` + p + `:us-east-1:` + acct + `:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"]`
	// Directly: the fleet region's profiles only. The foundation models they route to, in any
	// region, only through those profiles (the condition is checked below).
	researcher["InvokeRoutedModels"] = want{`["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]`, profiles}
	researcher["InvokeModelsThroughProfiles"] = want{`["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]`,
		`["` + p + `:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0", "` + p + `:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"]`}
	throughProfiles := "ArnEquals bedrock:InferenceProfileArn " + profiles

	synth := base("cdk_synth", "CdkSynthRequested")
	synth["PublishCompletionEvents"] = want{`["events:PutEvents"]`, "[aws_cloudwatch_event_bus.fleet.arn]"}
	synth["JobStatus"] = want{`["dynamodb:UpdateItem"]`, "[aws_dynamodb_table.jobs.arn]"}
	synth["WriteFunctionLogs"] = want{`["logs:CreateLogStream", "logs:PutLogEvents"]`, `["${aws_cloudwatch_log_group.cdk_synth.arn}:*"]`}
	synth["ReadOwnConfig"] = want{`["s3:GetObject"]`, `["${aws_s3_bucket.claimcheck.arn}/config/runtime/cdk-synth/*"]`}

	greeter := base("greeter", "greeting.requested")
	greeter["WriteFunctionLogs"] = want{`["logs:CreateLogStream", "logs:PutLogEvents"]`, `["${aws_cloudwatch_log_group.greeter.arn}:*"]`}
	greeter["ReadOwnConfig"] = want{`["s3:GetObject"]`, `["${aws_s3_bucket.claimcheck.arn}/config/runtime/greeter/*"]`}

	cases := []struct {
		example, class, trust, emits string
		want                         map[string]want
	}{
		{"research-fleet", "researcher", `Service:["pods.eks.amazonaws.com"] ["sts:AssumeRole", "sts:TagSession"]`,
			`StringEquals events:detail-type ["agent.step.completed"]; StringEquals events:source ["fleet.workers"]`, researcher},
		{"async-tools", "cdk-synth", `Service:["lambda.amazonaws.com"] ["sts:AssumeRole"]`,
			`StringEquals events:detail-type ["ToolJobCompleted"]; StringEquals events:source ["com.cheatcoders.workers"]`, synth},
		{"minimal", "greeter", `Service:["lambda.amazonaws.com"] ["sts:AssumeRole"]`, "", greeter},
	}
	for _, tc := range cases {
		t.Run(tc.class, func(t *testing.T) {
			h := parseFiles(t, generate(t, example(t, tc.example)), "agent_"+tc.class+".tf")
			n := local(tc.class)
			got := h.statements(t, n+"_worker")
			var gotSids, wantSids []string
			for sid := range got {
				gotSids = append(gotSids, sid)
			}
			for sid := range tc.want {
				wantSids = append(wantSids, sid)
			}
			sort.Strings(gotSids)
			sort.Strings(wantSids)
			if strings.Join(gotSids, ",") != strings.Join(wantSids, ",") {
				t.Errorf("statements = %v, want %v", gotSids, wantSids)
			}
			for sid, w := range tc.want {
				if g := got[sid]; g.actions != w.actions || g.resources != w.resources {
					t.Errorf("%s:\n got  %s on %s\n want %s on %s", sid, g.actions, g.resources, w.actions, w.resources)
				}
			}
			if via, ok := got["InvokeModelsThroughProfiles"]; ok && via.conditions != throughProfiles {
				t.Errorf("models outside the region: conditions = %s, want %s", via.conditions, throughProfiles)
			}
			if pub, ok := got["PublishCompletionEvents"]; ok && pub.conditions != tc.emits {
				t.Errorf("PutEvents conditions = %s, want %s", pub.conditions, tc.emits)
			}
			tr := h.statements(t, n+"_worker_trust")["AssumeRole"]
			if tr.principals+" "+tr.actions != tc.trust {
				t.Errorf("trust = %s %s, want %s", tr.principals, tr.actions, tc.trust)
			}
		})
	}
}

func TestLambdaEventSource(t *testing.T) {
	for _, tc := range []struct{ example, class, timeout, visibility string }{
		{"minimal", "greeter", "30", "180"},
		{"async-tools", "cdk-synth", "300", "1800"},
	} {
		h := parseFiles(t, generate(t, example(t, tc.example)), "agent_"+tc.class+".tf")
		n := local(tc.class)
		esm := h.block(t, "resource", "aws_lambda_event_source_mapping", n)
		if got := h.src(esm.Body.Attributes["function_response_types"].Expr); got != `["ReportBatchItemFailures"]` {
			t.Errorf("%s: function_response_types = %s", tc.class, got)
		}
		if got := h.src(esm.Body.Attributes["event_source_arn"].Expr); got != "aws_sqs_queue."+n+".arn" {
			t.Errorf("%s: event_source_arn = %s", tc.class, got)
		}
		fn := h.block(t, "resource", "aws_lambda_function", n)
		if got := h.src(fn.Body.Attributes["timeout"].Expr); got != tc.timeout {
			t.Errorf("%s: timeout = %s, want %s", tc.class, got, tc.timeout)
		}
		q := h.block(t, "resource", "aws_sqs_queue", n)
		if got := h.src(q.Body.Attributes["visibility_timeout_seconds"].Expr); got != tc.visibility {
			t.Errorf("%s: visibility = %s, want %s (6 x timeout)", tc.class, got, tc.visibility)
		}
	}
}

func TestFIFOQueuesAndRedriveAllow(t *testing.T) {
	h := parseFiles(t, generate(t, example(t, "research-fleet")), "agent_researcher.tf")
	q := h.block(t, "resource", "aws_sqs_queue", "researcher")
	dlq := h.block(t, "resource", "aws_sqs_queue", "researcher_dlq")
	for _, c := range []struct {
		b          *hclsyntax.Block
		name, want string
	}{
		{q, "name", `"research-researcher.fifo"`},
		{q, "fifo_queue", "true"},
		{q, "content_based_deduplication", "true"},
		{q, "receive_wait_time_seconds", "20"},
		{q, "visibility_timeout_seconds", "900"},
		{q, "message_retention_seconds", "345600"},
		{dlq, "name", `"research-researcher-dlq.fifo"`},
		{dlq, "fifo_queue", "true"},
		{dlq, "message_retention_seconds", "1209600"},
	} {
		if got := h.src(c.b.Body.Attributes[c.name].Expr); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	rp := h.src(q.Body.Attributes["redrive_policy"].Expr)
	if !strings.Contains(rp, "deadLetterTargetArn = aws_sqs_queue.researcher_dlq.arn") || !strings.Contains(rp, "maxReceiveCount     = 3") {
		t.Errorf("redrive_policy = %s", rp)
	}
	ra := h.block(t, "resource", "aws_sqs_queue_redrive_allow_policy", "researcher_dlq")
	if got := h.src(ra.Body.Attributes["queue_url"].Expr); got != "aws_sqs_queue.researcher_dlq.url" {
		t.Errorf("redrive allow queue_url = %s", got)
	}
	if got := squash(h.src(ra.Body.Attributes["redrive_allow_policy"].Expr)); got != `jsonencode({ redrivePermission = "byQueue" sourceQueueArns = [aws_sqs_queue.researcher.arn] })` {
		t.Errorf("redrive_allow_policy = %s", got)
	}

	// The pipe stamps the conversation as the FIFO group.
	pipe := h.block(t, "resource", "aws_pipes_pipe", "researcher")
	sq := h.blockIn(t, h.blockIn(t, pipe, "target_parameters"), "sqs_queue_parameters")
	if got := h.src(sq.Body.Attributes["message_group_id"].Expr); got != `"$.body.detail.conversation_id"` {
		t.Errorf("message_group_id = %s", got)
	}
	if got := h.src(pipe.Body.Attributes["target"].Expr); got != "aws_sqs_queue.researcher.arn" {
		t.Errorf("pipe target = %s", got)
	}
	pst := h.statements(t, "researcher_pipe")
	if pst["SendToClassQueue"].resources != "[aws_sqs_queue.researcher.arn]" || pst["ReadIngress"].resources != "[aws_sqs_queue.researcher_ingress.arn]" {
		t.Errorf("pipe policy = %+v", pst)
	}
}

func TestWorkflowRole(t *testing.T) {
	h := parseFiles(t, generate(t, example(t, "research-fleet")), "workflows.tf")
	st := h.statements(t, "conversation_sfn")
	if got := st["DispatchToClassQueues"]; got.actions != `["sqs:SendMessage"]` || got.resources != "[aws_sqs_queue.coder.arn, aws_sqs_queue.researcher.arn]" {
		t.Errorf("dispatch statement = %+v", got)
	}
	if got := st["DistributedMapStart"].resources; !strings.Contains(got, ":states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:research-conversation\"") {
		t.Errorf("distributed map start resource = %s", got)
	}
	sm := h.block(t, "resource", "aws_sfn_state_machine", "conversation")
	def := squash(h.src(sm.Body.Attributes["definition"].Expr))
	want := `templatefile("${path.module}/../statemachines/conversation.asl.json", { claim_check_bucket = aws_s3_bucket.claimcheck.bucket queue_url_coder = aws_sqs_queue.coder.url queue_url_researcher = aws_sqs_queue.researcher.url })`
	if def != want {
		t.Errorf("definition = %s\nwant %s", def, want)
	}
	// The SubQueries fan-out's ResultWriter may write (and multipart-upload) under its own
	// prefix of the claim-check bucket, nothing else.
	rw := st["FanOutResultWriter"]
	if rw.actions != `["s3:AbortMultipartUpload", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:PutObject"]` ||
		rw.resources != `["${aws_s3_bucket.claimcheck.arn}/fanout/conversation/SubQueries/*"]` {
		t.Errorf("ResultWriter statement = %+v", rw)
	}
	lc := h.blockIn(t, sm, "logging_configuration")
	if h.src(lc.Body.Attributes["level"].Expr) != `"ERROR"` || h.src(lc.Body.Attributes["include_execution_data"].Expr) != "false" {
		t.Errorf("logging configuration is not ERROR without execution data")
	}
}

// --- HCL inspection helpers ---

type hclFile struct {
	srcs  map[string][]byte
	body  []*hclsyntax.Block
	names map[*hclsyntax.Block]string
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, dir string, names ...string) *hclFile {
	t.Helper()
	var files []artifact.File
	for _, n := range names {
		files = append(files, artifact.File{Path: Dir + "/" + n, Bytes: read(t, dir, n)})
	}
	return parseFiles(t, files, names...)
}

// parseFiles parses the named generated files (plain names under terraform/).
func parseFiles(t *testing.T, files []artifact.File, names ...string) *hclFile {
	t.Helper()
	h := &hclFile{srcs: map[string][]byte{}, names: map[*hclsyntax.Block]string{}}
	for _, n := range names {
		var src []byte
		for _, f := range files {
			if f.Path == Dir+"/"+n {
				src = f.Bytes
			}
		}
		if src == nil {
			t.Fatalf("no generated file %s", n)
		}
		f, ds := hclsyntax.ParseConfig(src, n, hcl.InitialPos)
		if ds.HasErrors() {
			t.Fatalf("parse %s: %v", n, ds)
		}
		h.srcs[n] = src
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			h.body = append(h.body, b)
			h.names[b] = n
		}
	}
	return h
}

func (h *hclFile) block(t *testing.T, typ string, labels ...string) *hclsyntax.Block {
	t.Helper()
	for _, b := range h.body {
		if b.Type == typ && strings.Join(b.Labels, ".") == strings.Join(labels, ".") {
			return b
		}
	}
	t.Fatalf("no %s %v", typ, labels)
	return nil
}

func (h *hclFile) blockIn(t *testing.T, parent *hclsyntax.Block, typ string) *hclsyntax.Block {
	t.Helper()
	for _, b := range parent.Body.Blocks {
		if b.Type == typ {
			return b
		}
	}
	t.Fatalf("%v has no %s block", parent.Labels, typ)
	return nil
}

// src is the source text of an expression.
func (h *hclFile) src(e hclsyntax.Expression) string {
	r := e.Range()
	return string(h.srcs[r.Filename][r.Start.Byte:r.End.Byte])
}

func (h *hclFile) str(t *testing.T, b *hclsyntax.Block, attr string) string {
	t.Helper()
	a, ok := b.Body.Attributes[attr]
	if !ok {
		t.Fatalf("%v has no %s", b.Labels, attr)
	}
	var s string
	if err := json.Unmarshal([]byte(h.src(a.Expr)), &s); err != nil {
		t.Fatalf("%s is not a string literal: %s", attr, h.src(a.Expr))
	}
	return s
}

type statement struct{ actions, resources, principals, conditions string }

// statements returns the statements of data.aws_iam_policy_document.<name> by sid.
func (h *hclFile) statements(t *testing.T, name string) map[string]statement {
	t.Helper()
	d := h.block(t, "data", "aws_iam_policy_document", name)
	out := map[string]statement{}
	for _, sb := range d.Body.Blocks {
		if sb.Type != "statement" {
			continue
		}
		var s statement
		attr := func(b *hclsyntax.Block, n string) string {
			if a, ok := b.Body.Attributes[n]; ok {
				return h.src(a.Expr)
			}
			return ""
		}
		s.actions, s.resources = attr(sb, "actions"), attr(sb, "resources")
		for _, nb := range sb.Body.Blocks {
			switch nb.Type {
			case "principals":
				s.principals = strings.Trim(attr(nb, "type"), `"`) + ":" + attr(nb, "identifiers")
			case "condition":
				c := strings.Trim(attr(nb, "test"), `"`) + " " + strings.Trim(attr(nb, "variable"), `"`) + " " + attr(nb, "values")
				if s.conditions != "" {
					c = s.conditions + "; " + c
				}
				s.conditions = c
			}
		}
		if e := attr(sb, "effect"); e != `"Allow"` {
			t.Errorf("%s: effect = %s", name, e)
		}
		sid := strings.Trim(attr(sb, "sid"), `"`)
		if _, dup := out[sid]; dup {
			t.Errorf("%s: duplicate sid %s", name, sid)
		}
		out[sid] = s
	}
	return out
}

// squash collapses whitespace runs, so multi-line expressions compare on one line.
func squash(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// deprecatedAllowed lists 6.x-deprecated arguments fleetc still writes, each with the reason.
var deprecatedAllowed = map[string]string{
	// key_schema, its replacement, does not exist in 5.100, the floor of the default constraint.
	"aws_dynamodb_table.global_secondary_index.hash_key":  "key_schema is newer than aws 5.100",
	"aws_dynamodb_table.global_secondary_index.range_key": "key_schema is newer than aws 5.100",
}

// TestNoDeprecatedArguments walks every generated block against the 6.x schema: an argument
// the newest provider deprecates would break on the next major version.
func TestNoDeprecatedArguments(t *testing.T) {
	s, err := verifytest.ProviderSchema("")
	if err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Fatal(err)
	}
	fleets := map[string]*ir.Fleet{"agentcore": lower(t, "testdata/agentcore/fleet.yaml")}
	for _, name := range examples {
		fleets[name] = example(t, name)
	}
	for name, f := range fleets {
		for _, fl := range generate(t, f) {
			file, ds := hclsyntax.ParseConfig(fl.Bytes, fl.Path, hcl.InitialPos)
			if ds.HasErrors() {
				t.Fatalf("%s %s: %v", name, fl.Path, ds)
			}
			for _, b := range file.Body.(*hclsyntax.Body).Blocks {
				if len(b.Labels) != 2 {
					continue
				}
				table := s.Resources
				if b.Type == "data" {
					table = s.DataSources
				}
				if sb := table[b.Labels[0]]; sb != nil {
					checkDeprecated(t, name+"/"+fl.Path, b.Labels[0], b.Body, sb)
				}
			}
		}
	}
}

func checkDeprecated(t *testing.T, where, path string, body *hclsyntax.Body, sb *verifytest.SchemaBlock) {
	t.Helper()
	for n := range body.Attributes {
		if a := sb.Attributes[n]; a != nil && a.Deprecated {
			if _, ok := deprecatedAllowed[path+"."+n]; !ok {
				t.Errorf("%s: %s.%s is deprecated in the 6.x provider", where, path, n)
			}
		}
	}
	for _, nb := range body.Blocks {
		if bt := sb.BlockTypes[nb.Type]; bt != nil && bt.Block != nil {
			checkDeprecated(t, where, path+"."+nb.Type, nb.Body, bt.Block)
		}
	}
}

func TestAlarms(t *testing.T) {
	files := generate(t, example(t, "research-fleet"))
	for _, tc := range []struct{ class, age, periods string }{
		{"researcher", "780", "10"}, // 10m max + 2 x 90s p95; the seed's 10-minute canary
		{"coder", "1560", "20"},     // 20m max + 2 x 3m; a 20-minute step stretches the canary
	} {
		h := parseFiles(t, files, "agent_"+tc.class+".tf")
		age := h.block(t, "resource", "aws_cloudwatch_metric_alarm", tc.class+"_age")
		if h.str(t, age, "metric_name") != "ApproximateAgeOfOldestMessage" || h.src(age.Body.Attributes["threshold"].Expr) != tc.age {
			t.Errorf("%s age alarm: %s > %s", tc.class, h.str(t, age, "metric_name"), h.src(age.Body.Attributes["threshold"].Expr))
		}
		dlq := h.block(t, "resource", "aws_cloudwatch_metric_alarm", tc.class+"_dlq_depth")
		if got := squash(h.src(dlq.Body.Attributes["dimensions"].Expr)); got != `{ QueueName = "research-`+tc.class+`-dlq.fifo" }` ||
			h.src(dlq.Body.Attributes["threshold"].Expr) != "0" || h.str(t, dlq, "comparison_operator") != "GreaterThanThreshold" {
			t.Errorf("%s DLQ alarm on %s", tc.class, got)
		}
		st := h.block(t, "resource", "aws_cloudwatch_metric_alarm", tc.class+"_stalled")
		if h.src(st.Body.Attributes["evaluation_periods"].Expr) != tc.periods || h.src(st.Body.Attributes["datapoints_to_alarm"].Expr) != tc.periods {
			t.Errorf("%s stall canary periods = %s", tc.class, h.src(st.Body.Attributes["evaluation_periods"].Expr))
		}
		var exprs, metrics []string
		for _, mq := range st.Body.Blocks {
			if e, ok := mq.Body.Attributes["expression"]; ok {
				exprs = append(exprs, h.src(e.Expr))
				continue
			}
			m := h.blockIn(t, mq, "metric")
			metrics = append(metrics, h.str(t, mq, "id")+"="+h.str(t, m, "metric_name")+"/"+h.str(t, m, "stat"))
		}
		if strings.Join(exprs, ",") != `"IF(visible > 0 AND deleted == 0, 1, 0)"` ||
			strings.Join(metrics, ",") != "visible=ApproximateNumberOfMessagesVisible/Maximum,deleted=NumberOfMessagesDeleted/Sum" {
			t.Errorf("%s stall canary = %v %v", tc.class, metrics, exprs)
		}
		rule := h.block(t, "resource", "aws_cloudwatch_metric_alarm", tc.class+"_dlq_delivery_failed")
		if h.str(t, rule, "metric_name") != "InvocationsFailedToBeSentToDLQ" || h.str(t, rule, "namespace") != "AWS/Events" {
			t.Errorf("%s rule DLQ alarm = %s", tc.class, h.str(t, rule, "metric_name"))
		}
	}
}

func TestOperatorAndToolPolicies(t *testing.T) {
	h := parseFiles(t, generate(t, example(t, "research-fleet")), "keda.tf")
	if got := h.statements(t, "keda_scaler")["ReadQueueDepth"]; got.actions != `["sqs:GetQueueAttributes"]` ||
		got.resources != "[aws_sqs_queue.coder.arn, aws_sqs_queue.researcher.arn]" {
		t.Errorf("KEDA scaler policy = %+v", got)
	}
	files := generate(t, example(t, "minimal"))
	for _, f := range files {
		if f.Path == Dir+"/keda.tf" || f.Path == Dir+"/tools.tf" {
			t.Errorf("minimal fleet (one lambda class, no async tool) got %s", f.Path)
		}
	}
}

// allAlarms returns every aws_cloudwatch_metric_alarm block of the generated files.
func allAlarms(t *testing.T, files []artifact.File) (*hclFile, []*hclsyntax.Block) {
	t.Helper()
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(f.Path, Dir+"/"))
	}
	h := parseFiles(t, files, names...)
	var alarms []*hclsyntax.Block
	for _, b := range h.body {
		if b.Type == "resource" && len(b.Labels) == 2 && b.Labels[0] == "aws_cloudwatch_metric_alarm" {
			alarms = append(alarms, b)
		}
	}
	return h, alarms
}

// TestAlarmActions: every alarm notifies var.alarm_actions on ALARM and on OK, and the root
// module declares that variable as an optional list of ARNs.
func TestAlarmActions(t *testing.T) {
	for _, name := range append(examples, "agentcore") {
		f := lower(t, "testdata/agentcore/fleet.yaml")
		if name != "agentcore" {
			f = example(t, name)
		}
		files := generate(t, f)
		h, alarms := allAlarms(t, files)
		if len(alarms) < 4 {
			t.Fatalf("%s: only %d alarms", name, len(alarms))
		}
		for _, al := range alarms {
			for _, attr := range []string{"alarm_actions", "ok_actions"} {
				a, ok := al.Body.Attributes[attr]
				if !ok || h.src(a.Expr) != "var.alarm_actions" {
					t.Errorf("%s: alarm %s: %s is not var.alarm_actions", name, al.Labels[1], attr)
				}
			}
		}
		v := parseFiles(t, files, "variables.tf").block(t, "variable", "alarm_actions")
		if got := h.src(v.Body.Attributes["type"].Expr); got != "list(string)" {
			t.Errorf("%s: alarm_actions type = %s", name, got)
		}
		if got := h.src(v.Body.Attributes["default"].Expr); got != "[]" {
			t.Errorf("%s: alarm_actions default = %s", name, got)
		}
		if d := h.str(t, v, "description"); !strings.Contains(d, "ALARM") || !strings.Contains(d, "OK") {
			t.Errorf("%s: alarm_actions description %q", name, d)
		}
	}
}

func TestStallPeriods(t *testing.T) {
	for _, tc := range []struct {
		max  time.Duration
		want int64
	}{
		{90 * time.Second, 10},
		{10 * time.Minute, 10},
		{10*time.Minute + time.Second, 11}, // rounded up to whole minutes
		{20 * time.Minute, 20},
		{24 * time.Hour, 1440},
		{30 * time.Hour, 1440}, // CloudWatch: period x evaluation_periods <= 1 day
	} {
		got := stallPeriods(tc.max)
		if got != tc.want || got*60 > 86400 {
			t.Errorf("stallPeriods(%s) = %d, want %d", tc.max, got, tc.want)
		}
	}

	// A step longer than a day: the canary is clamped to 1440 one-minute periods, with TF009.
	f := example(t, "research-fleet")
	f.Agent("coder").StepMax = 25 * time.Hour
	files, ds := Generate(f, configs(t, f))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var warned bool
	for _, d := range ds {
		warned = warned || d.Code == "TF009" && d.Severity == diag.Warning && strings.Contains(d.Summary, "coder")
	}
	if !warned {
		t.Errorf("no TF009 warning for a 25h step: %v", ds)
	}
	h := parseFiles(t, files, "agent_coder.tf")
	st := h.block(t, "resource", "aws_cloudwatch_metric_alarm", "coder_stalled")
	if got := h.src(st.Body.Attributes["evaluation_periods"].Expr); got != "1440" {
		t.Errorf("25h step: evaluation_periods = %s, want 1440", got)
	}
	dir := t.TempDir()
	for _, fl := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(fl.Path)), fl.Bytes, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkFmtAndSchema(t, dir)
}

// TestBatchingWindow: Lambda refuses batch_size > 10 without a batching window of >= 1 s.
func TestBatchingWindow(t *testing.T) {
	for _, tc := range []struct {
		batch  int
		window time.Duration
		want   string
	}{
		{10, 0, "0"},
		{11, 0, "1"},
		{50, 500 * time.Millisecond, "1"},
		{50, 5 * time.Second, "5"},
	} {
		f := example(t, "minimal")
		l := f.Agent("greeter").Lambda
		l.BatchSize, l.BatchingWindow = tc.batch, tc.window
		h := parseFiles(t, generate(t, f), "agent_greeter.tf")
		esm := h.block(t, "resource", "aws_lambda_event_source_mapping", "greeter")
		if got := h.src(esm.Body.Attributes["maximum_batching_window_in_seconds"].Expr); got != tc.want {
			t.Errorf("batch %d window %s: maximum_batching_window_in_seconds = %s, want %s", tc.batch, tc.window, got, tc.want)
		}
	}
}

// TestLambdaEnvironmentLimit: the size fleetc measures is what Terraform renders; a config
// far past Lambda's 4 KB leaves the environment as it was (the config is an S3 object, the
// environment only names it), with no TF008; and the limit itself holds to the byte.
func TestLambdaEnvironmentLimit(t *testing.T) {
	for _, tc := range []struct{ example, class string }{{"minimal", "greeter"}, {"async-tools", "cdk-synth"}} {
		f := example(t, tc.example)
		a := f.Agent(tc.class)
		size := classEnvSize(t, f, a)
		if size <= 0 || size > lambdaEnvLimit {
			t.Errorf("%s: environment %d bytes", tc.class, size)
		}
		if tfSize, ok := terraformEnvSize(t, f, a); ok && tfSize != size {
			t.Errorf("%s: fleetc measures %d bytes, Terraform renders %d", tc.class, size, tfSize)
		}
	}

	// Grow an exec argument to twice Lambda's limit: the environment does not grow.
	f := example(t, "minimal")
	a := f.Agent("greeter")
	a.Handler.Command = []string{"/app/greet", ""}
	base := classEnvSize(t, f, a)
	a.Handler.Command[1] = strings.Repeat("x", 2*lambdaEnvLimit)
	if size := classEnvSize(t, f, a); size != base {
		t.Errorf("a %d-byte argument grew the environment from %d to %d bytes", 2*lambdaEnvLimit, base, size)
	}
	if _, ds := Generate(f, configs(t, f)); ds.HasErrors() {
		t.Errorf("a config over 4 KB: %v", ds)
	}

	// What an environment still holds is measured to the byte: at the limit it passes, one past is TF008.
	for _, over := range []bool{false, true} {
		g := &gen{f: f}
		env := g.lambdaEnv(a, nil)
		env["PAD"] = ""
		n := lambdaEnvLimit - envSize(env)
		if over {
			n++
		}
		env["PAD"] = strings.Repeat("y", n)
		g.checkEnv("/agents/greeter", "greeter", env)
		switch {
		case over && (len(g.ds) != 1 || g.ds[0].Code != "TF008" || g.ds[0].Severity != diag.Error):
			t.Errorf("%d bytes: want a TF008 error, got %v", envSize(env), g.ds)
		case !over && len(g.ds) != 0:
			t.Errorf("exactly %d bytes: unexpected %v", envSize(env), g.ds)
		}
	}
}

// terraformEnvSize asks terraform console for the length of the JSON object of the function's
// environment variables as Terraform renders them (the reference's hash is Terraform's sha256
// of the config file, as the object's content is that file); ok is false without a terraform
// binary.
func terraformEnvSize(t *testing.T, f *ir.Fleet, a *ir.Agent) (int, bool) {
	t.Helper()
	bin, err := verifytest.Tool("terraform")
	if err != nil {
		t.Logf("terraform console cross-check skipped: %v", err)
		return 0, false
	}
	cfg, err := runtimeconfig.Render(f, a)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cfg.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	url := func(q ir.Queue) string { return "https://sqs." + f.Region + ".amazonaws.com/123456789012/" + q.Name }
	ref := "s3://" + f.State.ClaimCheckBucket + "/" + configDir(a.ConfigPath) + `${filesha256("cfg.json")}.json?` + config.ObjectOwnerParam + "=123456789012&" +
		config.ObjectSHA256Param + `=${sha256(file("cfg.json"))}`
	expr := `length(jsonencode({FLEET_CONFIG_S3 = "` + ref + `", FLEET_DLQ_URL = "` +
		url(a.DLQ) + `", FLEET_QUEUE_URL = "` + url(a.Queue) + `"}))`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "console")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(expr + "\n")
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE=/dev/null", "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("terraform console: %v\n%s", err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("terraform console printed %q", out)
	}
	return n, true
}

// TestCodes: Codes documents exactly the codes the package's sources emit.
func TestCodes(t *testing.T) {
	emitted := map[string]bool{}
	srcs, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`(?:Errorf|Warnf)\("(TF[0-9]+)"`)
	for _, p := range srcs {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			emitted[string(m[1])] = true
		}
	}
	listed := map[string]bool{}
	prev := ""
	for _, c := range Codes() {
		if c.ID <= prev {
			t.Errorf("Codes not sorted or duplicated at %s", c.ID)
		}
		prev = c.ID
		listed[c.ID] = true
		if !emitted[c.ID] {
			t.Errorf("Codes lists %s, which no source emits", c.ID)
		}
		if c.Severity != "error" && c.Severity != "warning" || c.Summary == "" || len(c.Explain) < 80 {
			t.Errorf("%s: severity %q, summary %q, explain %d chars", c.ID, c.Severity, c.Summary, len(c.Explain))
		}
	}
	for code := range emitted {
		if !listed[code] {
			t.Errorf("%s is emitted but not in Codes", code)
		}
	}
	if len(emitted) < 9 {
		t.Errorf("found only %d emitted codes: %v", len(emitted), emitted)
	}
}

// checkDispatcher: an agentcore class is fed by a Lambda running fleet-worker --mode dispatch
// on the class queue, with the runtime's ARN injected, whose role may invoke exactly that
// runtime (and its DEFAULT endpoint) and touch only the class's queues.
func checkDispatcher(t *testing.T, ac *hclFile) {
	t.Helper()
	fn := ac.block(t, "resource", "aws_lambda_function", "concierge_dispatch")
	if got := ac.str(t, fn, "function_name"); got != "sessions-concierge-dispatch" {
		t.Errorf("dispatcher function_name = %q", got)
	}
	if got := ac.src(fn.Body.Attributes["architectures"].Expr); got != `["arm64"]` {
		t.Errorf("dispatcher architectures = %s, want the AgentCore image's arm64", got)
	}
	if got := ac.src(fn.Body.Attributes["timeout"].Expr); got != "450" {
		t.Errorf("dispatcher timeout = %s, want the queue visibility 450 (1.5 x step.max 5m)", got)
	}
	var cmd, env string
	for _, b := range fn.Body.Blocks {
		switch b.Type {
		case "image_config":
			cmd = ac.src(b.Body.Attributes["command"].Expr)
		case "environment":
			env = ac.src(b.Body.Attributes["variables"].Expr)
		}
	}
	if cmd != `["--mode", "dispatch"]` {
		t.Errorf("dispatcher command = %s", cmd)
	}
	if !strings.Contains(env, "FLEET_AGENT_RUNTIME_ARN = aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn") {
		t.Errorf("dispatcher environment lacks the runtime ARN:\n%s", env)
	}
	esm := ac.block(t, "resource", "aws_lambda_event_source_mapping", "concierge_dispatch")
	if got := ac.src(esm.Body.Attributes["event_source_arn"].Expr); got != "aws_sqs_queue.concierge.arn" {
		t.Errorf("dispatcher event source = %s", got)
	}
	if got := ac.src(esm.Body.Attributes["function_response_types"].Expr); got != `["ReportBatchItemFailures"]` {
		t.Errorf("dispatcher function_response_types = %s", got)
	}
	pol := ac.statements(t, "concierge_dispatch")
	want := map[string]string{
		"ConsumeClassQueue":     "[aws_sqs_queue.concierge.arn]",
		"DeadLetterOwnMessages": "[aws_sqs_queue.concierge_dlq.arn]",
		"InvokeClassRuntime":    `[aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn, "${aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn}/runtime-endpoint/DEFAULT"]`,
		"WriteFunctionLogs":     `["${aws_cloudwatch_log_group.concierge_dispatch.arn}:*"]`,
		"FailTaskTokens":        `[aws_sfn_state_machine.turn.arn, "${aws_sfn_state_machine.turn.arn}/*"]`,
		"ReadOwnConfig":         `["${aws_s3_bucket.claimcheck.arn}/config/runtime/concierge/*"]`,
	}
	if len(pol) != len(want) {
		t.Errorf("dispatcher policy has statements %v, want exactly %d", pol, len(want))
	}
	for sid, res := range want {
		if got := pol[sid].resources; got != res {
			t.Errorf("dispatcher %s resources = %s, want %s", sid, got, res)
		}
	}
	if got := pol["InvokeClassRuntime"].actions; got != `["bedrock-agentcore:InvokeAgentRuntime"]` {
		t.Errorf("dispatcher InvokeClassRuntime actions = %s", got)
	}
	if got := pol["FailTaskTokens"].actions; got != `["states:SendTaskFailure"]` {
		t.Errorf("dispatcher FailTaskTokens actions = %s", got)
	}
	var allow string
	for _, b := range ac.block(t, "resource", "aws_bedrockagentcore_agent_runtime", "concierge").Body.Blocks {
		if b.Type == "request_header_configuration" {
			allow = ac.src(b.Body.Attributes["request_header_allowlist"].Expr)
		}
	}
	wantAllow, _ := json.Marshal(contract.AllowedHeaders)
	if strings.ReplaceAll(allow, " ", "") != string(wantAllow) {
		t.Errorf("runtime request_header_allowlist = %s, want the dispatcher's headers %s", allow, wantAllow)
	}
	trust := ac.statements(t, "concierge_dispatch_trust")
	if got := trust["AssumeRole"].principals; got != `Service:["lambda.amazonaws.com"]` {
		t.Errorf("dispatcher trust principals = %s", got)
	}
}

// TestProvisionedPollers: a lambda class that asks for provisioned mode gets a
// provisioned_poller_config (min from the seed's heuristic when unstated: ceil(10 / 2 s) × 1
// = 5; max Lambda's 200) and no scaling_config, which AWS does not combine with it; the
// configuration passes terraform validate with hashicorp/aws 5.100.0 and its schema.
func TestProvisionedPollers(t *testing.T) {
	src, err := os.ReadFile("../../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	handler := "    handler: { exec: [\"/app/greet\"] }\n"
	for _, tc := range []struct{ lambda, min, max string }{
		{"    lambda: { provisioned_pollers: {} }\n", "5", "200"},
		{"    lambda: { batch_size: 4, provisioned_pollers: { min: 3, max: 40 } }\n", "3", "40"},
	} {
		if !bytes.Contains(src, []byte(handler)) {
			t.Fatal("examples/minimal changed: no greeter handler line")
		}
		f := irtest.LoadSource(t, strings.Replace(string(src), handler, handler+tc.lambda, 1))
		h := parseFiles(t, generate(t, f), "agent_greeter.tf")
		esm := h.block(t, "resource", "aws_lambda_event_source_mapping", "greeter")
		var pc *hclsyntax.Block
		for _, b := range esm.Body.Blocks {
			switch b.Type {
			case "provisioned_poller_config":
				pc = b
			case "scaling_config":
				t.Errorf("%s: scaling_config beside provisioned mode", tc.lambda)
			}
		}
		if pc == nil {
			t.Fatalf("%s: no provisioned_poller_config", tc.lambda)
		}
		if got := h.src(pc.Body.Attributes["minimum_pollers"].Expr); got != tc.min {
			t.Errorf("%s: minimum_pollers = %s, want %s", tc.lambda, got, tc.min)
		}
		if got := h.src(pc.Body.Attributes["maximum_pollers"].Expr); got != tc.max {
			t.Errorf("%s: maximum_pollers = %s, want %s", tc.lambda, got, tc.max)
		}
		root := writeOut(t, f)
		shared, err := verifytest.SharedDir()
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range verifytest.CheckTerraformAgainstSchema(filepath.Join(root, Dir), filepath.Join(shared, "terraform", "aws-provider-schema-5.100.0.json")) {
			verifytest.SkipIfMissing(t, err)
			if msg := err.Error(); !strings.Contains(msg, `unknown data source type "aws_caller_identity"`) && !strings.Contains(msg, `unknown data source type "aws_partition"`) {
				t.Errorf("provider 5.100.0 schema: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
			verifytest.SkipIfMissing(t, err)
			t.Errorf("terraform validate: %v", err)
		}
		cancel()
	}
	// Unset, the mapping keeps on-demand scaling.
	h := parseFiles(t, generate(t, example(t, "minimal")), "agent_greeter.tf")
	for _, b := range h.block(t, "resource", "aws_lambda_event_source_mapping", "greeter").Body.Blocks {
		if b.Type == "provisioned_poller_config" {
			t.Error("provisioned_poller_config without provisioned_pollers")
		}
	}
}
