package asl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir/irtest"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/spec/diag"
)

var lower = irtest.Load

var examples = irtest.Examples

// placeholderRE matches the templatefile() variables fleetc writes (not escaped $${...}).
var placeholderRE = regexp.MustCompile(`(^|[^$])\$\{(queue_url_[a-z0-9_]+|` + ir.ClaimCheckBucketVar + `|` + ir.ApprovalRecorderVar + `|` + ir.IdempotencyTableVar + `|` + ir.BusNameVar + `)\}`)

// substitute does what Terraform's templatefile does to the definition: fill the queue URLs
// and the claim-check bucket, and unescape $${ and %%{.
func substitute(f *ir.Fleet, b []byte) []byte {
	urls := map[string]string{
		ir.ClaimCheckBucketVar: f.State.ClaimCheckBucket, ir.IdempotencyTableVar: f.State.IdempotencyTable, ir.BusNameVar: f.Bus.Name,
		ir.ApprovalRecorderVar: "arn:aws:states:" + f.Region + ":123456789012:stateMachine:" + ir.ApprovalRecorderName(f),
	}
	for _, a := range f.Agents {
		urls[ir.QueueURLVar(a)] = "https://sqs." + f.Region + ".amazonaws.com/123456789012/" + a.Queue.Name
	}
	out := placeholderRE.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := placeholderRE.FindSubmatch(m)
		return append(append([]byte{}, sub[1]...), urls[string(sub[2])]...)
	})
	out = bytes.ReplaceAll(out, []byte("$${"), []byte("${"))
	return bytes.ReplaceAll(out, []byte("%%{"), []byte("%{"))
}

// checkASL writes every definition (as generated, and as Terraform renders it) and runs
// asl-validator on both.
func checkASL(t *testing.T, f *ir.Fleet, files []artifact.File) {
	t.Helper()
	dir := t.TempDir()
	for _, file := range files {
		for _, variant := range []struct {
			name string
			b    []byte
		}{{"template", file.Bytes}, {"rendered", substitute(f, file.Bytes)}} {
			if !json.Valid(variant.b) {
				t.Fatalf("%s (%s) is not JSON", file.Path, variant.name)
			}
			p := filepath.Join(dir, variant.name, filepath.FromSlash(file.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, variant.b, 0o644); err != nil {
				t.Fatal(err)
			}
			err := verifytest.ASL(p)
			verifytest.SkipIfMissing(t, err)
			if err != nil {
				t.Errorf("%s (%s): %v", file.Path, variant.name, err)
			}
		}
	}
}

func TestExamples(t *testing.T) {
	for _, path := range examples(t) {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			f := lower(t, path)
			files, ds := Generate(f)
			if ds.HasErrors() {
				t.Fatalf("Generate: %v", ds)
			}
			want := len(f.Workflows)
			if f.HasApprovals() {
				want++ // the approval recorder, last
				if files[len(files)-1].Path != RecorderPath {
					t.Errorf("last file is %s, not the recorder", files[len(files)-1].Path)
				}
			}
			if len(files) != want {
				t.Fatalf("%d files for %d workflows", len(files), len(f.Workflows))
			}
			for i, w := range f.Workflows {
				if files[i].Path != "statemachines/"+w.Name+".asl.json" {
					t.Errorf("file %d is %s", i, files[i].Path)
				}
			}
			checkASL(t, f, files)
			checkInvariants(t, f, files)
		})
	}
}

