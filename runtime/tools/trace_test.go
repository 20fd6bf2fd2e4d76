package tools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/runtime/tools"
	"github.com/fleetc/fleetc/runtime/wire"
)

// A job started by a handler that passes the conversation's trace id (the header the worker
// sent it) carries that trace id on its request event, so the job joins the agent's run.
func TestJobKeepsTheCallersTraceID(t *testing.T) {
	e := newEnv(t)
	h, err := e.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+tools.ToolsPath+"start_cdk_synth", strings.NewReader(synthArgs))
	req.Header.Set(tools.HeaderPrincipal, alice.Principal)
	req.Header.Set(tools.HeaderSession, alice.Session)
	req.Header.Set(wire.HeaderTraceID, "conv-trace-7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	evs := e.events(t)
	if resp.StatusCode != http.StatusOK || len(evs) != 1 {
		t.Fatalf("start: %d, %d events", resp.StatusCode, len(evs))
	}
	var ev struct{ Detail map[string]any }
	_ = json.Unmarshal([]byte(evs[0]), &ev)
	if ev.Detail["trace_id"] != "conv-trace-7" {
		t.Fatalf("the job's request event has trace_id %v, want the caller's conv-trace-7", ev.Detail["trace_id"])
	}
}
