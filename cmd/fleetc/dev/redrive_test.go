package dev

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
)

// `fleetc dev redrive CLASS` (POST /api/classes/{name}/redrive) on a letter that fails fast on
// every trip: the session's API moves it once and answers moved 1, failed_again 1, left 0,
// within a bound, where it used to move it until the request timed out. The fleet is the DLQ
// tools' kumo fixture with its real fleet-worker, wired into a Fleet as Run wires the queues.
func TestDevRedriveEnds(t *testing.T) {
	f := dlqtest.New(t, "")
	f.StartWorker(t, "solver")
	f.DeadLetter(t, "solver", dlqtest.Event("ev-bad-d", map[string]any{"trace_id": "t-d", "job": "bad-d", "conversation_id": "c1"}), "")
	tg := f.Targets["solver"]
	a := &liveAPI{d: &Fleet{ir: f.IR, sqs: f.SQS, queues: map[string]queueURLs{"solver": {queue: tg.QueueURL, dlq: tg.DLQURL}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/classes/solver/redrive", http.NoBody)
	r.SetPathValue("name", "solver")
	w := httptest.NewRecorder()
	start := time.Now()
	a.redrive(w, r)
	var got struct {
		Moved       *int   `json:"moved"`
		FailedAgain *int   `json:"failed_again"`
		Left        *int   `json:"left"`
		Error       string `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	t.Logf("dev redrive on poison: %d %s in %s", w.Code, w.Body, time.Since(start).Round(time.Millisecond))
	if w.Code != http.StatusOK || got.Moved == nil || *got.Moved != 1 || got.FailedAgain == nil || *got.FailedAgain != 1 || got.Left == nil || *got.Left != 0 {
		t.Fatalf("answered %d %s", w.Code, w.Body)
	}
}
