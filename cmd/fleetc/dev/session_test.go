package dev

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/internal/localhttp/localhttptest"
	"github.com/fleetc/fleetc/schemas/contract"
)

// The recorded session (testdata/session): two conversations of the research example.
const (
	traceC1 = "4f7c9dba58ad9690315bc7c5f764ea66" // requested, run by researcher's stand-in, finished, completed
	traceC2 = "0926ace373ee976a3ff4acebdedd50d0" // requested, coder's handler failed by a fault, released, dead-lettered
)

// sessionT0 is when the recorded session starts.
var sessionT0 = time.Date(2026, 12, 3, 22, 59, 10, 0, time.UTC)

// recordedSession is a dev Fleet of the research example that saw the recorded session: the
// observer took kumo's deliveries, dev-handler (RunHandler, for real) ran both steps and wrote
// the steps file, which dev read, and the workers' verdict lines went through the ledger.
func recordedSession(t *testing.T) (*Fleet, *bytes.Buffer) {
	t.Helper()
	f, cs := research(t)
	var log bytes.Buffer
	dir := t.TempDir()
	d := &Fleet{ir: f, contracts: cs, done: make(chan struct{}), journal: &journal{}, stepsAt: filepath.Join(dir, "steps.jsonl"),
		faultsAt: filepath.Join(dir, "faults.json"), opts: Options{Verbose: true}}
	d.obs = &observer{d: d, byType: map[string]int{}, submitted: map[string]int{}}
	d.sup = &supervisor{out: &prefixer{w: &log, width: len("researcher")}, led: newLedger([]string{"researcher", "coder"}),
		procs: map[string]*proc{}, journal: d.journal}
	at := func(d time.Duration) time.Time { return sessionT0.Add(d) }

	bus := readLines(t, "testdata/session/bus.jsonl")
	d.obs.seen([]byte(bus[0]), d.sup.out, at(0))
	d.obs.seen([]byte(bus[1]), d.sup.out, at(time.Second))

	if err := WriteFaults(d.faultsAt, Faults{"coder": {Kind: FaultFail, Until: at(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	step := func(class, traceID, key string, start time.Duration, input string) {
		t.Setenv(contract.ExecTraceIDEnv, traceID)
		t.Setenv(contract.ExecKeyEnv, key)
		t.Setenv(contract.ExecAttemptEnv, "1")
		clock := at(start)
		now := func() time.Time { clock = clock.Add(50 * time.Millisecond); return clock.Add(-50 * time.Millisecond) }
		var out, errw bytes.Buffer
		RunHandler([]string{"--faults", d.faultsAt, "--class", class, StepsFlag, d.stepsAt, "--"}, strings.NewReader(input), &out, &errw, now)
	}
	step("researcher", traceC1, "da7b55c3-1da9-476d-a676-46757dd80ec7", 2*time.Second,
		`{"conversation_id":"c1","step":1,"agent_class":"researcher","trace_id":"`+traceC1+`","payload":{"question":"why"}}`)
	step("coder", traceC2, `["`+traceC2+`","1"]`, 3*time.Second, `{"conversation_id":"c2","step":1,"agent_class":"coder","trace_id":"`+traceC2+`"}`)
	readSteps(d.stepsAt, 0, d.stepSeen)

	verdictAt := []time.Duration{4 * time.Second, 3500 * time.Millisecond, 5 * time.Second}
	for i, l := range readLines(t, "testdata/session/worker.log") {
		class, line, _ := strings.Cut(l, " | ")
		if e, ok := d.sup.led.observe(class, line, at(verdictAt[i])); ok {
			d.journal.add(e)
		}
	}
	d.obs.seen([]byte(bus[2]), d.sup.out, at(4500*time.Millisecond))
	return d, &log
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// serveSession serves d as `fleetc dev` does and answers its base URL.
func serveSession(t *testing.T, d *Fleet) string {
	t.Helper()
	var current atomic.Pointer[Fleet]
	current.Store(d)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, addr, err := serve(ctx, 0, &current)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return "http://" + addr
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := localhttptest.Send(t, "GET", url, nil, nil, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}

// entryLine is an entry as the tests compare it.
func entryLine(e trace.Entry) string {
	return e.Time.Format("05.000") + " " + string(e.Source) + " " + e.Where + " " + e.What
}

// TestTraceOfARecordedSession: GET /api/trace/{id} answers one conversation, from the bus
// to its completion, in time order, each entry with its payloads: the events' details (with
// their claim-check references named), the step's input and result; and nothing of the other
// conversation. GET /api/activity answers both, the dead letter with its ERROR_CODE.
func TestTraceOfARecordedSession(t *testing.T) {
	d, _ := recordedSession(t)
	base := serveSession(t, d)

	var tl trace.Timeline
	getJSON(t, base+"/api/trace/"+traceC1, &tl)
	var got []string
	for _, e := range tl.Entries {
		got = append(got, entryLine(e))
	}
	want := []string{
		"10.000 bus fleet.coordinator agent.step.requested",
		"12.000 step researcher handler exit 0",
		"14.000 worker researcher finished",
		"14.500 bus fleet.workers agent.step.completed",
	}
	if tl.TraceID != traceC1 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("trace %s:\n%s\nwant:\n%s", tl.TraceID, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cc := tl.Entries[0].Payloads[0].ClaimChecks; len(cc) != 1 || cc[0] != "payload_ref: s3://research-fleet-claims/in/c1/1.json" {
		t.Errorf("the request's claim check: %q", cc)
	}
	if cc := tl.Entries[3].Payloads[0].ClaimChecks; len(cc) != 1 || cc[0] != "result_ref: s3://research-fleet-claims/out/researcher/x.json" {
		t.Errorf("the completion's claim check: %q", cc)
	}
	if d := tl.Entries[0].Payloads[0]; d.Kind != trace.PayloadDetail || !strings.Contains(d.Body, `"conversation_id":"c1"`) {
		t.Errorf("the request's detail: %+v", d)
	}
	ps := tl.Entries[1].Payloads
	if len(ps) != 2 || ps[0].Kind != trace.PayloadInput || !strings.Contains(ps[0].Body, `"question":"why"`) ||
		ps[1].Kind != trace.PayloadResult || !strings.Contains(ps[1].Body, `"stand_in":true`) || !strings.Contains(ps[1].Body, `"question":"why"`) {
		t.Errorf("the step's input and result: %+v", ps)
	}
	if tl.Entries[1].ID != "da7b55c3-1da9-476d-a676-46757dd80ec7" || !strings.Contains(tl.Entries[1].Detail, "attempt 1") {
		t.Errorf("the step: %+v", tl.Entries[1])
	}

	var a Activity
	getJSON(t, base+"/api/activity", &a)
	var c2 []string
	for _, e := range a.Entries {
		if e.TraceID == traceC2 {
			c2 = append(c2, entryLine(e))
		}
	}
	want2 := []string{
		"11.000 bus fleet.coordinator agent.step.requested",
		"13.000 step coder handler exit 75",
		"13.500 worker coder released Exit75",
		"15.000 worker coder dead-lettered ModelPolicyNotAllowed",
	}
	if len(a.Entries) != 8 || strings.Join(c2, "\n") != strings.Join(want2, "\n") {
		t.Errorf("activity: %d entries; trace %s:\n%s\nwant:\n%s", len(a.Entries), traceC2, strings.Join(c2, "\n"), strings.Join(want2, "\n"))
	}
}

// TestStepRecordBoundedAndRedacted: dev-handler records a real command's input and result
// with the values of its --secret variables replaced, as written and JSON-escaped, and a
// large input cut at trace.PayloadMaxBytes with a marker and its whole size.
func TestStepRecordBoundedAndRedacted(t *testing.T) {
	const secret = `tok"en-4f1d` // a quote: inside a JSON string it is escaped
	t.Setenv("API_TOKEN", secret)
	t.Setenv(contract.ExecTraceIDEnv, "t-secret")
	steps := filepath.Join(t.TempDir(), "steps.jsonl")
	esc, _ := json.Marshal(secret)
	input := `{"token":` + string(esc) + `,"pad":"` + strings.Repeat("x", 3*trace.PayloadMaxBytes) + `"}`
	var out, errw bytes.Buffer
	code := RunHandler([]string{"--class", "c", StepsFlag, steps, SecretFlag, "API_TOKEN", "--",
		"sh", "-c", `cat >/dev/null; printf '{"echoed":"%s"}\n' "$API_TOKEN"`}, strings.NewReader(input), &out, &errw, time.Now)
	if code != 0 || out.String() != `{"echoed":"`+secret+"\"}\n" {
		t.Fatalf("the handler's own answer must pass unchanged: exit %d, %q, stderr %s", code, out.String(), errw.String())
	}
	b, err := os.ReadFile(steps)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("4f1d")) {
		t.Errorf("the secret is in the steps file:\n%s", b)
	}
	var rec StepRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	in, res := rec.Input, rec.Result
	if !strings.HasPrefix(in.Body, `{"token":"[secret API_TOKEN]","pad":"xxx`) || !in.Truncated || in.Bytes != len(input) ||
		!strings.HasSuffix(in.Body, trace.TruncatedMarker(trace.PayloadMaxBytes, len(input))) {
		t.Errorf("input: %d bytes, truncated %v, body %.80q…%q", in.Bytes, in.Truncated, in.Body, in.Body[max(0, len(in.Body)-60):])
	}
	if res.Body != `{"echoed":"[secret API_TOKEN]"}`+"\n" || res.Truncated || rec.TraceID != "t-secret" || rec.Ran != `sh -c cat >/dev/null; printf '{"echoed":"%s"}\n' "$API_TOKEN"` {
		t.Errorf("record: %+v", rec)
	}
}

// TestVerboseLogsDetailInputResult: with --verbose the interleaved log has each event's
// detail and each step's input and result, one line each.
func TestVerboseLogsDetailInputResult(t *testing.T) {
	_, log := recordedSession(t)
	for _, want := range []string{
		`observer   | detail (trace ` + traceC1 + `): {"conversation_id":"c1","step":1,"agent_class":"researcher","trace_id":"` + traceC1 +
			`","payload_ref":{"type":"s3","bucket":"research-fleet-claims","key":"in/c1/1.json"}} (claim check payload_ref: s3://research-fleet-claims/in/c1/1.json)`,
		`researcher | step input (trace ` + traceC1 + `, attempt 1): {"conversation_id":"c1"`,
		`researcher | step result (trace ` + traceC1 + `, exit 0, 50 ms): {"echo":{"agent_class":"researcher"`,
		`coder      | step result (trace ` + traceC2 + `, exit 75, 100 ms): ` + "\n", // the fault: no answer
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, log.String())
		}
	}
}

// TestJournalRedactsSecrets: what the observer and the workers' lines put in the journal
// never holds the value of a handler secret or a model key named in the spec, as this
// shell has it: not in an event's detail (a handler may emit it), not in a dead letter's
// reason (the tail of the handler's stderr).
func TestJournalRedactsSecrets(t *testing.T) {
	const secret = "sk-live-93e1"
	d, _ := recordedSession(t)
	d.redact = newRedactor([]string{"OPENAI_API_KEY"}, func(string) string { return secret })
	d.journal.redact = d.redact
	bus := readLines(t, "testdata/session/bus.jsonl")
	d.obs.seen([]byte(strings.Replace(bus[1], `"step":1`, `"step":1,"leak":"`+secret+`"`, 1)), d.sup.out, sessionT0)
	line := strings.Replace(readLines(t, "testdata/session/worker.log")[2], "allows flaky", "stderr: key "+secret, 1)
	_, line, _ = strings.Cut(line, " | ")
	e, ok := d.sup.led.observe("coder", line, sessionT0)
	if !ok {
		t.Fatal("the dead-letter line is no verdict")
	}
	d.journal.add(e)
	b, _ := json.Marshal(d.journal.of(traceC2))
	if strings.Contains(string(b), secret) || strings.Count(string(b), redacted("OPENAI_API_KEY")) != 2 {
		t.Errorf("the journal of %s:\n%s", traceC2, b)
	}
}

// TestHostileTextKeepsTheLogOneLinePerEvent: an event's type, source and trace id, written
// by whoever put it on the bus, cannot forge a line of dev's log, nor can a step's trace id
// with --verbose.
func TestHostileTextKeepsTheLogOneLinePerEvent(t *testing.T) {
	d, log := recordedSession(t)
	log.Reset()
	const forged = "\nresearcher | step finished\r"
	bus := readLines(t, "testdata/session/bus.jsonl")
	hostile := strings.Replace(bus[1], traceC2, strings.Trim(fmt.Sprintf("%q", forged), `"`), 1)
	hostile = strings.Replace(hostile, `"source":"fleet.coordinator"`, `"source":"x\nobserver   | forged"`, 1)
	d.obs.seen([]byte(hostile), d.sup.out, sessionT0)
	for _, l := range verboseLines(&StepRecord{TraceID: forged}) {
		d.sup.out.line("coder", l)
	}
	for _, l := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "researcher") || strings.Contains(l, "\r") || strings.HasSuffix(l, "| forged") {
			t.Errorf("a forged line:\n%s", log.String())
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 4 {
		t.Errorf("%d lines, want 4 (event, detail, input, result):\n%s", n, log.String())
	}
}
