package events

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
)

// BenchmarkPublishSaturation measures PutEvents requests per completion
// event when many steps finish at once (publishers = 4 × MaxEntries, each
// publishing back to back). The target on a classic bus is ≤ 0.11
// (batches of 10, a little slack for linger-flushed tails).
//
//	go test -run '^$' -bench PublishSaturation ./runtime/events/
func BenchmarkPublishSaturation(b *testing.B) {
	b.Run("fake/classic", func(b *testing.B) {
		_, client, counter := newFake(b)
		benchSaturation(b, client, counter, Config{})
	})
	b.Run("fake/v2", func(b *testing.B) {
		_, client, counter := newFake(b)
		benchSaturation(b, client, counter, Config{BusModel: BusV2})
	})
	b.Run("kumo/classic", func(b *testing.B) {
		counter := awsconfig.NewRequestCounter()
		cfg := kumotest.RequireWith(b, awsconfig.Options{Counter: counter})
		bus, _ := kumoBus(b, cfg)
		benchSaturation(b, awsconfig.EventBridge(cfg), counter, Config{Bus: bus})
	})
}

func benchSaturation(b *testing.B, client *eventbridge.Client, counter *awsconfig.RequestCounter, cfg Config) {
	bt, err := New(client, cfg)
	if err != nil {
		b.Fatal(err)
	}
	publishers := 4 * bt.Config().MaxEntries
	b.SetParallelism((publishers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	detail := json.RawMessage(`{"agent_class":"researcher","conversation_id":"8842","result":{"summary":"three sources found"}}`)
	counter.Reset()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bt.Publish(context.Background(), Entry{Source: "fleet.workers", DetailType: "agent.step.completed", Detail: detail, TraceID: "t"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := bt.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reqs := counter.CountOperation("eventbridge", "PutEvents")
	b.ReportMetric(float64(reqs)/float64(b.N), "putevents/completion")
	b.ReportMetric(float64(b.N)/float64(max(reqs, 1)), "entries/request")
}

// TestSaturationRatio pins the benchmark's claim as a test: 40 busy
// publishers, 400 completions, a classic bus → ≤ 0.11 requests each.
func TestSaturationRatio(t *testing.T) {
	_, client, counter := newFake(t)
	bt, _ := New(client, Config{})
	done := make(chan error, 400)
	for range 40 {
		go func() {
			for range 10 {
				done <- bt.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: json.RawMessage(`{}`)})
			}
		}()
	}
	for range 400 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	bt.Close(context.Background())
	if r := float64(counter.CountOperation("eventbridge", "PutEvents")) / 400; r > 0.11 {
		t.Fatalf("%.3f PutEvents requests per completion, want ≤ 0.11", r)
	}
}
