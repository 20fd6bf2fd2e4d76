package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/compiler/review"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// e2eSpec is the deploy tests' fleet: one eks class on a standard queue and a Standard workflow.
const e2eSpec = "../../../compiler/deploy/testdata/e2e.yaml"

// terraformEnv points Terraform at the provider mirror (hashicorp/aws 5.100.0, offline), so
// init links the provider instead of copying ~700 MB. It skips the test
// (fails under FLEETC_REQUIRE_TOOLS=1) when terraform or the mirror is missing.
func terraformEnv(t *testing.T) {
	t.Helper()
	devtest.TerraformEnv(t)
}

// uniqueSpec writes the e2e spec with a fleet name of its own, so parallel runs sharing one
// kumo never collide, and returns its path and the name.
func uniqueSpec(t *testing.T, dir string, edit func(string) string) (string, string) {
	t.Helper()
	return uniqueSpecFrom(t, e2eSpec, dir, edit)
}

// uniqueSpecFrom writes a copy of a test spec with FLEET replaced by a name unique to the run.
func uniqueSpecFrom(t *testing.T, from, dir string, edit func(string) string) (string, string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "e2e" + hex.EncodeToString(b)
	src, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(src), "FLEET", name)
	if edit != nil {
		s = edit(s)
	}
	p := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, name
}

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code = Main(args, strings.NewReader(stdin), &out, &errb)
	t.Logf("fleetc %s → %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Second))
	return code, out.String(), errb.String()
}

func TestPlanWithoutTerraform(t *testing.T) {
	dir := t.TempDir()
	spec, _ := uniqueSpec(t, dir, nil)
	t.Setenv("PATH", "")
	code, _, stderr := runCLI(t, "", "plan", spec, "-o", filepath.Join(dir, "out"))
	if code != exitInvalid || !strings.Contains(stderr, "terraform not found on PATH: install Terraform") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "apply", spec, "-o", filepath.Join(dir, "out"), "--terraform-bin", "/nonexistent/terraform")
	if code != exitInvalid || !strings.Contains(stderr, "--terraform-bin /nonexistent/terraform") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	// It fails before writing anything.
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Fatalf("output written without terraform: %v", err)
	}
}

