package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/gateway"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// family is the named family gathered from reg.
func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no %s in the registry", name)
	return nil
}

// labelled is the family's series whose labels include want.
func labelled(t *testing.T, mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	t.Helper()
	for _, m := range mf.GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				n++
			}
		}
		if n == len(want) {
			return m
		}
	}
	t.Fatalf("%s has no series %v", mf.GetName(), want)
	return nil
}

// TestMetricsMeasureTheGatewaysOwnTimeAndTheQueue: behind a 200 ms upstream with
// max_in_flight 1, two concurrent calls take 200 and 400 ms of wall time; the gateway's
// own-time histogram counts both with the upstream (400 ms) and the second one's wait for
// the slot (about 200 ms, in the queue histogram) taken out; a bad request is counted under
// policy "none", status 400; GET /metrics serves them on the gateway's listener without the
// token, and not to a foreign Host.
func TestMetricsMeasureTheGatewaysOwnTimeAndTheQueue(t *testing.T) {
	up := rt.OpenAI(t, "", rt.Always(rt.Reply{Text: "hi", Delay: 200 * time.Millisecond}))
	r, err := router.New([]router.Policy{{Name: "p", Deployments: []router.Deployment{{Name: "openai/m", Model: "m", Provider: rt.OpenAIProvider(up, "")}},
		Timeout: 5 * time.Second, AllowedFails: 100, Cooldown: time.Minute, MaxInFlight: 1}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := gateway.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.StartWith(r, "p", "127.0.0.1:0", 5*time.Second, gateway.Options{Metrics: m, MetricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := ask(t, gw, false); a.status != 200 {
				t.Errorf("call: %+v", a)
			}
		}()
	}
	wg.Wait()
	if resp, err := post(gw, "/v1/chat/completions", `{"messages":`); err == nil {
		resp.Body.Close()
	}

	own := labelled(t, family(t, reg, metric.GatewayOwnTime), map[string]string{metric.LabelPolicy: "p"}).GetHistogram()
	if own.GetSampleCount() != 2 {
		t.Fatalf("own-time samples for p: %d, want 2", own.GetSampleCount())
	}
	// Wall time is about 600 ms in all; the gateway's own share of it is well under 100 ms.
	if s := own.GetSampleSum(); s <= 0 || s > 0.1 {
		t.Errorf("own time of the two calls: %.3f s, want the upstream and queue taken out (> 0, < 0.1 s)", s)
	}
	queue := labelled(t, family(t, reg, metric.GatewayQueueTime), map[string]string{metric.LabelPolicy: "p"}).GetHistogram()
	if queue.GetSampleCount() != 2 || queue.GetSampleSum() < 0.15 || queue.GetSampleSum() > 0.4 {
		t.Errorf("queue time: %d samples, %.3f s, want 2 and about 0.2 s (one waited for the other)", queue.GetSampleCount(), queue.GetSampleSum())
	}
	reqs := family(t, reg, metric.GatewayRequests)
	if n := labelled(t, reqs, map[string]string{metric.LabelPolicy: "p", metric.LabelStatus: "200"}).GetCounter().GetValue(); n != 2 {
		t.Errorf("requests p/200: %v, want 2", n)
	}
	if n := labelled(t, reqs, map[string]string{metric.LabelPolicy: "none", metric.LabelStatus: "400"}).GetCounter().GetValue(); n != 1 {
		t.Errorf("requests none/400: %v, want 1", n)
	}

	resp, err := http.Get(gw.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(text), metric.GatewayOwnTime+`_bucket{policy="p",le="5e-06"}`) {
		t.Errorf("GET /metrics: %d\n%s", resp.StatusCode, text)
	}
	req, _ := http.NewRequest(http.MethodGet, gw.URL()+"/metrics", nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics with a foreign Host: %v %v, want 403", resp.StatusCode, err)
	}
}
