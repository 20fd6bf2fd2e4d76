package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
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
// (decode, route, encode) without the network.
func BenchmarkGatewayHandler(b *testing.B) {
	g := gateway.New(benchRouter(b), "fast", time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		// httptest's default Host, example.com, is what the gateway refuses (DNS rebinding).
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+g.Token())
		g.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

func promRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
