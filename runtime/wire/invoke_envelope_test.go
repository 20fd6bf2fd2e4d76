package wire

import "testing"

// TestInvokeEnvelope: the Step Functions task shape without a TaskToken (a synchronous
// lambda:invoke in an Express execution) is recognised, keyed like a callback task, and a bare
// detail or an EventBridge envelope is not mistaken for it.
func TestInvokeEnvelope(t *testing.T) {
	for body, want := range map[string]string{
		`{"execution_id":"x","state":"S","trace_id":"t","detail":{"trace_id":"t"},"entered_time":"2026-01-01T00:00:00Z","timeout_seconds":60}`: KindSFNInvoke,
		`{"TaskToken":"tok","execution_id":"x","state":"S","detail":{"trace_id":"t"}}`:                                                         KindSFN,
		`{"trace_id":"slow"}`:                             KindRaw,
		`{"trace_id":"t","execution_id":"x","state":"S"}`: KindRaw,
		`{"id":"e","detail-type":"d","execution_id":"x","state":"S","detail":{"trace_id":"t"}}`: KindEventBridge,
	} {
		e, err := ParseEnvelope([]byte(body))
		if err != nil || e.Kind != want {
			t.Errorf("%s: kind %v (%v), want %s", body, e, err, want)
			continue
		}
		if want == KindSFNInvoke && (e.FallbackKey() != "x/S/2026-01-01T00:00:00Z" || e.TaskToken != "" || e.Deadline.IsZero()) {
			t.Errorf("invoke envelope: key %q token %q deadline %v", e.FallbackKey(), e.TaskToken, e.Deadline)
		}
	}
}