// walk calls fn for every state, descending into Map item processors.
func walk(states map[string]any, fn func(name string, s map[string]any)) {
	for name, v := range states {
		s := v.(map[string]any)
		fn(name, s)
		if ip, ok := s["ItemProcessor"].(map[string]any); ok {
			walk(ip["States"].(map[string]any), fn)
		}
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkInvariants asserts what every callback task must carry, whatever the fleet.
func checkInvariants(t *testing.T, f *ir.Fleet, files []artifact.File) {
	t.Helper()
	for _, file := range files {
		if !bytes.HasSuffix(file.Bytes, []byte("}\n")) || !bytes.Contains(file.Bytes, []byte("\n  \"StartAt\"")) {
			t.Errorf("%s: not 2-space indented with a trailing newline", file.Path)
		}
		def := decode(t, file.Bytes)
		if def["QueryLanguage"] != "JSONPath" {
			t.Errorf("%s: QueryLanguage %v", file.Path, def["QueryLanguage"])
		}
		tasks := 0
		wfName := strings.TrimSuffix(strings.TrimPrefix(file.Path, "statemachines/"), ".asl.json")
		walk(def["States"].(map[string]any), func(name string, s map[string]any) {
			if s["Type"] == "Map" {
				checkResultWriter(t, file.Path, wfName, name, s)
				return
			}
			if s["Type"] != "Task" {
				return
			}
			tasks++
			if s["Resource"] == InvokeResource {
				checkInvokeTask(t, f, file.Path+"/"+name, s)
				return
			}
			if s["Resource"] == StartExecutionResource {
				checkApprovalTask(t, file.Path+"/"+name, s)
				return
			}
			if file.Path == RecorderPath {
				checkRecorderTask(t, name, s)
				return
			}
			if s["Resource"] != Resource {
				t.Errorf("%s/%s: Resource %v", file.Path, name, s["Resource"])
			}
			params := s["Parameters"].(map[string]any)
			body := params["MessageBody"].(map[string]any)
			for k, want := range map[string]string{"TaskToken.$": "$$.Task.Token", "execution_id.$": "$$.Execution.Id", "state.$": "$$.State.Name", "detail.$": "$"} {
				if body[k] != want {
					t.Errorf("%s/%s: MessageBody[%q] = %v, want %q", file.Path, name, k, body[k], want)
				}
			}
			if tr, _ := body["trace_id.$"].(string); !strings.HasSuffix(tr, ".trace_id") {
				t.Errorf("%s/%s: trace_id.$ = %v", file.Path, name, body["trace_id.$"])
			}
			url, _ := params["QueueUrl"].(string)
			var agent *ir.Agent
			for _, a := range f.Agents {
				if url == "${"+ir.QueueURLVar(a)+"}" {
					agent = a
				}
			}
			if agent == nil {
				t.Fatalf("%s/%s: QueueUrl %q is no class's placeholder", file.Path, name, url)
			}
			group, hasGroup := params["MessageGroupId.$"].(string)
			if hasGroup != agent.FIFO {
				t.Errorf("%s/%s: MessageGroupId.$ present=%v, class %s FIFO=%v", file.Path, name, hasGroup, agent.Name, agent.FIFO)
			}
			// SQS takes only string group ids: a group_by field is always formatted, never raw.
			if hasGroup && group != "$$.Execution.Name" && !strings.HasPrefix(group, "States.Format(") {
				t.Errorf("%s/%s: MessageGroupId.$ = %q is a raw path; want States.Format", file.Path, name, group)
			}
			timeout, ok := s["TimeoutSeconds"].(float64)
			if !ok || timeout <= 0 {
				t.Errorf("%s/%s: TimeoutSeconds %v", file.Path, name, s["TimeoutSeconds"])
			}
			if hb, ok := s["HeartbeatSeconds"].(float64); ok && hb >= timeout {
				t.Errorf("%s/%s: HeartbeatSeconds %v >= TimeoutSeconds %v", file.Path, name, hb, timeout)
			}
			sqsRetry := false
			for _, r := range s["Retry"].([]any) {
				r := r.(map[string]any)
				errs := r["ErrorEquals"].([]any)
				if errs[0] == ErrSQSService {
					sqsRetry = r["JitterStrategy"] == "FULL" && r["BackoffRate"].(float64) > 1
				}
			}
			if !sqsRetry {
				t.Errorf("%s/%s: no jittered backoff retrier for SQS errors: %v", file.Path, name, s["Retry"])
			}
		})
		if tasks == 0 {
			t.Errorf("%s: no callback task", file.Path)
		}
	}
}

// checkInvokeTask: a synchronous step invokes a lambda class's function with the task shape
// minus TaskToken, within the 5-minute Express limit, with a jittered retry of Lambda faults.
func checkInvokeTask(t *testing.T, f *ir.Fleet, where string, s map[string]any) {
	t.Helper()
	params := s["Parameters"].(map[string]any)
	var agent *ir.Agent
	for _, a := range f.Agents {
		if params["FunctionName"] == "${"+ir.FunctionARNVar(a)+"}" && a.Lambda != nil {
			agent = a
		}
	}
	if agent == nil {
		t.Fatalf("%s: FunctionName %v is no lambda class's placeholder", where, params["FunctionName"])
	}
	payload := params["Payload"].(map[string]any)
	for k, want := range map[string]string{"execution_id.$": "$$.Execution.Id", "state.$": "$$.State.Name", "detail.$": "$", "entered_time.$": "$$.State.EnteredTime"} {
		if payload[k] != want {
			t.Errorf("%s: Payload[%q] = %v, want %q", where, k, payload[k], want)
		}
	}
	if _, ok := payload["TaskToken.$"]; ok || s["HeartbeatSeconds"] != nil {
		t.Errorf("%s: a synchronous invoke carries a task token or heartbeat", where)
	}
	if timeout, _ := s["TimeoutSeconds"].(float64); timeout <= 0 || timeout > 300 || payload["timeout_seconds"] != timeout {
		t.Errorf("%s: TimeoutSeconds %v (payload %v), want 1–300", where, s["TimeoutSeconds"], payload["timeout_seconds"])
	}
	retried := false
	for _, r := range s["Retry"].([]any) {
		r := r.(map[string]any)
		if r["ErrorEquals"].([]any)[0] == "Lambda.ServiceException" {
			retried = r["JitterStrategy"] == "FULL"
		}
	}
	if !retried {
		t.Errorf("%s: no jittered retrier for Lambda faults: %v", where, s["Retry"])
	}
}

// checkResultWriter asserts that a Distributed Map exports its child results to the
// claim-check bucket under fanout/<workflow>/<state> and keeps only the export's reference.
func checkResultWriter(t *testing.T, path, wf, name string, s map[string]any) {
	t.Helper()
	want := map[string]any{
		"Resource":   "arn:aws:states:::s3:putObject",
		"Parameters": map[string]any{"Bucket": "${claim_check_bucket}", "Prefix": "fanout/" + wf + "/" + name},
	}
	if !reflect.DeepEqual(s["ResultWriter"], want) {
		t.Errorf("%s/%s: ResultWriter = %v, want %v", path, name, s["ResultWriter"], want)
	}
	if sel := s["ResultSelector"]; !reflect.DeepEqual(sel, map[string]any{"ResultWriterDetails.$": "$.ResultWriterDetails"}) {
		t.Errorf("%s/%s: ResultSelector = %v, want only the ResultWriterDetails reference", path, name, sel)
	}
}

// stateOrder returns the keys of def.States in document order.
func stateOrder(t *testing.T, b []byte) []string {
	t.Helper()
	var raw struct{ States json.RawMessage }
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw.States))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func byPath(files []artifact.File) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range files {
		m[f.Path] = f.Bytes
	}
	return m
}

