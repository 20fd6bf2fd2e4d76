package verifytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skipIfMissing skips loudly when err says a tool or data file is absent (fails under FLEETC_REQUIRE_TOOLS=1).
func skipIfMissing(t *testing.T, err error) {
	t.Helper()
	SkipIfMissing(t, err)
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantContains(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not contain %q:\n%v", s, err)
		}
	}
}

func TestRepoRootAndTool(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FLEETC_REPO_ROOT") == "" {
		b, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if got := modulePath(b); got != mainModule {
			t.Errorf("RepoRoot %s has module %q, want %q", root, got, mainModule)
		}
	}
	_, err = Tool("no-such-tool-fleetc")
	if !errors.Is(err, ErrToolMissing) {
		t.Errorf("Tool(missing) = %v, want ErrToolMissing", err)
	}
	wantContains(t, err, "bash tools/install.sh")
}

func TestTerraformFmt(t *testing.T) {
	t.Parallel()
	err := TerraformFmt(abs(t, "testdata/tf/valid"))
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	err = TerraformFmt(abs(t, "testdata/tf/unformatted"))
	t.Logf("unformatted: %v", err)
	wantContains(t, err, "main.tf", `+  name          = "orders"`)
}

func TestTerraformValidate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	valid := abs(t, "testdata/tf/valid")
	err := TerraformValidate(ctx, valid)
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	if _, err := os.Stat(filepath.Join(valid, ".terraform")); err == nil {
		t.Errorf("TerraformValidate left .terraform in the source directory")
	}

	dir := abs(t, "testdata/tf/unknown_attr")
	err = TerraformValidate(ctx, dir)
	t.Logf("unknown_attr: %v", err)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("unknown_attr: want Problems, got %v", err)
	}
	if len(ps) != 1 || ps[0].File != filepath.Join(dir, "main.tf") || ps[0].Line != 3 || ps[0].Summary != "Unsupported argument" {
		t.Errorf("unknown_attr: got %v", err)
	}
	wantContains(t, err, "main.tf:3:3", `"visibility_timeout"`)
}

