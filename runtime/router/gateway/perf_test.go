//go:build unix

package gateway_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	"github.com/fleetc/fleetc/runtime/router/openai"
	"github.com/fleetc/fleetc/runtime/router/transport"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// benchGateway serves one policy "fast" whose one deployment is the child's upstream, with
// the router's and the gateway's metrics on reg.
func benchGateway(b *testing.B, upstream string, maxInFlight int, reg *prometheus.Registry) *gateway.Gateway {
	b.Helper()
	rm, err := router.NewMetrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	r, err := router.New([]router.Policy{{Name: "fast", Deployments: []router.Deployment{{Name: "openai/m", Model: "m",
		Provider: &openai.Client{BaseURL: upstream + "/v1", HTTP: transport.New(maxInFlight)}}},
		Retries: 2, Timeout: 30 * time.Second, AllowedFails: 2, Cooldown: time.Minute, MaxInFlight: maxInFlight}}, router.Options{Metrics: rm})
	if err != nil {
		b.Fatal(err)
	}
	gm, err := gateway.NewMetrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.StartWith(r, "fast", "127.0.0.1:0", time.Minute, gateway.Options{Metrics: gm})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gw.Close(context.Background()) })
	return gw
}

// histQuantile is the q-quantile of the named histogram's series in reg, interpolated
// linearly inside its bucket (as PromQL's histogram_quantile does), in microseconds.
func histQuantile(b *testing.B, reg *prometheus.Registry, name string, q float64) float64 {
	b.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		rank := q * float64(h.GetSampleCount())
		lower, below := 0.0, 0.0
		for _, bk := range h.GetBucket() {
			if c := float64(bk.GetCumulativeCount()); c >= rank {
				return 1e6 * (lower + (bk.GetUpperBound()-lower)*(rank-below)/max(c-below, 1))
			}
			lower, below = bk.GetUpperBound(), float64(bk.GetCumulativeCount())
		}
		return 1e6 * lower
	}
	b.Fatalf("no %s gathered", name)
	return 0
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
	reg := prometheus.NewRegistry()
	gw := benchGateway(b, child.Upstream, 64, reg)
	spec := loadSpec{Gateway: gw.URL(), Token: gw.Token(), Rate: rate, Duration: time.Duration(seconds) * time.Second,
		Warmup: 3 * time.Second, Direct: true, Conns: 256, MaxLag: time.Second}
	b.ResetTimer()
	cpu0 := cpuTime()
	res := child.run(b, spec)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	saturated(b, res, rate)
	if refused := res.Status[http.StatusTooManyRequests]; refused > 0 {
		// What was measured still says something; a failed benchmark prints no metrics.
		b.Logf("served: p50 %.2f / p99 %.2f ms via the gateway, %.2f / %.2f ms direct; %.0f µs CPU per call",
			pct(res.GW, 0.50), pct(res.GW, 0.99), pct(res.Direct, 0.50), pct(res.Direct, 0.99), float64(cpu.Microseconds())/float64(res.Sent))
		b.Fatalf("OVERLOADED: the gateway refused %d of %d requests with 429 (admission control: more than max_in_flight 64 "+
			"plus 128 waiting at once, the machine stalled it); answers %v", refused, res.Sent, res.Status)
	}
	if res.Status[http.StatusOK] != res.Sent {
		b.Fatalf("gateway answers %v of %d sent; transport errors: %v", res.Status, res.Sent, res.Errors)
	}
	b.ReportMetric(pct(res.Direct, 0.50), "direct-p50-ms")
	b.ReportMetric(pct(res.Direct, 0.99), "direct-p99-ms")
	b.ReportMetric(pct(res.GW, 0.50), "gw-p50-ms")
	b.ReportMetric(pct(res.GW, 0.99), "gw-p99-ms")
	b.ReportMetric(pct(res.GW, 0.50)-pct(res.Direct, 0.50), "added-p50-ms")
	b.ReportMetric(pct(res.GW, 0.99)-pct(res.Direct, 0.99), "added-p99-ms")
	// The gateway's own measure of its share: wall time minus the upstream call (and queue).
	b.ReportMetric(histQuantile(b, reg, metric.GatewayOwnTime, 0.50), "own-p50-us")
	b.ReportMetric(histQuantile(b, reg, metric.GatewayOwnTime, 0.99), "own-p99-us")
	b.ReportMetric(float64(cpu.Microseconds())/float64(res.Sent), "gw-cpu-us/call")
	b.ReportMetric(float64(res.ClientConns), "new-client-conns")
	b.ReportMetric(res.Achieved, "gw-req/s")
}

// BenchmarkGatewayOverload is admission control under 5× the sustainable rate: the
// upstream answers in 100 ms and the policy has max_in_flight 16, so the gateway can serve
// 160 req/s; the child sends FLEET_BENCH_RATE (800) req/s for FLEET_BENCH_SECONDS (30). It
// reports the gateway process's peak RSS (VmHWM, target < 200 MB, an error past it), the
// share answered 429 and how fast, the served rate and their p99, and fails with SATURATED
// when the load generator could not keep the rate. Run:
//
//	go test ./runtime/router/gateway -run '^$' -bench GatewayOverload -benchtime 1x
func BenchmarkGatewayOverload(b *testing.B) {
	const slots, delay = 16, 100 * time.Millisecond
	rate, seconds := envInt("FLEET_BENCH_RATE", 5*slots*int(time.Second/delay)), envInt("FLEET_BENCH_SECONDS", 30)
	child := startLoadChild(b, delay)
	gw := benchGateway(b, child.Upstream, slots, prometheus.NewRegistry())
	spec := loadSpec{Gateway: gw.URL(), Token: gw.Token(), Rate: rate, Duration: time.Duration(seconds) * time.Second,
		Warmup: 3 * time.Second, Conns: 512, MaxLag: time.Second}
	runtime.GC()
	resetPeakRSS()
	rss0 := peakRSS()
	b.ResetTimer()
	cpu0 := cpuTime()
	res := child.run(b, spec)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	rss := peakRSS()
	saturated(b, res, rate)
	ok, refused := res.Status[http.StatusOK], res.Status[http.StatusTooManyRequests]
	if ok+refused != res.Sent {
		b.Errorf("answers %v of %d sent: every answer must be a 200 or a 429; transport errors: %v", res.Status, res.Sent, res.Errors)
	}
	b.ReportMetric(rss0, "rss-start-MB")
	b.ReportMetric(rss, "rss-peak-MB")
	b.ReportMetric(float64(ok)/spec.Duration.Seconds(), "served-req/s")
	b.ReportMetric(100*float64(refused)/float64(res.Sent), "429-%")
	b.ReportMetric(pct(res.Reject, 0.50), "429-p50-ms")
	b.ReportMetric(pct(res.Reject, 0.99), "429-p99-ms")
	b.ReportMetric(pct(res.GW, 0.99), "served-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(res.Sent), "gw-cpu-us/call")
	b.Logf("Retry-After values on the 429s: %v", res.RetryAfter)
	if rss >= 200 {
		b.Errorf("peak RSS %.0f MB at %d req/s: over the 200 MB bound", rss, rate)
	}
}
