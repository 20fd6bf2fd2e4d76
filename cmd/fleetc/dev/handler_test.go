package dev

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/router/gateway/gatewayenv"
	"github.com/fleetc/fleetc/runtime/worker"
)

func TestRunHandlerFaultsAndStandIn(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults.json")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := RunHandler(append([]string{"--faults", faults, "--class", "greeter", "--"}, args...), strings.NewReader(`{"name":"x"}`), &out, &errb, clock)
		return code, out.String(), errb.String()
	}
	// The class's own command runs when it exists.
	if code, out, _ := run("/bin/sh", "-c", `cat; echo >&2 real`); code != 0 || out != `{"name":"x"}` {
		t.Errorf("own command: %d %q", code, out)
	}
	// A command that is not here: the stand-in echoes, and says so on stderr.
	code, out, errs := run("/app/greet")
	if code != 0 || strings.TrimSpace(out) != `{"echo":{"name":"x"},"stand_in":true}` || !strings.Contains(errs, "/app/greet is not on this machine") {
		t.Errorf("stand-in: %d %q %q", code, out, errs)
	}
	// A fail fault: exit 75 until it ends; then the step runs again.
	if err := WriteFaults(faults, Faults{"greeter": {Kind: FaultFail, Until: now.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run("/app/greet"); code != 75 || out != "" || !strings.Contains(errs, "dev fault: greeter fails") {
		t.Errorf("fail fault: %d %q %q", code, out, errs)
	}
	now = now.Add(2 * time.Minute)
	if code, _, _ := run("/app/greet"); code != 0 {
		t.Errorf("fault past its end still applies: %d", code)
	}
	// Another class's fault does not apply.
	_ = WriteFaults(faults, Faults{"other": {Kind: FaultFail, Until: now.Add(time.Minute)}})
	if code, _, _ := run("/app/greet"); code != 0 {
		t.Errorf("another class's fault applied: %d", code)
	}
}

func TestLedgerCountsEachKeyOnce(t *testing.T) {
	l := newLedger([]string{"c"})
	now := time.Now()
	l.submit("c", "t1", now.Add(-5*time.Second))
	l.submit("c", "t2", now.Add(-3*time.Second))
	for _, line := range []string{
		`{"msg":"step released","class":"c","key":"k1","trace_id":"t1","attempt":1,"code":"Exit75"}`,
		`{"msg":"step finished","class":"c","key":"k1","trace_id":"t1","attempt":2}`,
		`{"msg":"step finished","class":"c","key":"k1","trace_id":"t1","attempt":3,"duplicate":true}`,
		`{"msg":"handler stderr","class":"c","line":"hi"}`,
		`not json`,
	} {
		l.observe("c", line, time.Now())
	}
	n := l.counts("c", now)
	if n.Completed != 1 || n.Retries != 1 || n.DeadLettered != 0 || n.StderrLines != 1 || len(n.Recent) != 3 {
		t.Errorf("counts = %+v", n)
	}
	if !n.Oldest.Equal(now.Add(-3 * time.Second)) {
		t.Errorf("oldest pending = %v, want t2's", n.Oldest)
	}
	l.observe("c", `{"msg":"step dead-lettered","class":"c","key":"k2","trace_id":"t2","attempt":3,"code":"RetriesExhausted"}`, time.Now())
	n = l.counts("c", now)
	if n.DeadLettered != 1 || n.Codes["RetriesExhausted"] != 1 || !n.Oldest.IsZero() {
		t.Errorf("after dead letter: %+v", n)
	}
	// Redriven and finished: completed once, no longer dead-lettered.
	l.observe("c", `{"msg":"step finished","class":"c","key":"k2","trace_id":"t2","attempt":1}`, time.Now())
	if n = l.counts("c", now); n.Completed != 2 || n.DeadLettered != 0 {
		t.Errorf("after redrive: %+v", n)
	}
}

// dev counts an event as submitted to the classes whose rule takes it: detail-type and
// source, then every matched field (a dotted path; a JSON number matches the spec's integer).
func TestMatches(t *testing.T) {
	task := &ir.Event{DetailType: "task.requested", Source: "app"}
	ms := []ir.Match{{Field: "agent_class", Values: []any{"coder", "reviewer"}}, {Field: "meta.tier", Values: []any{1}}}
	d := &Fleet{ir: &ir.Fleet{Agents: []*ir.Agent{
		{Name: "coder", Consumes: &ir.Consumes{Event: task, Match: ms}},
		{Name: "any", Consumes: &ir.Consumes{Event: task}},
		{Name: "other", Consumes: &ir.Consumes{Event: &ir.Event{DetailType: "task.done", Source: "app"}}},
		{Name: "producer"},
	}}}
	for _, tc := range []struct {
		detail map[string]any
		want   []string
	}{
		{map[string]any{"agent_class": "coder", "meta": map[string]any{"tier": 1.0}}, []string{"coder", "any"}},
		{map[string]any{"agent_class": "researcher", "meta": map[string]any{"tier": 1.0}}, []string{"any"}},
		{map[string]any{"agent_class": "coder"}, []string{"any"}},
	} {
		got := d.consumers(&envelope{DetailType: task.DetailType, Source: task.Source, Detail: tc.detail})
		if !slices.Equal(got, tc.want) {
			t.Errorf("consumers of %v = %v, want %v", tc.detail, got, tc.want)
		}
	}
}

// The stand-in handler tells the worker what the model gateway said: a 429 or 503 with
// retry-after becomes runtime/handler's failure object with retry_after_seconds (a throttle),
// a final answer a non-retryable failure, an outage without retry-after exit 75. The server
// stands in for the worker's model gateway and answers as it does (docs/model-gateway.md).
func TestStandInHandlerModelFailures(t *testing.T) {
	var status int
	var header http.Header
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/model/class-policy/converse" || r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("the stand-in called %s with %q", r.URL.Path, r.Header.Get("Authorization"))
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":"busy"}`))
	}))
	defer gw.Close()
	t.Setenv(gatewayenv.BedrockURL, gw.URL)
	t.Setenv(gatewayenv.Token, "tok")
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		code   int
		out    string
	}{
		{"429 with retry-after-ms", 429, http.Header{"Retry-After-Ms": {"6200"}, "Retry-After": {"7"}}, 75,
			`{"error":{"code":"HTTP429","message":"HTTP429: the model gateway answered 429 : {\"message\":\"busy\"}","retryable":true,"retry_after_seconds":7}}`},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"3"}, "X-Amzn-Errortype": {"ServiceUnavailableException"}}, 75,
			`{"error":{"code":"HTTP503","message":"HTTP503: the model gateway answered 503 ServiceUnavailableException: {\"message\":\"busy\"}","retryable":true,"retry_after_seconds":3}}`},
		{"final", 400, http.Header{"X-Amzn-Errortype": {"ServiceQuotaExceededException"}}, 1,
			`{"error":{"code":"HTTP400","message":"HTTP400: the model gateway answered 400 ServiceQuotaExceededException: {\"message\":\"busy\"}","retryable":false}}`},
		{"503 without retry-after", 503, http.Header{}, 75, ``},
	} {
		status, header = tc.status, tc.header
		var out, errb bytes.Buffer
		code := RunHandler([]string{"--class", "c", "--", "/app/not-here"}, strings.NewReader(`{}`), &out, &errb, time.Now)
		if code != tc.code || strings.TrimSpace(out.String()) != tc.out {
			t.Errorf("%s: exit %d, stdout %s; want %d, %s\nstderr: %s", tc.name, code, out.String(), tc.code, tc.out, errb.String())
		}
	}
}

