package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// The series names are in runtime/telemetry/metric.

// noPolicy labels the requests answered before any policy was chosen (refused, bad body).
const noPolicy = "none"

// Metrics are the gateway's Prometheus collectors. A nil *Metrics records nothing.
type Metrics struct {
	own, queue *prometheus.HistogramVec
	requests   *prometheus.CounterVec
	admitted   *prometheus.GaugeVec
	reg        prometheus.Registerer
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		own: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metric.GatewayOwnTime,
			Help: "The gateway's own time per request: wall time minus upstream calls, capacity queue and backoff.",
			// 5 µs to 164 ms: the gateway's share is microseconds; a slow tail shows.
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 16)}, []string{metric.LabelPolicy}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metric.GatewayQueueTime,
			Help:    "Time a request waited for router capacity (max_in_flight slot, token bucket).",
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10)}, []string{metric.LabelPolicy}), // 100 µs to 26 s
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metric.GatewayRequests,
			Help: "Gateway requests answered, by policy and HTTP status."}, []string{metric.LabelPolicy, metric.LabelStatus}),
		admitted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metric.GatewayAdmitted,
			Help: "Gateway requests admitted and not yet answered: in flight plus waiting for capacity."}, []string{metric.LabelPolicy}),
		reg: reg,
	}
	for _, c := range []prometheus.Collector{m.own, m.queue, m.requests, m.admitted} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// series are one policy's hot-path series, resolved once (no label hashing per call).
type series struct {
	own, queue prometheus.Observer
	ok         prometheus.Counter
	admitted   prometheus.Gauge
}

func (m *Metrics) forPolicy(policy string) *series {
	if m == nil {
		return nil
	}
	s := &series{own: m.own.WithLabelValues(policy), queue: m.queue.WithLabelValues(policy)}
	if policy != noPolicy { // a request no policy took is never admitted nor answered 200
		s.ok, s.admitted = m.requests.WithLabelValues(policy, "200"), m.admitted.WithLabelValues(policy)
	}
	return s
}

// call is one request's bookkeeping: when it started, the policy that took it, where the
// router spent its time, and the status it was answered with. It wraps the
// ResponseWriter to see the status, and rides in the request's context.
type call struct {
	http.ResponseWriter
	router.Timing
	start      time.Time
	policy     string
	admitted   bool      // it held an admission place, and its queue time is a measurement
	admittedAt time.Time // when
	status     int
}

var calls = sync.Pool{New: func() any { return new(call) }}

type callKey struct{}

// callOf is the request's call, nil outside ServeHTTP.
func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

func (c *call) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *call) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.ResponseWriter.Write(b)
}

// Flush keeps streams streaming through the wrapper.
func (c *call) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *call) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// ServeHTTP serves GET /healthz and GET /metrics, and runs every other request through
// serve with its bookkeeping: the router records its times into the request's context,
// and what is left of the wall time is the gateway's own.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusNoContent)
			return
		case "/metrics":
			if g.metricsHandler != nil {
				// No token: a scraper does not know this process's. The Host check still
				// keeps other sites' pages (DNS rebinding) from reading it.
				if ref := localhttp.Check(r); ref != nil {
					g.fail(w, apiOpenAI, refused(ref), ref.Message, 0)
					return
				}
				g.metricsHandler.ServeHTTP(w, r)
				return
			}
		}
	}
	c := calls.Get().(*call)
	*c = call{ResponseWriter: w, start: time.Now(), policy: noPolicy}
	ctx := router.WithTiming(context.WithValue(r.Context(), callKey{}, c), &c.Timing)
	g.serve(c, r.WithContext(ctx))
	g.observe(c)
	*c = call{}
	calls.Put(c)
}

// observe records a finished call.
func (g *Gateway) observe(c *call) {
	if g.metrics == nil {
		return
	}
	s := g.series[c.policy]
	if s == nil {
		s = g.series[noPolicy]
		c.policy = noPolicy
	}
	own := time.Since(c.start) - c.Upstream - c.Queued - c.Backoff
	s.own.Observe(own.Seconds())
	if c.admitted {
		s.queue.Observe(c.Queued.Seconds())
	}
	if (c.status == 0 || c.status == http.StatusOK) && s.ok != nil {
		s.ok.Inc()
		return
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	g.metrics.requests.WithLabelValues(c.policy, strconv.Itoa(c.status)).Inc()
}