func TestPlanFailingInit(t *testing.T) {
	terraformEnv(t)
	dir := t.TempDir()
	spec, _ := uniqueSpec(t, dir, nil)
	// A mirror without hashicorp/aws: init cannot install the provider.
	empty := filepath.Join(dir, "empty-mirror")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "rc")
	if err := os.WriteFile(rc, []byte(verifytest.CLIConfig(empty)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", rc)
	code, stdout, stderr := runCLI(t, "", "plan", spec, "-o", filepath.Join(dir, "out"), "--detailed-exitcode")
	if code != exitInvalid || !strings.Contains(stderr, "fleetc plan: terraform init in ") ||
		!strings.Contains(stderr, "hashicorp/aws") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// e2eLoop is one test's fleet on kumo: the e2e spec under a name of its own, its out
// directory, the flags every command of the loop takes, and a cleanup that destroys what is
// left unless the test destroyed it itself (set destroyed).
type e2eLoop struct {
	dir, spec, name, out, endpoint string
	common                         []string
	destroyed                      bool
}

func newE2ELoop(t *testing.T) *e2eLoop {
	t.Helper()
	terraformEnv(t)
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	l := &e2eLoop{dir: t.TempDir(), endpoint: endpoint}
	l.spec, l.name = uniqueSpec(t, l.dir, nil)
	l.out = filepath.Join(l.dir, "out")
	l.common = []string{"-o", l.out, "--endpoint", endpoint}
	t.Cleanup(func() {
		if !l.destroyed {
			runCLI(t, "", append([]string{"destroy", l.spec, "--auto-approve", "--allow-data-loss"}, l.common...)...)
		}
	})
	return l
}

// TestFullLoopOnKumo runs what a user would, against the real terraform CLI, the official
// hashicorp/aws provider and kumo: plan a new fleet, apply it, run fleet-worker with its
// generated runtime config and drive an event and the workflow through it, and destroy, with
// objects left in the claim-check bucket.
// (TestReplacementOnKumo changes an applied fleet's queue to FIFO: a loop of its own beside
// this one, as the two ran in a row as the suite's longest test.)
func TestFullLoopOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	if testing.Short() {
		t.Skip("terraform apply against kumo takes minutes")
	}
	l := newE2ELoop(t)
	spec, name, out, common := l.spec, l.name, l.out, l.common

	// 1. Plan a new fleet: --format json, --detailed-exitcode 2, the plan saved for apply.
	saved := filepath.Join(l.dir, "new.tfplan")
	code, stdout, stderr := runCLI(t, "", append([]string{"plan", spec, "--format", "json", "--detailed-exitcode", "--out", saved}, common...)...)
	if code != exitChanges {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var s deploy.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("plan json: %v\n%s", err, stdout)
	}
	groups := map[string]deploy.GroupCount{}
	for _, g := range s.Groups {
		groups[g.Group] = g
	}
	if s.FormatVersion != jsonreport.FormatVersion || groups["class solver"].Create == 0 || groups["bus"].Create == 0 ||
		groups["state"].Create == 0 || groups["workflow flow"].Create == 0 || s.Destroy != 0 || len(s.EmulatorOmissions) == 0 {
		t.Fatalf("plan summary: %+v", s)
	}
	if _, err := os.Stat(filepath.Join(out, "terraform", deploy.OverrideFile)); err != nil {
		t.Fatalf("--endpoint wrote no override: %v", err)
	}
	// kumo has no Pod Identity API: the override leaves the association out, and says so.
	if !slices.ContainsFunc(s.EmulatorOmissions, func(o deploy.Omission) bool {
		return o.Gap == "eks-pod-identity" && o.Address == "aws_eks_pod_identity_association.solver_worker"
	}) {
		t.Errorf("plan does not report the Pod Identity association left out on the emulator: %+v", s.EmulatorOmissions)
	}

	// 2. Apply the saved plan, exactly (no second plan): progress per resource tagged with
	// its class or plane, then the outputs.
	code, stdout, stderr = runCLI(t, "", append([]string{"apply", spec, saved}, common...)...)
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The KEDA scaler role the TriggerAuthentication names is created (the account precondition
	// held: kumo's STS account is the operator role's in e2e.yaml). kumo's IAM writes another
	// account, 123456789012, into the ARNs it returns, so the output is compared by role name.
	ta, err := os.ReadFile(filepath.Join(out, "k8s", "solver", "triggerauthentication.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scaler := "arn:aws:iam::000000000000:role/" + name + "-keda-scaler"
	if !strings.Contains(string(ta), "roleArn: "+scaler) {
		t.Errorf("TriggerAuthentication does not name %s:\n%s", scaler, ta)
	}
	for _, want := range []string{"[class solver] aws_sqs_queue.solver: Creation complete after", "Apply complete!", "Outputs:", "queue_urls = ",
		`keda_scaler_role_arn = "arn:aws:iam::`, `:role/` + name + `-keda-scaler"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, stdout)
		}
	}
	// A second plan finds nothing to do (no drift on the emulator).
	code, stdout, stderr = runCLI(t, "", append([]string{"plan", spec, "--detailed-exitcode"}, common...)...)
	if code != exitOK || !strings.Contains(stdout, "No changes.") {
		t.Fatalf("second plan: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Run("event and workflow through fleet-worker", func(t *testing.T) {
		runFleet(t, l.endpoint, name, out)
	})

	// 3. Destroy: a guard, then everything goes, the claim-check bucket emptied first of what
	// a workflow's Map result writer leaves there (terraform alone stops at BucketNotEmpty).
	s3c, bucket, objects := leaveMapResults(t, l.endpoint, name)
	code, stdout, stderr = runCLI(t, "", append([]string{"destroy", spec, "--auto-approve"}, common...)...)
	if code != exitInvalid || !strings.Contains(stderr, "refusing") || !strings.Contains(stderr, "--allow-replace aws_dynamodb_table.idempotency") ||
		!strings.Contains(stderr, "--allow-replace aws_s3_bucket.claimcheck") {
		t.Fatalf("destroy guard: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := objectVersions(t, s3c, bucket); n != objects {
		t.Fatalf("a refused destroy touched the bucket: %d object versions and delete markers, had %d", n, objects)
	}
	// One flag accepts every loss the plan lists.
	code, stdout, stderr = runCLI(t, "", append([]string{"destroy", spec, "--auto-approve", "--allow-data-loss"}, common...)...)
	if code != exitOK || !strings.Contains(stdout, " destroyed.") || !strings.Contains(stdout, "--allow-data-loss: accepting the loss of") ||
		!strings.Contains(stdout, fmt.Sprintf("aws_s3_bucket.claimcheck: emptied bucket %s (%d object versions and delete markers)", bucket, objects)) {
		t.Fatalf("destroy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	l.destroyed = true
	if _, err := s3c.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Errorf("bucket %s still exists after destroy", bucket)
	}
}

// TestReplacementOnKumo applies the e2e fleet, then makes its class queue FIFO: the queue and
// its DLQ must be replaced, which the plan says (as text, JSON and markdown) and fleetc diff
// predicted, and which apply refuses until both are named with --allow-replace.
func TestReplacementOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	if testing.Short() {
		t.Skip("terraform apply against kumo takes minutes")
	}
	l := newE2ELoop(t)
	spec, dir, common := l.spec, l.dir, l.common
	code, stdout, stderr := runCLI(t, "", append([]string{"apply", spec, "--auto-approve"}, common...)...)
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The class becomes FIFO: its queue and DLQ must be replaced, and the guard refuses.
	fifo := func(s string) string {
		return strings.Replace(s, "    step: { p95: 2s, max: 30s }\n", "    step: { p95: 2s, max: 30s }\n    ordering: { fifo: true, group_by: task_id }\n", 1)
	}
	src, _ := os.ReadFile(spec)
	if err := os.WriteFile(spec, []byte(fifo(string(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	// One terraform plan, read three ways: the text on stdout, the JSON summary --out-json
	// writes, and the markdown a pull-request comment gets, rendered from that JSON by the
	// same writer `--format markdown` uses; and saved, so the two applies below apply it
	// without planning again (one plan instead of five: this test is the suite's critical
	// path, docs/development.md "Test time").
	jsonOut, saved := filepath.Join(dir, "plan.json"), filepath.Join(dir, "fifo.tfplan")
	code, stdout, stderr = runCLI(t, "", append([]string{"plan", spec, "--out-json", jsonOut, "--out", saved}, common...)...)
	if code != exitOK || !strings.Contains(stdout, "replace aws_sqs_queue.solver (class solver): name, fifo_queue forces replacement") ||
		!strings.Contains(stdout, "destroys a queue and every message in it; apply needs --allow-replace aws_sqs_queue.solver") {
		t.Fatalf("replacement plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil || !strings.Contains(string(b), `"address": "aws_sqs_queue.solver"`) {
		t.Fatalf("--out-json: %v\n%s", err, b)
	}
	var replan deploy.Summary
	if err := json.Unmarshal(b, &replan); err != nil {
		t.Fatal(err)
	}
	// fleetc diff predicted this plan without Terraform: its create/update/replace/delete per
	// address must be exactly what `terraform show -json` says, for every resource the
	// emulator override kept.
	comparePrediction(t, src, []byte(fifo(string(src))), &replan)
	var md strings.Builder
	writeSummary(&md, "markdown", &replan)
	for _, want := range []string{
		"### 🛑 fleetc plan: apply refuses 2 stateful replacement(s) or deletion(s) until named with --allow-replace",
		"| class solver |",
		"| 🛑 | `aws_sqs_queue.solver` | class solver | replace: ",
		"a queue and every message in it; apply needs `--allow-replace aws_sqs_queue.solver`",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the plan as markdown lacks %q:\n%s", want, md.String())
		}
	}

	// A saved plan is guarded as a fresh one: refused until both replacements are named.
	code, stdout, stderr = runCLI(t, "", append([]string{"apply", spec, saved, "--allow-replace", "aws_sqs_queue.solver"}, common...)...)
	if code != exitInvalid || !strings.Contains(stderr, "refusing") || !strings.Contains(stderr, "--allow-replace aws_sqs_queue.solver_dlq") ||
		strings.Contains(stdout, "Apply complete") {
		t.Fatalf("guard: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "", append([]string{"apply", spec, saved,
		"--allow-replace", "aws_sqs_queue.solver", "--allow-replace", "aws_sqs_queue.solver_dlq"}, common...)...)
	if code != exitOK || !strings.Contains(stdout, "aws_sqs_queue.solver: Destruction complete") {
		t.Fatalf("apply with --allow-replace: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// No destroy: TestFullLoopOnKumo destroys the same fleet, with its guard and emptied
	// buckets, and this test is the suite's longest chain (a destroy here is ~20 s of CPU and
	// two queue deletions the provider waits ~24 s each for). The fleet stays on the
	// emulator, under its own name, until the emulator stops; a failed test still destroys
	// (newE2ELoop's cleanup).
	l.destroyed = true
}

// comparePrediction holds fleetc diff's predicted resource actions to Terraform's plan.
// Resources the emulator override left out or changed (its omissions) are not compared: what
// kumo is given there is not what fleetc generated.
func comparePrediction(t *testing.T, base, head []byte, plan *deploy.Summary) *review.Report {
	t.Helper()
	rep, err := review.Compare(review.Load("base.yaml", base), review.Load("head.yaml", head))
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]string{} // address → the gap that makes it unverifiable on the emulator
	predicted, planned := map[string]string{}, map[string]string{}
	for _, rc := range rep.Resources {
		if gap := emulatorHides(plan, rc.Address, rc.Reasons); gap != "" {
			skip[rc.Address] = gap
			continue
		}
		predicted[rc.Address] = string(rc.Action)
	}
	for _, c := range plan.Changes {
		if gap := emulatorHides(plan, c.Address, nil); gap != "" || skip[c.Address] != "" {
			skip[c.Address] = cmp.Or(skip[c.Address], gap)
			continue
		}
		planned[c.Address] = string(c.Action)
	}
	if len(planned) == 0 {
		t.Fatalf("terraform planned nothing (fleetc predicted %v; the emulator override leaves out or ignores %v)", predicted, skip)
	}
	for addr, act := range planned {
		if predicted[addr] != act {
			t.Errorf("%s: terraform plans %s, fleetc diff predicted %q", addr, act, predicted[addr])
		}
	}
	for addr, act := range predicted {
		if _, ok := planned[addr]; !ok {
			t.Errorf("%s: fleetc diff predicted %s, terraform plans nothing", addr, act)
		}
	}
	t.Logf("fleetc diff predicted %d resource changes; terraform agreed on all of them (%d left out by the emulator override)", len(predicted), len(skip))
	return rep
}

// emulatorHides names the gap of the emulator override that makes a change to the resource
// at addr unverifiable on kumo, or "": a resource the override leaves out, and a change to an
// argument the override sets, rewrites or ignores (reasons are the prediction's "argument
// why" lines; nil for a change Terraform planned). A change to any other argument of a
// resource the override touches, such as a Lambda function's environment beside its ignored
// image, is planned by Terraform on kumo as on AWS and is held to the prediction.
func emulatorHides(plan *deploy.Summary, addr string, reasons []string) string {
	gaps := map[string]deploy.Gap{}
	for _, g := range deploy.KumoGaps {
		gaps[g.ID] = g
	}
	for _, o := range plan.EmulatorOmissions {
		if o.Address != addr {
			continue
		}
		g, ok := gaps[o.Gap]
		if !ok || g.Drop {
			return o.Gap
		}
		touched := slices.Concat(g.IgnoreChanges, slices.Collect(maps.Keys(g.Set)), slices.Collect(maps.Keys(g.Blocks)))
		if g.Definition {
			touched = append(touched, "definition")
		}
		for _, why := range reasons {
			arg, _, _ := strings.Cut(why, " ")
			arg, _, _ = strings.Cut(arg, ".")
			if slices.Contains(touched, arg) {
				return o.Gap
			}
		}
	}
	return ""
}

// runFleet starts fleet-worker for each class with its generated runtime config, puts an
// event on the generated bus, and follows it: rule → class queue → processed once →
// completion event on the bus → idempotency record. Then it starts the generated state
// machine and answers its task token through the same worker.
func runFleet(t *testing.T, endpoint, fleet, out string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	sq, eb, ddb, sf := awsconfig.SQS(cfg), awsconfig.EventBridge(cfg), awsconfig.DynamoDB(cfg, awsconfig.WithoutCRC32), awsconfig.SFN(cfg)

	// Test setup: a probe queue subscribed to the bus's completion events.
	probe, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fleet + "-probe")})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: probe.QueueUrl})
	pattern := `{"detail-type":["task.completed"],"source":["e2e.workers"]}`
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(fleet + "-probe"), EventBusName: aws.String(fleet), EventPattern: aws.String(pattern)}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c := context.WithoutCancel(ctx)
		eb.RemoveTargets(c, &eventbridge.RemoveTargetsInput{Rule: aws.String(fleet + "-probe"), EventBusName: aws.String(fleet), Ids: []string{"probe"}})
		eb.DeleteRule(c, &eventbridge.DeleteRuleInput{Name: aws.String(fleet + "-probe"), EventBusName: aws.String(fleet)})
	}()
	probeARN := "arn:aws:sqs:us-east-1:000000000000:" + fleet + "-probe"
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(fleet + "-probe"), EventBusName: aws.String(fleet),
		Targets: []ebtypes.Target{{Id: aws.String("probe"), Arn: aws.String(probeARN)}}}); err != nil {
		t.Fatal(err)
	}

	// fleet-worker, one per class, each with its generated runtime config.
	_, bin := devtest.Binaries(t)
	configs, _ := filepath.Glob(filepath.Join(out, "runtime", "*.json"))
	if len(configs) != 1 {
		t.Fatalf("runtime configs: %v", configs)
	}
	for _, c := range configs {
		cmd := exec.Command(bin, "--config", c, "--drain-timeout", "5s")
		cmd.Env = append(os.Environ(), "FLEET_AWS_ENDPOINT="+endpoint, "AWS_REGION=us-east-1",
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "FLEET_METRICS_ADDR=127.0.0.1:0", "FLEET_WAIT_TIME_SECONDS=1")
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("fleet-worker %s log:\n%s", filepath.Base(c), log.String())
			}
		}()
	}

	// An event on the generated bus, matched by the generated rule.
	trace := "trace-" + fleet
	put, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(fleet), Source: aws.String("e2e.app"), DetailType: aws.String("task.requested"),
		Detail: aws.String(fmt.Sprintf(`{"trace_id":%q,"task_id":"t1"}`, trace)),
	}}})
	if err != nil || put.FailedEntryCount != 0 {
		t.Fatalf("PutEvents: %v %+v", err, put)
	}
	var completions []string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && len(completions) == 0 {
		r, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: probe.QueueUrl, WaitTimeSeconds: 2, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Messages {
			completions = append(completions, aws.ToString(m.Body))
		}
	}
	if len(completions) != 1 || !strings.Contains(completions[0], trace) {
		t.Fatalf("completion events: %q", completions)
	}
	// Processed once: no second completion, and the class queue is empty.
	time.Sleep(3 * time.Second)
	r, _ := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: probe.QueueUrl, WaitTimeSeconds: 1})
	if len(r.Messages) != 0 {
		t.Fatalf("a second completion event: %s", aws.ToString(r.Messages[0].Body))
	}
	qurl, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(fleet + "-solver")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: qurl.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("class queue not drained: %v", attrs.Attributes)
	}
	scan, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(fleet + "-idempotency")})
	if err != nil {
		t.Fatal(err)
	}
	if scan.Count != 1 {
		t.Fatalf("idempotency records: %d, want 1: %v", scan.Count, scan.Items)
	}

	// The generated state machine, as Terraform deployed it: kumo resolves only $$.Task.Token
	// in the context object, so an execution fails before its first state. Logged, not
	// asserted: it is kumo's gap, not fleetc's.
	arn := "arn:aws:states:us-east-1:000000000000:stateMachine:" + fleet + "-flow"
	if status, detail := execute(ctx, t, sf, arn, trace+"-generated"); status != sfntypes.ExecutionStatusSucceeded {
		t.Logf("KUMO GAP: the generated state machine ends %s on kumo (%s)", status, detail)
	}

	// Test setup: the same definition with the context-object fields kumo lacks
	// ($$.Execution.Id, $$.State.Name, $$.State.EnteredTime) left out of the message (constant
	// execution_id and state instead), under the generated role. Its Solve step sends to the class queue with a task token, and
	// fleet-worker answers it.
	def, err := os.ReadFile(filepath.Join(out, "statemachines", "flow.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var asl map[string]any
	if err := json.Unmarshal(def, &asl); err != nil {
		t.Fatal(err)
	}
	body := asl["States"].(map[string]any)["Solve"].(map[string]any)["Parameters"].(map[string]any)["MessageBody"].(map[string]any)
	for _, k := range []string{"execution_id.$", "state.$", "entered_time.$"} {
		if _, ok := body[k]; !ok {
			t.Fatalf("generated MessageBody has no %s: %v", k, body)
		}
		delete(body, k)
	}
	// Execution id and state name make the worker's idempotency key for a workflow step:
	// constants stand in (the state name is what $$.State.Name would give).
	body["execution_id"], body["state"] = "kumo-execution-"+fleet, "Solve"
	def, _ = json.Marshal(asl)
	def = bytes.ReplaceAll(def, []byte("${queue_url_solver}"), []byte(aws.ToString(qurl.QueueUrl)))
	sm, err := sf.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(fleet + "-flow-kumo"),
		Definition: aws.String(string(def)), RoleArn: aws.String("arn:aws:iam::000000000000:role/" + fleet + "-flow-sfn"), Type: sfntypes.StateMachineTypeStandard})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.DeleteStateMachine(context.WithoutCancel(ctx), &sfn.DeleteStateMachineInput{StateMachineArn: sm.StateMachineArn})
	status, detail := execute(ctx, t, sf, aws.ToString(sm.StateMachineArn), trace+"-sfn")
	if status != sfntypes.ExecutionStatusSucceeded {
		t.Fatalf("execution status %s (%s)", status, detail)
	}
	if !strings.Contains(detail, `"steps":{"Solve":`) {
		t.Errorf("the worker's result is not the Solve step's output: %s", detail)
	}
}

// execute starts a state machine and waits up to a minute for the execution to end.
func execute(ctx context.Context, t *testing.T, sf *sfn.Client, arn, trace string) (sfntypes.ExecutionStatus, string) {
	t.Helper()
	ex, err := sf.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn),
		Input: aws.String(fmt.Sprintf(`{"trace_id":%q,"task_id":"t2"}`, trace))})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: ex.ExecutionArn})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d.Status, fmt.Sprintf("output=%s error=%s cause=%s", aws.ToString(d.Output), aws.ToString(d.Error), aws.ToString(d.Cause))
		}
		time.Sleep(time.Second)
	}
	return sfntypes.ExecutionStatusRunning, "still running after a minute"
}

// TestPredictionsOnKumo holds fleetc diff's predictions for changes that reach only the
// generated files Terraform reads (file(), templatefile()) to a real plan on kumo: a carried
// field (the Lambda's config object, whose hash its FLEET_CONFIG_S3 carries, and the schema),
// a model-policy timeout (the runtime config) and a workflow step timeout (the state machine
// definition). The base fleet is applied once; a head with all three is planned against it,
// never applied.
func TestPredictionsOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	// The emulator override ignores only the Lambda's image_uri and image_config (gap
	// lambda-image): a runtime-config change is an environment change Terraform plans on kumo
	// as on AWS, and comparePrediction holds it (emulatorHides skips only what the override
	// leaves out, sets, rewrites or ignores).
	if testing.Short() {
		t.Skip("terraform apply against kumo takes minutes")
	}
	terraformEnv(t)
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	spec, _ := uniqueSpecFrom(t, "testdata/predict.yaml", dir, nil)
	base, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	common := []string{"-o", out, "--endpoint", endpoint}
	allow := []string{"--allow-replace", "aws_sqs_queue.solver", "--allow-replace", "aws_sqs_queue.solver_dlq",
		"--allow-replace", "aws_sqs_queue.delivery_dlq", "--allow-replace", "aws_dynamodb_table.idempotency", "--allow-replace", "aws_s3_bucket.claimcheck"}
	t.Cleanup(func() {
		if err := os.WriteFile(spec, base, 0o644); err == nil {
			runCLI(t, "", append(append([]string{"destroy", spec, "--auto-approve"}, allow...), common...)...)
		}
	})
	if code, stdout, stderr := runCLI(t, "", append([]string{"apply", spec, "--auto-approve"}, common...)...); code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The three changes are planned together, in one head: one `fleetc plan` instead of three
	// (init, plan and show -json: ~13 s of CPU each, docs/development.md "Test time"). Each
	// is held to its own line of the prediction, and comparePrediction holds every planned
	// action to the prediction for the three together. Less precise than three heads: a
	// resource one change is wrongly predicted to touch passes if another change touches it.
	changes := []struct {
		old, new, addr, line string // the edit; the address it changes and a line its prediction's input diff must hold
		ignoredBy            string // a KumoGaps entry that hides the change from the emulator's plan
	}{
		// A carried field and a model-policy timeout: both in the runtime config, whose
		// S3 object is named by its content's hash, so the object is replaced.
		{"      required: [trace_id]\n", "      required: [trace_id, task_id]\n",
			"aws_s3_object.solver_config", `/events/emits/0/detail/schema/required: ["trace_id"] → ["trace_id","task_id"]`, ""},
		{"    timeout: 60s\n", "    timeout: 90s\n", "aws_s3_object.solver_config", "/models/policies/fast/timeout_seconds: 60 → 90", ""},
		// A workflow step timeout: kumo has no UpdateStateMachine, so the override ignores
		// definition changes and the emulator's plan cannot confirm this one; the omission
		// must say so.
		{"        timeout: 5m\n", "        timeout: 7m\n", "aws_sfn_state_machine.flow", "/States/Solve/TimeoutSeconds: 300 → 420", "sfn-update"},
	}
	head := base
	for _, c := range changes {
		if !bytes.Contains(head, []byte(c.old)) {
			t.Fatalf("testdata/predict.yaml has no %q", c.old)
		}
		head = bytes.Replace(head, []byte(c.old), []byte(c.new), 1)
	}
	if err := os.WriteFile(spec, head, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", append([]string{"plan", spec, "--format", "json"}, common...)...)
	if code != exitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var plan deploy.Summary
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	// Every change the emulator's plan shows is the one fleetc diff predicted.
	rep := comparePrediction(t, base, head, &plan)
	for _, c := range changes {
		if c.ignoredBy != "" && !slices.ContainsFunc(plan.EmulatorOmissions, func(o deploy.Omission) bool { return o.Address == c.addr && o.Gap == c.ignoredBy }) {
			t.Errorf("%s: the plan lists no %s omission: %+v", c.addr, c.ignoredBy, plan.EmulatorOmissions)
		}
		// A config object is named by its content's hash: a changed config is a new object
		// (created before the old one is destroyed), the rest an update.
		want := review.Update
		if strings.HasPrefix(c.addr, "aws_s3_object.") {
			want = review.Replace
		}
		i := slices.IndexFunc(rep.Resources, func(rc review.ResourceChange) bool { return rc.Address == c.addr })
		if i < 0 || rep.Resources[i].Action != want {
			t.Fatalf("%s: not predicted as %s: %+v", c.addr, want, rep.Resources)
		}
		var lines []string
		for _, in := range rep.Resources[i].Inputs {
			lines = append(lines, in.Changes...)
		}
		if !slices.Contains(lines, c.line) {
			t.Errorf("%s: the prediction's input diff lacks %q: %q", c.addr, c.line, lines)
		}
	}
}