func TestFixture(t *testing.T) {
	f := lower(t, "testdata/fleet.yaml")
	files, ds := Generate(f)
	if len(ds) != 0 {
		t.Fatalf("Generate: %v", ds)
	}
	got := byPath(files)
	var paths []string
	for p := range got {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	want := []string{"statemachines/ordered-fanout.asl.json", "statemachines/pipeline.asl.json", "statemachines/single.asl.json"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("files %v, want %v", paths, want)
	}
	checkASL(t, f, files)
	checkInvariants(t, f, files)

	pipe := got["statemachines/pipeline.asl.json"]
	if order := stateOrder(t, pipe); !reflect.DeepEqual(order, []string{"Order", "PlainWorker", "Spread", "OrderFailed", "PlainWorkerFailed", "SpreadFailed"}) {
		t.Errorf("pipeline state order %v", order)
	}
	def := decode(t, pipe)
	if def["StartAt"] != "Order" || !strings.Contains(def["Comment"].(string), "$${not_a_var}") {
		t.Errorf("pipeline StartAt %v, Comment %q (want the spec's ${ escaped for templatefile)", def["StartAt"], def["Comment"])
	}
	st := def["States"].(map[string]any)
	order := st["Order"].(map[string]any)
	if order["TimeoutSeconds"] != 1800.0 || order["HeartbeatSeconds"] != 300.0 {
		t.Errorf("Order timeout/heartbeat %v/%v, want 1800/300", order["TimeoutSeconds"], order["HeartbeatSeconds"])
	}
	if g := order["Parameters"].(map[string]any)["MessageGroupId.$"]; g != "States.Format('{}', $.tenant)" {
		t.Errorf("Order MessageGroupId.$ = %v", g)
	}
	timeoutRetry := order["Retry"].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(timeoutRetry["ErrorEquals"], []any{"States.Timeout", "States.HeartbeatTimeout"}) || timeoutRetry["MaxAttempts"] != 2.0 {
		t.Errorf("Order timeout retrier %v, want States.Timeout/HeartbeatTimeout × 2", timeoutRetry)
	}
	if order["ResultPath"] != "$.steps.Order" || order["Next"] != "PlainWorker" {
		t.Errorf("Order ResultPath %v Next %v", order["ResultPath"], order["Next"])
	}
	catch := order["Catch"].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(catch["ErrorEquals"], []any{"States.ALL"}) || catch["Next"] != "OrderFailed" {
		t.Errorf("Order Catch %v", catch)
	}
	fail := st["OrderFailed"].(map[string]any)
	if fail["Type"] != "Fail" || fail["ErrorPath"] != "$.error.Error" || fail["CausePath"] != "$.error.Cause" {
		t.Errorf("OrderFailed %v", fail)
	}

	plain := st["PlainWorker"].(map[string]any)
	if _, ok := plain["HeartbeatSeconds"]; ok {
		t.Errorf("PlainWorker has HeartbeatSeconds without a heartbeat: %v", plain)
	}
	for _, r := range plain["Retry"].([]any) {
		if errs := r.(map[string]any)["ErrorEquals"].([]any); errs[0] == "States.Timeout" {
			t.Errorf("PlainWorker has retries 0 but retries timeouts: %v", r)
		}
	}
	if _, ok := plain["Parameters"].(map[string]any)["MessageGroupId.$"]; ok {
		t.Error("standard-queue step carries MessageGroupId.$")
	}
	// Default timeout = 2 × step.max + visibility (lambda: 6 × 60 s) = 120 + 360.
	if plain["TimeoutSeconds"] != 480.0 {
		t.Errorf("PlainWorker TimeoutSeconds %v, want 480", plain["TimeoutSeconds"])
	}

	spread := st["Spread"].(map[string]any)
	if spread["Type"] != "Map" || spread["ItemsPath"] != "$.parts" || spread["MaxConcurrency"] != 50.0 || spread["ToleratedFailurePercentage"] != 10.0 || spread["End"] != true {
		t.Errorf("Spread %v", spread)
	}
	// The item results go to S3; the state keeps the export reference at the step's ResultPath.
	rw := spread["ResultWriter"].(map[string]any)["Parameters"].(map[string]any)
	if rw["Prefix"] != "fanout/pipeline/Spread" || rw["Bucket"] != "${claim_check_bucket}" || spread["ResultPath"] != "$.steps.Spread" {
		t.Errorf("Spread ResultWriter %v ResultPath %v", rw, spread["ResultPath"])
	}
	rendered := decode(t, substitute(f, pipe))
	rrw := rendered["States"].(map[string]any)["Spread"].(map[string]any)["ResultWriter"].(map[string]any)["Parameters"].(map[string]any)
	if rrw["Bucket"] != "fixture-claimcheck-eu-central-1" {
		t.Errorf("rendered ResultWriter bucket %v, want the claim-check bucket", rrw["Bucket"])
	}
	ip := spread["ItemProcessor"].(map[string]any)
	if !reflect.DeepEqual(ip["ProcessorConfig"], map[string]any{"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}) {
		t.Errorf("ProcessorConfig %v", ip["ProcessorConfig"])
	}
	batcher := spread["ItemBatcher"].(map[string]any)
	if batcher["MaxInputBytesPerBatch"] != 65536.0 || batcher["BatchInput"].(map[string]any)["trace_id.$"] != "$.trace_id" {
		t.Errorf("ItemBatcher %v", batcher)
	}
	child := ip["States"].(map[string]any)[ip["StartAt"].(string)].(map[string]any)
	if body := child["Parameters"].(map[string]any)["MessageBody"].(map[string]any); body["trace_id.$"] != "$.BatchInput.trace_id" {
		t.Errorf("batched child reads trace_id at %v", body["trace_id.$"])
	}
	if child["End"] != true || child["TimeoutSeconds"] != 600.0 {
		t.Errorf("Spread child %v", child)
	}

	fan := decode(t, got["statemachines/ordered-fanout.asl.json"])
	m := fan["States"].(map[string]any)["OrderedFanOut"].(map[string]any)
	if _, ok := m["ItemBatcher"]; ok {
		t.Error("unbatched fan-out has an ItemBatcher")
	}
	sel := m["ItemSelector"].(map[string]any)
	if sel["trace_id.$"] != "$.trace_id" || sel["tenant.$"] != "$.tenant" || sel["item.$"] != "$$.Map.Item.Value" {
		t.Errorf("ItemSelector %v", sel)
	}
	ip = m["ItemProcessor"].(map[string]any)
	child = ip["States"].(map[string]any)[ip["StartAt"].(string)].(map[string]any)
	if g := child["Parameters"].(map[string]any)["MessageGroupId.$"]; g != "States.Format('{}#{}', $.tenant, $.index)" {
		t.Errorf("FIFO child MessageGroupId.$ = %v", g)
	}
	if child["HeartbeatSeconds"] != 600.0 || child["TimeoutSeconds"] != 3600.0 {
		t.Errorf("FIFO child timeout/heartbeat %v/%v", child["TimeoutSeconds"], child["HeartbeatSeconds"])
	}
	if m["Label"] != "OrderedFanOut" || m["End"] != true {
		t.Errorf("Label %v End %v", m["Label"], m["End"])
	}

	single := decode(t, got["statemachines/single.asl.json"])
	if single["Comment"] != "Workflow single (generated by fleetc)." {
		t.Errorf("single Comment %q", single["Comment"])
	}
}

func TestRefusals(t *testing.T) {
	f := lower(t, "testdata/invalid.yaml")
	files, ds := Generate(f)
	if len(files) != 1 || files[0].Path != "statemachines/fine.asl.json" {
		var ps []string
		for _, fl := range files {
			ps = append(ps, fl.Path)
		}
		t.Errorf("files %v, want only statemachines/fine.asl.json", ps)
	}
	type key struct{ code, path string }
	var got []key
	for _, d := range ds {
		if d.Severity != diag.Error {
			continue
		}
		got = append(got, key{d.Code, d.Path})
		if d.Subject == nil || d.Subject.Start.Line == 0 || d.Detail == "" {
			t.Errorf("%s at %s: no source position or no detail", d.Code, d.Path)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].path < got[j].path })
	want := []key{
		{"S009", "/workflows/express-children/steps/0/fan_out/agent"},
		{"S009", "/workflows/quick/steps/0/agent"},
		{"S003", "/workflows/slow-heartbeat/steps/0/heartbeat"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics %v, want %v", got, want)
	}
	checkASL(t, f, files)
}

func TestDeterministic(t *testing.T) {
	for _, path := range append(examples(t), "testdata/fleet.yaml") {
		a, _ := Generate(lower(t, path))
		b, _ := Generate(lower(t, path))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ", path)
		}
	}
}

// TestValidatorCatches proves the asl-validator check is live: a definition whose last state
// lost its End is refused.
func TestValidatorCatches(t *testing.T) {
	f := lower(t, "testdata/fleet.yaml")
	files, _ := Generate(f)
	b := byPath(files)["statemachines/single.asl.json"]
	broken := bytes.Replace(b, []byte(`"End": true`), []byte(`"End": false`), 1)
	if bytes.Equal(b, broken) {
		t.Fatal("no End in single.asl.json")
	}
	p := filepath.Join(t.TempDir(), "broken.asl.json")
	if err := os.WriteFile(p, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	err := verifytest.ASL(p)
	verifytest.SkipIfMissing(t, err)
	if err == nil {
		t.Error("asl-validator accepted a state machine without a terminal state")
	}
}

// TestGroupIDAlwaysString: SQS MessageGroupId is a string, and a group_by field may hold a
// number, so every path is wrapped in States.Format — plain steps, batched fan-out children
// (key in BatchInput) and per-item lanes alike.
func TestGroupIDAlwaysString(t *testing.T) {
	a := &ir.Agent{Name: "conv-worker", FIFO: true, GroupBy: "conv", Queue: ir.Queue{Name: "x-conv-worker.fifo", FIFO: true}}
	w := &ir.Workflow{Name: "w", Path: "/workflows/w", Type: "standard", Agents: []*ir.Agent{a}, Steps: []*ir.Step{
		{Name: "One", Path: "/workflows/w/steps/0", Agent: a, Timeout: 60e9},
		{Name: "Batched", Path: "/workflows/w/steps/1", Agent: a, Timeout: 60e9,
			FanOut: &ir.FanOut{Items: "$.xs", MaxConcurrency: 2, ExecutionType: "STANDARD", BatchInputBytes: 1024}},
		{Name: "Lanes", Path: "/workflows/w/steps/2", Agent: a, Timeout: 60e9,
			FanOut: &ir.FanOut{Items: "$.ys", MaxConcurrency: 2, ExecutionType: "STANDARD"}},
	}}
	f := &ir.Fleet{Name: "x", Region: "us-east-1", Agents: []*ir.Agent{a}, Workflows: []*ir.Workflow{w},
		State: ir.State{ClaimCheckBucket: "x-claimcheck-us-east-1"}}
	files, ds := Generate(f)
	if len(files) != 1 || ds.HasErrors() {
		t.Fatalf("Generate: %d files, %v", len(files), ds)
	}
	got := map[string]any{}
	walk(decode(t, files[0].Bytes)["States"].(map[string]any), func(name string, s map[string]any) {
		if p, ok := s["Parameters"].(map[string]any); ok {
			got[name] = p["MessageGroupId.$"]
		}
	})
	want := map[string]any{
		"One":         "States.Format('{}', $.conv)",
		"BatchedItem": "States.Format('{}', $.BatchInput.conv)",
		"LanesItem":   "States.Format('{}#{}', $.conv, $.index)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MessageGroupId.$ = %v, want %v", got, want)
	}
	checkASL(t, f, files)
	checkInvariants(t, f, files)
}

// TestCodes: every code asl.go emits is either listed by Codes or is a rule ID / spec code
// documented elsewhere, and Codes lists nothing the package cannot emit.
func TestCodes(t *testing.T) {
	src, err := os.ReadFile("asl.go")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:Errorf|Warnf)\("([A-Z]+[0-9]+)"`).FindAllSubmatch(src, -1) {
		emitted[string(m[1])] = true
	}
	external := map[string]bool{"S002": true, "S003": true, "S006": true, "S009": true, "S010": true, "P008": true}
	own := map[string]bool{}
	for _, c := range Codes() {
		own[c.ID] = true
		if !emitted[c.ID] || external[c.ID] {
			t.Errorf("Codes lists %s, which asl.go does not emit or which is documented elsewhere", c.ID)
		}
		if c.Severity != "error" && c.Severity != "warning" || c.Summary == "" || len(c.Explain) < 80 {
			t.Errorf("%s: severity %q, summary %q, explain %d chars", c.ID, c.Severity, c.Summary, len(c.Explain))
		}
	}
	for code := range emitted {
		if !own[code] && !external[code] {
			t.Errorf("asl.go emits %s, which Codes does not document", code)
		}
	}
}

// TestBuiltInCode covers fleets built without a source file (no Index) and edge settings the
// loader would not produce: a FIFO class without group_by.
func TestBuiltInCode(t *testing.T) {
	a := &ir.Agent{Name: "solo-worker", FIFO: true, Queue: ir.Queue{Name: "x-solo-worker.fifo", FIFO: true}}
	f := &ir.Fleet{Name: "x", Region: "us-east-1", Agents: []*ir.Agent{a}, Workflows: []*ir.Workflow{{
		Name: "w", Path: "/workflows/w", Type: "standard",
		Steps: []*ir.Step{{
			Name: "Fan", Path: "/workflows/w/steps/0", Agent: a, Timeout: 90e9,
			FanOut: &ir.FanOut{Items: "$.xs", MaxConcurrency: 3, ToleratedFailurePercent: 2, ExecutionType: "STANDARD"},
		}},
		Agents: []*ir.Agent{a},
	}, {
		Name: "e", Path: "/workflows/e", Type: "express",
		Steps: []*ir.Step{{Name: "S", Path: "/workflows/e/steps/0", Agent: a, Timeout: 60e9}},
	}}}
	files, ds := Generate(f)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	codes := map[string]diag.Severity{}
	for _, d := range ds {
		codes[d.Code] = d.Severity
	}
	if codes["S009"] != diag.Error || len(ds) != 1 {
		t.Errorf("diagnostics %v", ds)
	}
	def := decode(t, files[0].Bytes)
	m := def["States"].(map[string]any)["Fan"].(map[string]any)
	if m["ToleratedFailurePercentage"] != 2.0 || m["TimeoutSeconds"] != nil {
		t.Errorf("Fan map %v", m)
	}
	ip := m["ItemProcessor"].(map[string]any)
	child := ip["States"].(map[string]any)["FanItem"].(map[string]any)
	params := child["Parameters"].(map[string]any)
	if params["MessageGroupId.$"] != "$$.Execution.Name" || params["QueueUrl"] != "${queue_url_solo_worker}" {
		t.Errorf("child params %v", params)
	}
	checkASL(t, f, files)
}
