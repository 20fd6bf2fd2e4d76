package wire

import (
	"testing"
	"time"
)

func TestParseEnvelope(t *testing.T) {
	eb, err := ParseEnvelope([]byte(`{"version":"0","id":"e-1","detail-type":"agent.step.requested","source":"s","detail":{"trace_id":"t-1","deadline":"2026-01-01T00:00:10Z"}}`))
	if err != nil || eb.Kind != KindEventBridge || eb.FallbackKey() != "e-1" || eb.TraceID != "t-1" || !eb.Deadline.Equal(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)) {
		t.Errorf("eventbridge: %+v %v", eb, err)
	}
	sfn, err := ParseEnvelope([]byte(`{"TaskToken":"tok","execution_id":"arn:x","state":"Researcher","trace_id":"t-2","detail":{"q":1},"entered_time":"2026-01-01T00:00:00Z","timeout_seconds":60}`))
	if err != nil || sfn.Kind != KindSFN || sfn.FallbackKey() != "arn:x/Researcher/2026-01-01T00:00:00Z" || sfn.TaskToken != "tok" || string(sfn.Detail) != `{"q":1}` ||
		!sfn.Deadline.Equal(time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)) {
		t.Errorf("sfn: %+v %v", sfn, err)
	}
	// The seed's ASL shape: fields beside TaskToken, no "detail".
	flat, err := ParseEnvelope([]byte(`{"TaskToken":"tok","conversation_id":"c-1","step":3}`))
	if err != nil || string(flat.Detail) != `{"conversation_id":"c-1","step":3}` {
		t.Errorf("flat sfn: %+v %v", flat, err)
	}
	raw, err := ParseEnvelope([]byte(`{"trace_id":"t-3"}`))
	if err != nil || raw.Kind != KindRaw || raw.FallbackKey() != "" || raw.TraceID != "t-3" {
		t.Errorf("raw: %+v %v", raw, err)
	}
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{"TaskToken":""}`, `{"detail-type":"x","detail":5}`, `{"TaskToken":"t","deadline":"soon"}`} {
		if _, err := ParseEnvelope([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if DetailField([]byte(`{"a":"x","n":3}`), "a") != "x" || DetailField([]byte(`{"n":3}`), "n") != "3" || DetailField([]byte(`{}`), "a") != "" {
		t.Error("DetailField")
	}
}

// A workflow that loops back to the same state is new work each pass (a
// new entered time); without entered_time the key stays execution/state.
func TestSFNKeyDistinguishesLoopPasses(t *testing.T) {
	pass := func(entered string) string {
		body := `{"TaskToken":"tok","execution_id":"arn:x","state":"Review","detail":{}`
		if entered != "" {
			body += `,"entered_time":"` + entered + `"`
		}
		e, err := ParseEnvelope([]byte(body + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return e.FallbackKey()
	}
	a, b := pass("2026-01-01T00:00:00.000Z"), pass("2026-01-01T00:05:00.000Z")
	if a == b || a != pass("2026-01-01T00:00:00.000Z") {
		t.Errorf("loop passes: %q %q", a, b)
	}
	if got := pass(""); got != "arn:x/Review" {
		t.Errorf("no entered_time: %q", got)
	}
}

// A bare detail's ttl_seconds counts from the queue's SentTimestamp; a body with its own time
// keeps that clock.
func TestTTLCountsFromTheQueueForBareDetails(t *testing.T) {
	sent := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	bare, err := ParseEnvelope([]byte(`{"trace_id":"t","ttl_seconds":30}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bare.Expires.IsZero() {
		t.Fatalf("bare detail expires %v before any clock", bare.Expires)
	}
	bare.CountFrom(sent)
	if want := sent.Add(30 * time.Second); !bare.Expires.Equal(want) {
		t.Errorf("bare detail expires %v, want %v", bare.Expires, want)
	}
	eb, err := ParseEnvelope([]byte(`{"detail-type":"x","id":"e","time":"2026-12-01T09:00:00Z","detail":{"ttl_seconds":30}}`))
	if err != nil {
		t.Fatal(err)
	}
	eb.CountFrom(sent)
	if want := time.Date(2026, 12, 1, 9, 0, 30, 0, time.UTC); !eb.Expires.Equal(want) {
		t.Errorf("EventBridge event expires %v, want %v (its own time)", eb.Expires, want)
	}
	none, _ := ParseEnvelope([]byte(`{"trace_id":"t"}`))
	none.CountFrom(sent)
	if !none.Expires.IsZero() {
		t.Errorf("a detail without ttl_seconds expires %v", none.Expires)
	}
}
