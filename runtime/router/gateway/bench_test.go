//go:build unix

package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
)

// instant is a provider that answers at once: what is measured is the router's (and the
// gateway's) own cost.
type instant struct{}

func (instant) System() string { return "fake" }

func (instant) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	return &router.Response{Model: "fake-model", StopReason: router.StopEndTurn, Usage: router.Usage{InputTokens: 12, OutputTokens: 3},
		Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "ok"}}}}, nil
}

func benchRouter(b *testing.B) *router.Router {
	r, err := router.New([]router.Policy{
		{Name: "fast", Deployments: []router.Deployment{{Name: "fake/a", Model: "a", Provider: instant{}}, {Name: "fake/b", Model: "b", Provider: instant{}}},
			Fallbacks: []string{"overflow"}, Retries: 2, Timeout: 30 * time.Second, AllowedFails: 2, Cooldown: time.Minute, MaxInFlight: 64, TokensPerMinute: 1 << 30},
		{Name: "overflow", Deployments: []router.Deployment{{Name: "fake/c", Model: "c", Provider: instant{}}}, Timeout: 30 * time.Second, MaxInFlight: 64},
	}, router.Options{Metrics: mustMetrics(b)})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func mustMetrics(b *testing.B) *router.Metrics {
	m, err := router.NewMetrics(promRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return m
}

var body = []byte(`{"model":"fast","max_tokens":256,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Summarise the incident in one line."}]}`)

// BenchmarkRouterChat is the router alone: policy lookup, cap, bucket, pick, metrics.
func BenchmarkRouterChat(b *testing.B) {
	r := benchRouter(b)
	req := &router.Request{MaxTokens: 256, Messages: []router.Message{{Role: router.RoleUser, Content: []router.Block{{Text: "hi"}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Chat(ctx, "fast", req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayHandler is one chat-completions request through the gateway's handler
// (checks, decode, admission, route, encode, metrics) without the network: the request is
// built as the HTTP server hands it over and the answer goes to a reused writer, so what
// is measured is the gateway's code. cpu-us/op is the process's CPU time per call
// (getrusage, the garbage collector's work on the other core included). Run:
//
//	go test ./runtime/router/gateway -run '^$' -bench GatewayHandler -benchtime 20000x -count 5
func BenchmarkGatewayHandler(b *testing.B) {
	gm, err := gateway.NewMetrics(promRegistry())
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.NewWith(benchRouter(b), "fast", time.Minute, gateway.Options{Metrics: gm})
	auth := "Bearer " + g.Token()
	w := &discard{h: http.Header{}}
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		// httptest's default Host, example.com, is what the gateway refuses (DNS rebinding).
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/v1/chat/completions", bytes.NewReader(body))
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header["Authorization"] = []string{auth}
		clear(w.h)
		w.code = 0
		g.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatal(w.code)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/1000, "cpu-us/op")
}

// discard is a reused ResponseWriter that keeps only the status.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

func (d *discard) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return len(p), nil
}

func promRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
