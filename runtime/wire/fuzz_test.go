package wire

import (
	"encoding/json"
	"testing"
)

// FuzzParseEnvelope feeds the parser arbitrary bodies (every message a queue can deliver):
// it never panics, and an accepted body has a known kind and a JSON-object detail. One input
// costs microseconds, so the fuzzer runs far more inputs per second than a pipeline target.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"version":"0","id":"e-1","detail-type":"t","source":"s","detail":{"trace_id":"t-1","deadline":"2026-01-01T00:00:10Z"}}`,
		`{"TaskToken":"tok","execution_id":"arn:x","state":"S","trace_id":"t","detail":{"q":1},"entered_time":"2026-01-01T00:00:00Z","timeout_seconds":60}`,
		`{"TaskToken":"tok","conversation_id":"c-1","step":3}`,
		`{"execution_id":"x","state":"S","detail":{"trace_id":"t"}}`,
		`{"trace_id":"raw"}`, `[1,2]`, `null`, `{"TaskToken":""}`, `{"detail":{"deadline":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := ParseEnvelope(body)
		if err != nil {
			return
		}
		switch e.Kind {
		case KindEventBridge, KindSFN, KindSFNInvoke, KindRaw:
		default:
			t.Fatalf("kind %q", e.Kind)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(e.Detail, &m) != nil || m == nil {
			t.Fatalf("accepted a detail that is not an object: %s", e.Detail)
		}
		if e.Kind == KindSFN && e.TaskToken == "" {
			t.Fatal("a task message without its token")
		}
		again, err := ParseEnvelope(body)
		if err != nil || again.FallbackKey() != e.FallbackKey() || again.Kind != e.Kind {
			t.Fatalf("parsing twice disagrees: %+v then %+v (%v)", e, again, err)
		}
	})
}
