//go:build unix

package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
	"github.com/fleetc/fleetc/runtime/router/transport"
)

// benchGateway serves one policy "fast" whose one deployment is the child's upstream.
func benchGateway(b *testing.B, upstream string, maxInFlight int) *gateway.Gateway {
	b.Helper()
	r, err := router.New([]router.Policy{{Name: "fast", Deployments: []router.Deployment{{Name: "openai/m", Model: "m",
		Provider: &openai.Client{BaseURL: upstream + "/v1", HTTP: transport.New(maxInFlight)}}},
		Retries: 2, Timeout: 30 * time.Second, AllowedFails: 2, Cooldown: time.Minute, MaxInFlight: maxInFlight}}, router.Options{Metrics: mustMetrics(b)})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.Start(r, "fast", "127.0.0.1:0", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gw.Close(context.Background()) })
	return gw
}

// saturated fails the benchmark, loudly, when the run measured the machine's queue rather
// than the gateway.
func saturated(b *testing.B, res loadResult, rate int) {
	b.Helper()
	if res.Saturated != "" {
		b.Fatalf("SATURATED, no measurement: %s (gateway answers so far: %v). The machine cannot carry %d req/s "+
			"through the gateway and the upstream beside the load generator; run it on an idle machine or lower FLEET_BENCH_RATE.",
			res.Saturated, res.Status, rate)
	}
}

// BenchmarkGateway1000RPS is the end-to-end figure: for FLEET_BENCH_SECONDS (30), an open
// loop in a child process sends FLEET_BENCH_RATE (1,000) chat completions per second
// through the real listener (token, Host and Content-Type checks, router, pooled upstream
// transport) to an OpenAI-compatible upstream in the child, and, interleaved, as many to
// that upstream directly. It reports what the gateway adds at p50 and p99 (client-side,
// via the gateway minus direct, after a 3 s warm-up), the gateway process's CPU time per
// call (getrusage: everything it does, HTTP server and client included), and the client
// connections opened after the warm-up; it fails with SATURATED when the machine could not
// keep the rate. Run:
//
//	go test ./runtime/router/gateway -run '^$' -bench Gateway1000RPS -benchtime 1x
func BenchmarkGateway1000RPS(b *testing.B) {
	rate, seconds := envInt("FLEET_BENCH_RATE", 1000), envInt("FLEET_BENCH_SECONDS", 30)
	child := startLoadChild(b, 0)
	gw := benchGateway(b, child.Upstream, 64)
	spec := loadSpec{Gateway: gw.URL(), Token: gw.Token(), Rate: rate, Duration: time.Duration(seconds) * time.Second,
		Warmup: 3 * time.Second, Direct: true, Conns: 256, MaxLag: time.Second}
	b.ResetTimer()
	cpu0 := cpuTime()
	res := child.run(b, spec)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	saturated(b, res, rate)
	if res.Status[http.StatusOK] != res.Sent {
		b.Fatalf("gateway answers %v of %d sent; transport errors: %v", res.Status, res.Sent, res.Errors)
	}
	b.ReportMetric(pct(res.Direct, 0.50), "direct-p50-ms")
	b.ReportMetric(pct(res.Direct, 0.99), "direct-p99-ms")
	b.ReportMetric(pct(res.GW, 0.50), "gw-p50-ms")
	b.ReportMetric(pct(res.GW, 0.99), "gw-p99-ms")
	b.ReportMetric(pct(res.GW, 0.50)-pct(res.Direct, 0.50), "added-p50-ms")
	b.ReportMetric(pct(res.GW, 0.99)-pct(res.Direct, 0.99), "added-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(res.Sent), "gw-cpu-us/call")
	b.ReportMetric(float64(res.ClientConns), "new-client-conns")
	b.ReportMetric(res.Achieved, "gw-req/s")
}