// devConfigOf writes the dev config of class in examples/async-tools as dev does, from the
// runtime config fleetc build writes, and loads it as fleet-worker would.
func devConfigOf(t *testing.T, class string) (*config.Config, string) {
	t.Helper()
	cfg, note, _ := devConfigIn(t, "../../../examples/async-tools/fleet.yaml", class, "")
	return cfg, note
}

// devConfigIn is class's dev runtime config from spec, and the fleet; steps names the steps
// file ("" for none).
func devConfigIn(t *testing.T, spec, class, steps string) (*config.Config, string, *Fleet) {
	t.Helper()
	res, err := compiler.Compile(compiler.Input{Path: spec, Local: true, Stop: compiler.Checked})
	if err != nil {
		t.Fatal(err)
	}
	f, ds := res.Fleet, res.Diagnostics
	if f == nil || ds.HasErrors() {
		t.Fatalf("%s does not load: %v", spec, ds)
	}
	dir := t.TempDir()
	d := &Fleet{opts: Options{Spec: spec, Dir: dir}, ir: f, faultsAt: filepath.Join(dir, "dev", "faults.json"), stepsAt: steps}
	if err := os.MkdirAll(filepath.Join(dir, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := d.agent(class)
	raw, err := runtimeconfig.Render(f, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, a.ConfigPath)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, a.ConfigPath), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	path, note, err := d.devConfig(a, "fleetc")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, note, d
}

// TestDevConfigRecordsStepsWithoutSecrets: each exec handler runs behind dev-handler with the
// steps file and the names of the class's handler secrets, which it redacts; dev redacts
// every handler secret and model key the spec names.
func TestDevConfigRecordsStepsWithoutSecrets(t *testing.T) {
	cfg, _, d := devConfigIn(t, "../../../compiler/terraform/testdata/modelkeys.yaml", "scraper", "/dev/steps.jsonl")
	cmd := strings.Join(cfg.Handler.Command, " ")
	if !strings.Contains(cmd, " "+StepsFlag+" /dev/steps.jsonl "+SecretFlag+" SEARCH_KEY "+SecretFlag+" VENDOR_TOKEN -- ") {
		t.Errorf("scraper's handler: %s", cmd)
	}
	if got := secretNames(d.ir); !slices.Equal(got, []string{"OPENAI_API_KEY", "SEARCH_KEY", "VENDOR_TOKEN"}) {
		t.Errorf("secret names: %q", got)
	}
}

// The dev config of a class that declares its output gives the stand-in the example of that
// schema, and the stand-in's answer passes the worker's own output check.
func TestStandInAnswersTheOutputSchema(t *testing.T) {
	cfg, note := devConfigOf(t, "cdk-synth")
	if !strings.Contains(note, "a stand-in answers each step with the example of the class's output schema") {
		t.Errorf("note %q", note)
	}
	// The handler's command after `fleetc dev-handler`: the stand-in's flags and /app/cdk-synth.
	var out, errb bytes.Buffer
	if code := RunHandler(cfg.Handler.Command[2:], strings.NewReader(`{"jobId":"j1"}`), &out, &errb, time.Now); code != 0 {
		t.Fatalf("stand-in: exit %d %s", code, errb.String())
	}
	w := &worker.Worker{Cfg: cfg}
	if err := w.CompileContracts(); err != nil {
		t.Fatal(err)
	}
	if msg := w.CheckOutput(out.Bytes()); msg != "" {
		t.Errorf("the stand-in's answer %s breaks cdk-synth's output: %s", out.String(), msg)
	}
}

// An llm class's system prompt, relative to the spec's directory in the spec, is the
// project's file in the dev config: the worker reads it from wherever dev runs.
func TestDevConfigSystemPromptFromTheProject(t *testing.T) {
	cfg, note := devConfigOf(t, "release-assistant")
	want, err := filepath.Abs("../../../examples/async-tools/prompts/release-assistant.md")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Handler.System != want || !strings.Contains(note, want) {
		t.Errorf("system %q, note %q; want %s", cfg.Handler.System, note, want)
	}
	if _, err := os.Stat(cfg.Handler.System); err != nil {
		t.Error(err)
	}
}
