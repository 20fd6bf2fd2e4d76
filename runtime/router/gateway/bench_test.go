package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
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
		g.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkGateway1000RPS sends b.N requests at 1,000 per second (open loop) to a real
// loopback gateway and reports the p50/p99 of the time spent inside the gateway (the
// router's overhead: the provider is instant) and of the client's whole round trip.
// Run: go test ./runtime/router/gateway -run '^$' -bench Gateway1000RPS -benchtime 5000x
func BenchmarkGateway1000RPS(b *testing.B) {
	g := gateway.New(benchRouter(b), "fast", time.Minute)
	var mu sync.Mutex
	inside := make([]time.Duration, 0, b.N)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		g.ServeHTTP(w, r)
		d := time.Since(start)
		mu.Lock()
		inside = append(inside, d)
		mu.Unlock()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	roundTrip := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	begin := time.Now()
	for i := 0; i < b.N; i++ {
		// Open loop on an absolute schedule: request i leaves at begin + i ms, late or not.
		if d := time.Until(begin.Add(time.Duration(i) * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			roundTrip[i] = time.Since(start)
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
			}
		}(i)
	}
	wg.Wait()
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(inside, 0.50), "gw-p50-ms")
	b.ReportMetric(pct(inside, 0.99), "gw-p99-ms")
	b.ReportMetric(pct(roundTrip, 0.50), "rtt-p50-ms")
	b.ReportMetric(pct(roundTrip, 0.99), "rtt-p99-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func promRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