// TestTerraformValidateProviderTooOld checks that a constraint the mirror cannot meet is
// reported as ErrToolMissing naming the constraint, not as a validation failure.
func TestTerraformValidateProviderTooOld(t *testing.T) {
	t.Parallel()
	mirror, err := ProviderMirror()
	skipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Tool("terraform"); err != nil {
		skipIfMissing(t, err)
	}
	has6 := false
	for _, v := range mirrorVersions(mirror, awsProviderSource) {
		if v.Segments()[0] >= 6 {
			has6 = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = TerraformValidate(ctx, abs(t, "testdata/tf/bedrock"))
	t.Logf("bedrock: %v", err)
	if has6 {
		if err != nil {
			t.Fatalf("mirror %s has aws >= 6, bedrock sample should validate: %v", mirror, err)
		}
		return
	}
	if !errors.Is(err, ErrProviderUnavailable) || !errors.Is(err, ErrToolMissing) {
		t.Fatalf("want ErrProviderUnavailable wrapping ErrToolMissing (mirror %s has no aws >= 6), got %v", mirror, err)
	}
	wantContains(t, err, `registry.terraform.io/hashicorp/aws ">= 6.0"`, "main.tf:3", mirror)
}

func TestTerraformValidateSchema(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ok := range []string{"valid", "bedrock"} {
		err := TerraformValidateSchema(ctx, abs(t, "testdata/tf/"+ok))
		skipIfMissing(t, err)
		if err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
	dir := abs(t, "testdata/tf/schema_types")
	err := TerraformValidateSchema(ctx, dir)
	t.Logf("schema_types: %v", err)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("schema_types: want Problems, got %v", err)
	}
	want := []string{
		filepath.Join(dir, "main.tf") + `:12:19: Incorrect attribute value type: Inappropriate value for attribute "delay_seconds": a number is required.`,
		filepath.Join(dir, "main.tf") + `:21:52: Unsupported attribute:`,
	}
	if len(ps) != len(want) {
		t.Fatalf("schema_types: want %d problems, got %d:\n%v", len(want), len(ps), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(ps[i].Error(), w) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, ps[i], w)
		}
	}
	wantContains(t, ps[1], `Did you mean "agent_runtime_arn"?`)
}

func TestRequiredProviders(t *testing.T) {
	needs, err := requiredProviders(abs(t, "testdata/tf/unknown_attr"))
	if err != nil {
		t.Fatal(err)
	}
	n := needs[awsProviderSource]
	if len(needs) != 1 || n == nil || len(n.constraints) != 0 {
		t.Errorf("implied provider: got %+v", needs)
	}
	needs, err = requiredProviders(abs(t, "testdata/tf/bedrock"))
	if err != nil {
		t.Fatal(err)
	}
	n = needs[awsProviderSource]
	if n == nil || fmt.Sprint(n.constraints) != "[>= 6.0]" {
		t.Errorf("declared provider: got %+v", n)
	}
}

func TestCheckTerraformAgainstSchema(t *testing.T) {
	if errs := CheckTerraformAgainstSchema(abs(t, "testdata/tf/valid"), ""); len(errs) > 0 {
		skipIfMissing(t, errs[0])
		t.Fatalf("valid: %v", errors.Join(errs...))
	}
	if errs := CheckTerraformAgainstSchema(abs(t, "testdata/tf/bedrock"), ""); len(errs) > 0 {
		t.Fatalf("bedrock (in the 6.48 schema): %v", errors.Join(errs...))
	}

	// The default schema is the 6.x subset supplemented by 5.100.0 for the types it lacks.
	dir := abs(t, "testdata/tf/pod_identity")
	errs := CheckTerraformAgainstSchema(dir, "")
	if len(errs) != 2 {
		t.Fatalf("pod_identity: want 2 errors (block b), got %v", errs)
	}
	wantContains(t, errs[0], "main.tf:10:", `missing required argument "cluster_name"`)
	wantContains(t, errs[1], "main.tf:11:", `unsupported argument "cluster"`)
	subset, err := DefaultSchemaPath()
	if err != nil {
		t.Fatal(err)
	}
	if errs := CheckTerraformAgainstSchema(dir, subset); len(errs) == 0 || !strings.Contains(errs[0].Error(), `unknown resource type "aws_eks_pod_identity_association"`) {
		t.Errorf("the subset alone should not know aws_eks_pod_identity_association (else drop the supplement): %v", errs)
	}

	dir = abs(t, "testdata/tf/unknown_attr")
	errs = CheckTerraformAgainstSchema(dir, "")
	if len(errs) != 1 {
		t.Fatalf("unknown_attr: want 1 error, got %v", errs)
	}
	wantContains(t, errs[0], filepath.Join(dir, "main.tf")+":3:3", `unsupported argument "visibility_timeout"`, `did you mean "visibility_timeout_seconds"`)

	dir = abs(t, "testdata/tf/schema_errors")
	errs = CheckTerraformAgainstSchema(dir, "")
	t.Logf("schema_errors:\n%v", errors.Join(errs...))
	want := []string{
		`main.tf:3:3: aws_sqs_queue.computed: "arn" is computed-only`,
		`main.tf:6:10: unknown resource type "aws_sqs_queu"`,
		`main.tf:10:35: aws_dynamodb_table.t: missing required argument "name"`,
		`main.tf:16:3: aws_dynamodb_table.t: too many "ttl" blocks: at most 1 allowed`,
		`main.tf:20:3: aws_dynamodb_table.t: unsupported block type "bogus_block"`,
		`main.tf:27:7: aws_dynamodb_table.t.attribute: unsupported argument "color"`,
		`main.tf:39:3: aws_dynamodb_table.attr_form: "ttl" is a block, not an argument`,
		`main.tf:46:5: aws_iam_policy_document.p.statement: unsupported argument "principal"`,
	}
	var got []string
	for _, e := range errs {
		var p *Problem
		if !errors.As(e, &p) {
			t.Fatalf("error %v is not a *Problem", e)
		}
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Errorf("schema_errors: got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant …%s…", i, got[i], want[i])
		}
	}
	wantContains(t, errs[1], `did you mean "aws_sqs_queue"`)
	wantContains(t, errs[7], `did you mean "principals"`)
}

