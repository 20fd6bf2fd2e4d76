package telemetry

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// Metrics holds the worker's Prometheus collectors on a private registry
// (never the global default, so tests and multiple workers in one
// process do not collide).
type Metrics struct {
	Registry     *prometheus.Registry
	StepDuration *prometheus.HistogramVec
	InFlight     *prometheus.GaugeVec
	Retries      *prometheus.CounterVec
	DeadLettered *prometheus.CounterVec
	AWSRequests  *prometheus.CounterVec
}

// NewMetrics creates and registers the collectors, plus Go runtime and
// process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		StepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metric.StepDuration,
			Help:    "Wall time of one agent step, from receive to outcome.",
			Buckets: StepDurationBuckets,
		}, []string{metric.LabelClass, metric.LabelOutcome}),
		InFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metric.StepsInFlight,
			Help: "Agent steps currently running in this worker.",
		}, []string{metric.LabelClass}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metric.StepRetries,
			Help: "Agent steps that failed transiently and were left for queue redelivery.",
		}, []string{metric.LabelClass}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metric.StepsDeadLettered,
			Help: "Agent steps the worker moved to the dead-letter queue.",
		}, []string{metric.LabelClass}),
		AWSRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metric.AWSRequests,
			Help: "AWS API HTTP requests (every attempt, each billed), by service and operation.",
		}, []string{metric.LabelService, metric.LabelOperation}),
	}
	m.Registry.MustRegister(m.StepDuration, m.InFlight, m.Retries, m.DeadLettered, m.AWSRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// CountAWSRequest increments aws_api_requests_total{service,operation}; its signature fits
// awsconfig.RequestCounter.OnRequest. The operation (ReceiveMessage, DeleteMessageBatch,
// ChangeMessageVisibilityBatch, PutItem, ...) is what AWS bills per request, so the cost
// model can be read per operation; "unknown" when the SDK did not name it.
func (m *Metrics) CountAWSRequest(service, operation string) {
	if operation == "" {
		operation = "unknown"
	}
	m.AWSRequests.WithLabelValues(service, operation).Inc()
}

// ObserveStep records one finished step: its duration under outcome, and
// the retry or dead-letter counters for those outcomes.
func (m *Metrics) ObserveStep(class, outcome string, d time.Duration) {
	m.StepDuration.WithLabelValues(class, outcome).Observe(d.Seconds())
	switch outcome {
	case OutcomeRetry:
		m.Retries.WithLabelValues(class).Inc()
	case OutcomeDeadLetter:
		m.DeadLettered.WithLabelValues(class).Inc()
	}
}
