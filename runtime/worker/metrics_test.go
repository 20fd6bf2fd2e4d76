package worker_test

import (
	"io"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// Verdicts reach the Prometheus metrics: successes and dead letters by
// class, and AWS requests by service and operation (receive, delete and
// visibility calls apart, exactly as the request counter saw them).
func TestMetricsCountVerdicts(t *testing.T) {
	t.Parallel() // waits on kumo for seconds: see newEnv
	e := newEnv(t, envOpts{heartbeat: 1})
	tel, err := telemetry.New(telemetry.Options{ServiceName: "test-researcher", Class: e.cfg.Class, LogWriter: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ks := keys("m", 5)
	for _, k := range ks {
		e.send(envelope("evt-"+k, stepSpec{TraceID: k}), "")
	}
	// A step longer than the 1 s heartbeat, so visibility is extended.
	e.send(envelope("evt-slow", stepSpec{TraceID: "slow", SleepMS: 2500}), "")
	e.send(envelope("evt-p", stepSpec{TraceID: "poison", Behavior: "poison"}), "")
	e.send("{not json", "")
	_, stop := e.startWorkerWith(5*time.Second, tel)
	e.account(append(ks, "slow", "poison", "<malformed>"), map[string]string{"poison": "HTTP400", "<malformed>": "MalformedMessage"}, 30*time.Second)
	stop() // no request after this: the metrics and the counter hold still
	val := func(name string, labels ...string) float64 {
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
				have := map[string]string{}
				for _, l := range m.GetLabel() {
					have[l.GetName()] = l.GetValue()
				}
				match := true
				for i := 0; i < len(labels); i += 2 {
					match = match && have[labels[i]] == labels[i+1]
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
	if got := val(metric.StepsDeadLettered, "class", e.cfg.Class); got != 2 {
		t.Errorf("agent_steps_dead_lettered_total = %v, want 2", got)
	}
	if got := val(metric.StepsInFlight, "class", e.cfg.Class); got != 0 {
		t.Errorf("agent_steps_in_flight = %v after drain", got)
	}
	if got := val(metric.StepDuration, "outcome", telemetry.OutcomeSuccess); got != 6 {
		t.Errorf("successful steps observed: %v, want 6", got)
	}
	if got := val(metric.AWSRequests, "service", "sqs"); got < 3 {
		t.Errorf("aws_api_requests_total{service=sqs} = %v", got)
	}
	if got := val(metric.AWSRequests, "service", "dynamodb"); got < 10 {
		t.Errorf("aws_api_requests_total{service=dynamodb} = %v, want ≥ 2 per completed step", got)
	}
	for _, op := range []string{"ReceiveMessage", "DeleteMessageBatch", "ChangeMessageVisibilityBatch", "SendMessage"} {
		got := val(metric.AWSRequests, "service", "sqs", "operation", op)
		if got < 1 || got != float64(e.counter.CountOperation("sqs", op)) {
			t.Errorf("aws_api_requests_total{service=sqs,operation=%s} = %v, the request counter saw %d", op, got, e.counter.CountOperation("sqs", op))
		}
	}
	if got := val(metric.AWSRequests, "service", "dynamodb", "operation", "unknown"); got != 0 {
		t.Errorf("%v DynamoDB requests without an operation", got)
	}
	if got, want := val(metric.AWSRequests), float64(e.counter.Total()); got != want {
		t.Errorf("aws_api_requests_total sums to %v, the request counter saw %v", got, want)
	}
}