func TestProviderSchemaMissing(t *testing.T) {
	_, err := ProviderSchema(filepath.Join(t.TempDir(), "nope.json"))
	if !errors.Is(err, ErrToolMissing) {
		t.Errorf("missing schema: got %v, want ErrToolMissing", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"provider_schemas": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ProviderSchema(bad); err == nil || errors.Is(err, ErrToolMissing) {
		t.Errorf("malformed schema: got %v, want a plain error", err)
	}
}

func TestASL(t *testing.T) {
	t.Parallel()
	err := ASL(abs(t, "testdata/asl/valid.asl.json"))
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	err = ASL(abs(t, "testdata/asl/invalid.asl.json"))
	t.Logf("invalid: %v", err)
	wantContains(t, err, "MISSING_TRANSITION_TARGET", "Nowhere")
}

func TestKubeconform(t *testing.T) {
	t.Parallel()
	err := Kubeconform(abs(t, "testdata/k8s/scaledobject-valid.yaml"))
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	err = Kubeconform(abs(t, "testdata/k8s/scaledobject-unknown-field.yaml"))
	t.Logf("unknown field: %v", err)
	wantContains(t, err, "ScaledObject", "maxReplicas", "Invalid: 1")
}

func TestDraft04(t *testing.T) {
	good, err := os.ReadFile("testdata/jsonschema/event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := Draft04(good); err != nil {
		t.Fatalf("valid schema: %v", err)
	}
	bad, err := os.ReadFile("testdata/jsonschema/bad-draft04.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	// Draft-04 has a boolean exclusiveMinimum and no "text" type.
	t.Logf("bad schema: %v", Draft04(bad))
	wantContains(t, Draft04(bad), "metaschema", "/properties/amount/exclusiveMinimum", "/properties/orderId/type")
	wantContains(t, Draft04([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#"}`)), "want http://json-schema.org/draft-04/schema#")
	wantContains(t, Draft04([]byte(`{"$ref": "https://example.com/x.json"}`)), "refused")
	wantContains(t, Draft04([]byte(`{`)), "not JSON")

	event := `{"detail-type": "OrderReceived", "detail": {"orderId": "o-1", "amount": 12.5}}`
	if err := Draft04Instance(good, []byte(event)); err != nil {
		t.Errorf("valid instance: %v", err)
	}
	wantContains(t, Draft04Instance(good, []byte(`{"detail-type": "OrderReceived", "detail": {"orderId": "o-1", "amount": 0, "x": 1}}`)),
		"/detail/amount", "/detail")
	wantContains(t, Draft04Instance(good, []byte(`{"detail": {}} {}`)), "trailing data")
}

// fakeTB records what SkipIfMissing does.
type fakeTB struct{ skipped, failed string }

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Skipf(format string, args ...any)  { f.skipped = fmt.Sprintf(format, args...) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestSkipIfMissing(t *testing.T) {
	missing := fmt.Errorf("%w: kubeconform not found", ErrToolMissing)
	provider := fmt.Errorf("%w: aws >= 6", ErrProviderUnavailable)
	for _, tc := range []struct {
		require            string
		err                error
		wantSkip, wantFail bool
	}{
		{"", nil, false, false},
		{"", errors.New("invalid"), false, false},
		{"", missing, true, false},
		{"1", missing, false, true},
		{"", provider, true, false},
		{"1", provider, true, false},
	} {
		t.Setenv("FLEETC_REQUIRE_TOOLS", tc.require)
		var f fakeTB
		SkipIfMissing(&f, tc.err)
		if (f.skipped != "") != tc.wantSkip || (f.failed != "") != tc.wantFail {
			t.Errorf("require=%q err=%v: skipped=%q failed=%q", tc.require, tc.err, f.skipped, f.failed)
		}
	}
}

// TestKumo talks to the emulator started by tools/kumo/start.sh: an SQS round trip over the
// JSON protocol proves it is kumo serving AWS APIs, not just something on the port.
func TestKumo(t *testing.T) {
	ep, err := Kumo(context.Background())
	skipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("verify-test-%d", time.Now().UnixNano())
	call := func(target, body string) string {
		req, err := http.NewRequest(http.MethodPost, ep+"/", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS."+target)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", target, resp.StatusCode, b)
		}
		return string(b)
	}
	out := call("CreateQueue", `{"QueueName":"`+name+`"}`)
	if !strings.Contains(out, name) {
		t.Fatalf("CreateQueue: %s", out)
	}
	var created struct{ QueueUrl string }
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { call("DeleteQueue", `{"QueueUrl":"`+created.QueueUrl+`"}`) })
	if out := call("ListQueues", `{"QueueNamePrefix":"`+name+`"}`); !strings.Contains(out, created.QueueUrl) {
		t.Errorf("ListQueues does not list %s: %s", created.QueueUrl, out)
	}
}

// TestTerraformValidateOut checks that a configuration reading a sibling artifact through
// path.module validates when the whole output root is copied, and fails when only its own
// directory is.
func TestTerraformValidateOut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := abs(t, "testdata/tfout")
	err := TerraformValidateSchemaOut(ctx, root, "terraform")
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("whole root: %v", err)
	}
	err = TerraformValidateSchema(ctx, filepath.Join(root, "terraform"))
	wantContains(t, err, filepath.Join(root, "terraform", "main.tf")+":13:", "dispatch.asl.json")
}

// TestTerraformValidateSharesOneProvider checks that the test process's validations attach to
// one running hashicorp/aws (reattach.go) and that it does the work: a value only the
// provider's own validator rejects is reported, and the provider's CPU time grows while it is
// checked. Were each terraform run to start its own provider again, a starting provider could
// miss go-plugin's one-minute handshake on a loaded machine, as it once did in CI.
func TestTerraformValidateSharesOneProvider(t *testing.T) {
	if !canShareProvider {
		t.Skip("no parent-death signal on this platform: each terraform run starts its own provider")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := TerraformValidate(ctx, abs(t, "testdata/tf/valid"))
	skipIfMissing(t, err)
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	p := onlySharedProvider(t)
	before := cpuTicks(t, p.pid)

	dir := abs(t, "testdata/tf/provider_value")
	err = TerraformValidate(ctx, dir)
	t.Logf("provider_value: %v", err)
	wantContains(t, err, "main.tf:5", "visibility_timeout_seconds", "43200")
	if after := cpuTicks(t, p.pid); after <= before {
		t.Errorf("the shared provider (pid %d) used no CPU while validating (%d ticks before and after): terraform started its own", p.pid, before)
	}
	if got := onlySharedProvider(t); got != p {
		t.Errorf("a second validation started a second provider")
	}
}

// onlySharedProvider returns the one provider this process shares, which must be running.
func onlySharedProvider(t *testing.T) *sharedProvider {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if len(sharedProviders) != 1 {
		t.Fatalf("%d shared providers, want 1", len(sharedProviders))
	}
	for bin, p := range sharedProviders {
		if p.ended() || p.pid == 0 || syscall.Kill(p.pid, 0) != nil {
			t.Fatalf("shared provider %s (pid %d) is not running: %v", bin, p.pid, p.err)
		}
		return p
	}
	return nil
}

// cpuTicks is the user plus system CPU time of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	f, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	utime, _ := strconv.Atoi(f[14-3])
	stime, _ := strconv.Atoi(f[15-3])
	return utime + stime
}

// procStat is /proc/PID/stat from its third field on (the state), after the parenthesised
// command name, which may hold spaces: field n of proc(5) is procStat(pid)[n-3].
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])), nil
}

