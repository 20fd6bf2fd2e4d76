package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
	"github.com/fleetc/fleetc/runtime/router/transport"
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

// BenchmarkGateway1000RPS is the end-to-end figure: for 30 s (FLEET_BENCH_SECONDS), an
// open loop sends 1,000 chat completions per second through the real listener (token,
// Host and Content-Type checks, router, pooled upstream transport) to an OpenAI-compatible
// upstream on loopback, and, interleaved in the same run, 1,000 per second to that
// upstream directly. It reports the client-side p50/p99 of each, what the gateway adds,
// and the TCP connections opened after a 3 s warm-up (client to gateway, gateway to
// upstream). FLEET_BENCH_RATE lowers the rate on a loaded machine. Run: go test ./runtime/router/gateway -run '^$' -bench Gateway1000RPS -benchtime 1x
func BenchmarkGateway1000RPS(b *testing.B) {
	seconds := 30
	if v, err := strconv.Atoi(os.Getenv("FLEET_BENCH_SECONDS")); err == nil && v > 3 {
		seconds = v
	}
	rate, warmup := 1000, 3*time.Second
	if v, err := strconv.Atoi(os.Getenv("FLEET_BENCH_RATE")); err == nil && v > 0 {
		rate = v // a lower rate for a loaded machine; the figure that counts is at 1,000
	}
	// The upstream answers a canned completion: its own cost is the same on both paths
	// and kept small; ConnState counts the connections it accepts.
	answer := []byte(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`)
	var upConns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	up.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			upConns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	r, err := router.New([]router.Policy{{Name: "fast", Deployments: []router.Deployment{{Name: "openai/m", Model: "m",
		Provider: &openai.Client{BaseURL: up.URL + "/v1", HTTP: transport.New(64)}}},
		Retries: 2, Timeout: 30 * time.Second, AllowedFails: 2, Cooldown: time.Minute, MaxInFlight: 64}}, router.Options{Metrics: mustMetrics(b)})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close(context.Background())
	var dials atomic.Int64
	d := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, n, a)
	}}}
	send := func(url string, auth bool) (time.Duration, error) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer "+gw.Token())
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
		}
		return time.Since(start), nil
	}
	n := seconds * rate
	viaGW, direct := make([]time.Duration, n), make([]time.Duration, n)
	var wg sync.WaitGroup
	var dialsAtWarm, upAtWarm int64 = -1, -1
	b.ResetTimer()
	begin := time.Now()
	for i := 0; i < n; i++ {
		// Open loop on an absolute schedule: request i leaves at begin + i ms, late or not;
		// its direct twin half a millisecond later.
		at := begin.Add(time.Duration(i) * time.Second / time.Duration(rate))
		if dl := time.Until(at); dl > 0 {
			time.Sleep(dl)
		}
		if dialsAtWarm < 0 && time.Since(begin) >= warmup {
			dialsAtWarm, upAtWarm = dials.Load(), upConns.Load()
		}
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			var err error
			if viaGW[i], err = send(gw.URL()+"/v1/chat/completions", true); err != nil {
				b.Error(err)
			}
		}(i)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Second / time.Duration(rate) / 2)
			var err error
			if direct[i], err = send(up.URL+"/v1/chat/completions", false); err != nil {
				b.Error(err)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()
	skip := int(warmup / (time.Second / time.Duration(rate)))
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds[skip:])
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(direct, 0.50), "direct-p50-ms")
	b.ReportMetric(pct(direct, 0.99), "direct-p99-ms")
	b.ReportMetric(pct(viaGW, 0.50), "gw-p50-ms")
	b.ReportMetric(pct(viaGW, 0.99), "gw-p99-ms")
	b.ReportMetric(pct(viaGW, 0.50)-pct(direct, 0.50), "added-p50-ms")
	b.ReportMetric(pct(viaGW, 0.99)-pct(direct, 0.99), "added-p99-ms")
	b.ReportMetric(float64(dials.Load()-dialsAtWarm), "new-client-conns")
	// The upstream's connections come from both the gateway's pool and the direct calls.
	b.ReportMetric(float64(upConns.Load()-upAtWarm), "new-upstream-conns")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "gw-req/s")
}

func promRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
