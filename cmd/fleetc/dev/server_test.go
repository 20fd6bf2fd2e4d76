package dev

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetc/fleetc/internal/localhttp/localhttptest"
)

// TestLiveAPIRefusesOtherSites: the live page's server (serve, as `fleetc dev` runs it)
// refuses every state-changing request another site can send, on every POST route, and a
// rebound DNS name's read of /api/fleet; the page's own JSON POST pauses the worker.
func TestLiveAPIRefusesOtherSites(t *testing.T) {
	var log bytes.Buffer
	p := &proc{class: "c", state: StateStopped}
	paused := func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.paused }
	d := &Fleet{sup: &supervisor{out: &prefixer{w: &log}, procs: map[string]*proc{"c": p}}, done: make(chan struct{})}
	var current atomic.Pointer[Fleet]
	current.Store(d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, addr, err := serve(ctx, 0, &current)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + addr
	// The pause route first: unguarded, it would take the attacks and say so.
	for _, r := range []struct{ path, body string }{
		{"/api/classes/c/pause", `{"paused":true}`},
		{"/api/classes/c/kill", `{}`},
		{"/api/classes/c/fault", `{"kind":"fail","seconds":30}`},
		{"/api/classes/c/redrive", `{}`},
		{"/api/faults/model-429", `{"seconds":30}`},
		{"/api/workflows/w/executions", `{}`},
		{"/api/events", `{"detail_type":"x","detail":{}}`},
	} {
		localhttptest.Refused(t, base+r.path, r.body, nil)
	}
	localhttptest.ReadRefused(t, base+"/api/fleet", nil)
	if paused() || log.Len() != 0 {
		t.Fatalf("a refused request reached the handler: paused=%v, log %q", paused(), log.String())
	}
	if code, answer := localhttptest.SameOrigin(t, base+"/api/classes/c/pause", `{"paused":true}`, nil); code != http.StatusOK || !paused() {
		t.Errorf("the page's own pause: %d %s, paused=%v", code, answer, paused())
	}
	if code, _ := localhttptest.Send(t, http.MethodGet, base+"/", nil, nil, ""); code != http.StatusOK {
		t.Errorf("GET / = %d", code)
	}
}

// TestPagePostsJSON: every POST the live page makes sends Content-Type: application/json,
// the only kind the guarded API takes.
func TestPagePostsJSON(t *testing.T) {
	b, err := pageFS.ReadFile("page/index.html")
	if err != nil {
		t.Fatal(err)
	}
	calls := regexp.MustCompile(`fetch\([^;]*`).FindAllString(string(b), -1)
	posts := 0
	for _, c := range calls {
		if !strings.Contains(c, `method: "POST"`) {
			continue
		}
		posts++
		if !strings.Contains(c, `headers: { "Content-Type": "application/json" }`) {
			t.Errorf("the page POSTs without Content-Type: application/json: %s", c)
		}
	}
	if posts == 0 || strings.Count(string(b), `"POST"`) != posts {
		t.Errorf("found %d POSTing fetch calls of %d POSTs in the page", posts, strings.Count(string(b), `"POST"`))
	}
}
