package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// An upstream that begins an answer and then sends one endless SSE line (64 MiB here, from
// one small buffer) ends the client's stream with an error event naming the cap, and the
// gateway holds about router.MaxStreamLineBytes of it on the way: a 1 GiB line took the
// gateway to 6.3 GB when lines were read whole. The upstream is an httptest server speaking
// the chat-completions stream as OpenAI documents it (text/event-stream, data: lines).
func TestHugeUpstreamLineEndsTheStreamWithBoundedMemory(t *testing.T) {
	const sent = 16 * router.MaxStreamLineBytes
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`+"\n\n")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`)
		fill := bytes.Repeat([]byte("a"), 32<<10)
		for n := 0; n < sent; n += len(fill) {
			if _, err := w.Write(fill); err != nil {
				return // the gateway stopped reading
			}
		}
	}))
	defer up.Close()
	r, err := router.New([]router.Policy{{Name: "p", Timeout: 30 * time.Second,
		Deployments: []router.Deployment{{Name: "openai/m", Model: "m", Provider: &openai.Client{BaseURL: up.URL + "/v1"}}}}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(r, "p", "127.0.0.1:0", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chunks, done := sse(t, gw, `{"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	runtime.ReadMemStats(&after)
	text, _, _, _, _, errMsg := assembled(chunks)
	if text != "hi" || done || !strings.Contains(errMsg, "router.MaxStreamLineBytes") {
		t.Errorf("text %q, done %v, error %q: want the first delta, then an error naming the line cap", text, done, errMsg)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes allocated in the process for a %d-byte upstream line (cap %d)", alloc, sent, router.MaxStreamLineBytes)
	if alloc > 4*router.MaxStreamLineBytes {
		t.Errorf("%d bytes allocated for a %d-byte line; the cap is %d", alloc, sent, router.MaxStreamLineBytes)
	}
}
