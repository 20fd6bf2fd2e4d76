package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/runtime/wire"
)

// A real fleet-worker on kumo completes one event of conversation conv-1 and dead-letters
// another (the handler's bug); fleetc trace conv-1 shows both paths, oldest first, and
// nothing of another conversation.
func TestTraceShowsCompletedAndDeadLettered(t *testing.T) {
	t.Parallel() // a kumo loop under a fleet name of its own (dlqtest.New)
	f := dlqtest.New(t, "")
	stop := f.StartWorker(t, "solver")
	f.Send(t, "solver", dlqtest.Event("ev-good", map[string]any{"trace_id": "conv-1", "job": "good", "conversation_id": "c1"}), "")
	f.WaitDepth(t, "solver", false, 0, 30*time.Second)
	time.Sleep(1100 * time.Millisecond) // records and letters carry whole seconds: keep the order visible
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad", map[string]any{"trace_id": "conv-1", "job": "bad-1", "conversation_id": "c1"}), "")
	f.Send(t, "solver", dlqtest.Event("ev-other", map[string]any{"trace_id": "conv-2", "job": "other", "conversation_id": "c2"}), "")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-other-bad", map[string]any{"trace_id": "conv-2", "job": "bad-2", "conversation_id": "c2"}), "")
	f.WaitDepth(t, "solver", false, 0, 30*time.Second)
	stop()

	var out, errb bytes.Buffer
	if code := Main([]string{"trace", "conv-1", f.Spec, "--endpoint", f.Endpoint, "--format", "json"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var tl trace.Timeline
	if err := json.Unmarshal(out.Bytes(), &tl); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(tl.Entries) != 2 {
		t.Fatalf("entries: %+v", tl.Entries)
	}
	done, dead := tl.Entries[0], tl.Entries[1]
	if done.Source != trace.SourceRecord || done.Where != "solver" || done.ID != "ev-good" || done.What != "done" {
		t.Errorf("first entry: %+v, want solver's done record of ev-good", done)
	}
	if dead.Source != trace.SourceDLQ || dead.Where != "solver" || dead.What != string(wire.BadOutput) || dead.Time.Before(done.Time) {
		t.Errorf("second entry: %+v, want solver's BadOutput dead letter after the record", dead)
	}
	// The same reads print the same text.
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	var a, b bytes.Buffer
	Main([]string{"trace", "conv-1", f.Spec, "--endpoint", f.Endpoint, "--since", since}, nil, &a, &errb)
	Main([]string{"trace", "conv-1", f.Spec, "--endpoint", f.Endpoint, "--since", since}, nil, &b, &errb)
	if a.String() != b.String() || !strings.Contains(a.String(), "trace conv-1 since ") || !strings.Contains(a.String(), "BadOutput") || strings.Contains(a.String(), "ev-other") {
		t.Errorf("text:\n%s\nthen:\n%s", a.String(), b.String())
	}
}

// fleetc trace --dev asks the dev session on 127.0.0.1:--port for GET /api/trace/{id} (an
// httptest server answering as the session's page does, with a timeline dev built: docs/dev.md)
// and prints it with each entry's payloads, keeping --since; a session that does not answer
// is named; FILE and --dev exclude each other.
func TestTraceDevAsksTheSession(t *testing.T) {
	at := time.Date(2026, 12, 3, 22, 59, 10, 0, time.UTC)
	tl := trace.Timeline{TraceID: "conv/1?x", Since: at.Add(-time.Hour), Notes: []string{}, Entries: []trace.Entry{
		{Time: at.Add(-2 * time.Hour), Source: trace.SourceBus, Where: "fleet.coordinator", What: "agent.step.requested", ID: "old"},
		{Time: at, Source: trace.SourceBus, Where: "fleet.coordinator", What: "agent.step.requested", ID: "e1",
			Payloads: []trace.Payload{trace.NewPayload(trace.PayloadDetail, []byte(`{"trace_id":"conv/1?x","payload_ref":{"type":"s3","bucket":"b","key":"k"}}`))}},
		{Time: at.Add(time.Second), Source: trace.SourceStep, Where: "solver", What: "handler exit 0", ID: "e1",
			Payloads: []trace.Payload{trace.NewPayload(trace.PayloadInput, []byte(`{"job":"good"}`)), trace.NewPayload(trace.PayloadResult, []byte("{\"ok\":\ntrue}"))}},
	}}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.EscapedPath())
		_ = json.NewEncoder(w).Encode(tl)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	code, stdout, stderr := run(t, "trace", "conv/1?x", "--dev", "--port", port, "--since", at.Add(-time.Minute).Format(time.RFC3339))
	want := "trace conv/1?x since 2026-12-03T22:58:10Z: 2 entries\n" +
		"2026-12-03T22:59:10.000Z  bus         fleet.coordinator agent.step.requested         e1\n" +
		`    detail: {"trace_id":"conv/1?x","payload_ref":{"type":"s3","bucket":"b","key":"k"}}` + "\n" +
		"    detail claim check payload_ref: s3://b/k\n" +
		"2026-12-03T22:59:11.000Z  step        solver           handler exit 0               e1\n" +
		`    input: {"job":"good"}` + "\n" +
		`    result: {"ok": true}` + "\n"
	if code != exitOK || stdout != want || len(asked) != 1 || asked[0] != "GET /api/trace/conv%2F1%3Fx" {
		t.Errorf("exit %d, asked %q\n%s\nwant:\n%s\nstderr: %s", code, asked, stdout, want, stderr)
	}

	srv.Close()
	if code, _, stderr := run(t, "trace", "conv-1", "--dev", "--port", port); code != exitInvalid || !strings.Contains(stderr, "no fleetc dev session answers on http://127.0.0.1:"+port) {
		t.Errorf("no session: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"trace", "conv-1"}, {"trace", "conv-1", "fleet.yaml", "--dev"}} {
		if code, _, stderr := run(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
}
