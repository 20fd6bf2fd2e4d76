package worker_test

import (
	"io"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/telemetry"
)

// Verdicts reach the Prometheus metrics: successes and dead letters by
// class, and AWS requests by service.
func TestMetricsCountVerdicts(t *testing.T) {
	e := newEnv(t, envOpts{heartbeat: 1})
	tel, err := telemetry.New(telemetry.Options{ServiceName: "test-researcher", Class: e.cfg.Class, LogWriter: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ks := keys("m", 5)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k}), "")
	}
	e.send(envelope("evt-p", stepSpec{TraceID: "poison", Behavior: "poison"}), "")
	e.send("{not json", "")
	e.startWorkerWith(5*time.Second, tel)
	e.account(append(ks, "poison", "<malformed>"), map[string]string{"poison": "HTTP400", "<malformed>": "MalformedMessage"}, 30*time.Second)
	val := func(name, label, value string) float64 {
		fams, err := tel.Metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				match := false
				for _, l := range m.GetLabel() {
					if l.GetName() == label && l.GetValue() == value {
						match = true
					}
				}
				if !match {
					continue
				}
				switch {
				case m.Counter != nil:
					sum += m.GetCounter().GetValue()
				case m.Gauge != nil:
					sum += m.GetGauge().GetValue()
				case m.Histogram != nil:
					sum += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return sum
	}
	if got := val(telemetry.MetricStepsDeadLettered, "class", e.cfg.Class); got != 2 {
		t.Errorf("agent_steps_dead_lettered_total = %v, want 2", got)
	}
	if got := val(telemetry.MetricStepsInFlight, "class", e.cfg.Class); got != 0 {
		t.Errorf("agent_steps_in_flight = %v after drain", got)
	}
	if got := val(telemetry.MetricStepDuration, "outcome", telemetry.OutcomeSuccess); got != 5 {
		t.Errorf("successful steps observed: %v, want 5", got)
	}
	if got := val(telemetry.MetricAWSRequests, "service", "sqs"); got < 3 {
		t.Errorf("aws_api_requests_total{service=sqs} = %v", got)
	}
	if got := val(telemetry.MetricAWSRequests, "service", "dynamodb"); got < 10 {
		t.Errorf("aws_api_requests_total{service=dynamodb} = %v, want ≥ 2 per completed step", got)
	}
}