// TestSharedProviderEndsWithTheProcess checks that the provider a test process shares does
// not outlive it: a test binary run as a child starts one and exits without stopping it, and
// the kernel must end the provider (killOnParentExit). Else every test process of the suite
// would leave a 700 MB provider running.
func TestSharedProviderEndsWithTheProcess(t *testing.T) {
	if !canShareProvider {
		t.Skip("no parent-death signal on this platform")
	}
	mirror, err := ProviderMirror()
	skipIfMissing(t, err)
	if err != nil {
		t.Fatal(err)
	}
	versions := mirrorVersions(mirror, awsProviderSource)
	if len(versions) == 0 {
		t.Skipf("mirror %s has no hashicorp/aws", mirror)
	}
	bin := providerBinary(mirror, awsProviderSource, versions[0].Original())
	if bin == "" {
		t.Skipf("mirror %s holds hashicorp/aws packed", mirror)
	}
	if os.Getenv("FLEETC_TEST_SHARED_PROVIDER_CHILD") != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := reattachProvider(ctx, bin); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("provider pid %d\n", onlySharedProvider(t).pid)
		os.Exit(0) // as a process ends however it ends: no cleanup of the provider
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedProviderEndsWithTheProcess$")
	cmd.Env = append(os.Environ(), "FLEETC_TEST_SHARED_PROVIDER_CHILD=1")
	out, err := cmd.Output()
	var pid int
	if _, scanErr := fmt.Sscanf(string(out), "provider pid %d", &pid); scanErr != nil || err != nil {
		t.Fatalf("child: %v %v\n%s", err, scanErr, out)
	}
	for deadline := time.Now().Add(10 * time.Second); processRunning(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the shared provider (pid %d) outlived the test process that started it", pid)
		}
	}
}

// processRunning says whether pid is alive and not a zombie waiting to be reaped.
func processRunning(pid int) bool {
	f, err := procStat(pid)
	return err == nil && f[0] != "Z" && f[0] != "X"
}
