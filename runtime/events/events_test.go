package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/runtime/events/putevents"
)

func TestSize(t *testing.T) {
	e := Entry{
		Source:     "fleet.workers",        // 13
		DetailType: "agent.step.completed", // 20
		Detail:     []byte(`{"k":"é"}`),    // 10 bytes (é is 2)
		Resources:  []string{"arn:a", "ü"}, // 5 + 2
	}
	if got := Size(e); got != 50 {
		t.Fatalf("Size = %d, want 50", got)
	}
	e.Time = time.Unix(1, 0)
	if got := Size(e); got != 64 {
		t.Fatalf("Size with Time = %d, want 64", got)
	}
	e.TraceHeader = "Root=1-abc" // not counted
	if got := Size(e); got != 64 {
		t.Fatalf("Size with TraceHeader = %d, want 64", got)
	}
}

func TestNewValidates(t *testing.T) {
	for _, c := range []Config{
		{BusModel: "kafka"},
		{MaxEntries: 11},
		{BusModel: BusV2, MaxEntries: 101},
		{MaxEntries: -1},
		{MaxRequestBytes: putevents.MaxRequestBytes + 1},
	} {
		if _, err := New(nil, c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	b, err := New(nil, Config{BusModel: BusV2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if got := b.Config(); got.MaxEntries != 100 || got.MaxRequestBytes != putevents.MaxRequestBytes || got.Linger != 100*time.Millisecond || got.MaxAttempts != 4 {
		t.Fatalf("defaults %+v", got)
	}
}

func TestExactRequestJSON(t *testing.T) {
	f, client, _ := newFake(t)
	b, err := New(client, Config{Bus: "research", Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Publish(context.Background(), Entry{
		Source:      "fleet.workers",
		DetailType:  "agent.step.completed",
		Detail:      json.RawMessage(` {"result":{"ok":true},"agent_class":"researcher"}`),
		Resources:   []string{"arn:aws:states:us-east-1:111122223333:execution:sm:e1"},
		Time:        time.Date(2026, 11, 11, 9, 15, 22, 0, time.UTC),
		TraceID:     "conv-8842-step-7",
		TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `{"Entries":[{"Detail":"{\"agent_class\":\"researcher\",\"result\":{\"ok\":true},\"trace_id\":\"conv-8842-step-7\"}",` +
		`"DetailType":"agent.step.completed","EventBusName":"research",` +
		`"Resources":["arn:aws:states:us-east-1:111122223333:execution:sm:e1"],"Source":"fleet.workers",` +
		`"Time":1794388522,` +
		`"TraceHeader":"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"}]}`
	if len(f.bodies) != 1 {
		t.Fatalf("%d requests", len(f.bodies))
	}
	if d := cmp.Diff(want, f.bodies[0]); d != "" {
		t.Fatalf("request body (-want +got):\n%s", d)
	}
}

func TestTraceIDKeptWhenPresent(t *testing.T) {
	b, _ := New(nil, Config{})
	defer b.Close(context.Background())
	e, _, err := b.Prepare(Entry{Source: "s", DetailType: "d", Detail: []byte(`{"trace_id":"orig"}`), TraceID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if *e.Detail != `{"trace_id":"orig"}` {
		t.Fatalf("detail %s", *e.Detail)
	}
	for _, bad := range []string{``, `[1]`, `"s"`, `{"a":`} {
		if _, _, err := b.Prepare(Entry{Source: "s", DetailType: "d", Detail: []byte(bad)}); err == nil {
			t.Errorf("detail %q accepted", bad)
		}
	}
	if _, _, err := b.Prepare(Entry{DetailType: "d", Detail: []byte(`{}`)}); err == nil {
		t.Error("missing Source accepted")
	}
}

func detail(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)) }

func publishN(t *testing.T, b *Batcher, n int, size int) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := detail(i)
			if size > 0 {
				d = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", size)))
			}
			errs[i] = b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: d})
		}()
	}
	wg.Wait()
	return errs
}

func batchSizes(es [][]wireEntry) []int {
	var out []int
	for _, e := range es {
		out = append(out, len(e))
	}
	return out
}

func TestBatchesByCountAndFlushOnClose(t *testing.T) {
	f, client, counter := newFake(t)
	b, _ := New(client, Config{Linger: time.Hour}) // only count and Close flush
	var wg sync.WaitGroup
	var errs []error
	wg.Add(1)
	go func() { defer wg.Done(); errs = publishN(t, b, 25, 0) }()
	// 20 entries go out as two full batches; the last 5 wait for Close.
	deadline := time.Now().Add(5 * time.Second)
	for counter.CountOperation("eventbridge", "PutEvents") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := counter.CountOperation("eventbridge", "PutEvents"); n != 2 {
		t.Fatalf("before Close: %d requests, want 2", n)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if d := cmp.Diff([]int{10, 10, 5}, batchSizes(f.requestEntries(t))); d != "" {
		t.Fatalf("batch sizes (-want +got):\n%s", d)
	}
	if s := b.Stats(); s.Requests != 3 || s.Published != 25 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: detail(1)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestBatchesBySize(t *testing.T) {
	f, client, _ := newFake(t)
	// Each entry: 1+1+len(detail) ≈ 420 bytes; 1000-byte requests hold 2.
	b, _ := New(client, Config{MaxRequestBytes: 1000, Linger: 20 * time.Millisecond})
	errs := publishN(t, b, 6, 400)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.Close(context.Background())
	for _, req := range f.requestEntries(t) {
		total := 0
		for _, e := range req {
			total += Size(Entry{Source: e.Source, DetailType: e.DetailType, Detail: []byte(e.Detail)})
		}
		if len(req) > 2 || total > 1000 {
			t.Fatalf("request with %d entries, %d bytes", len(req), total)
		}
	}
	if n := len(f.bodies); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestV2BusBatches100(t *testing.T) {
	f, client, _ := newFake(t)
	b, _ := New(client, Config{BusModel: BusV2, Linger: time.Hour})
	errs := publishN(t, b, 100, 0)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.Close(context.Background())
	if d := cmp.Diff([]int{100}, batchSizes(f.requestEntries(t))); d != "" {
		t.Fatalf("batch sizes (-want +got):\n%s", d)
	}
}

func TestLingerFlushes(t *testing.T) {
	_, client, counter := newFake(t)
	b, _ := New(client, Config{Linger: 50 * time.Millisecond})
	defer b.Close(context.Background())
	start := time.Now()
	if err := b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: detail(1)}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 2*time.Second {
		t.Fatalf("lone entry published after %v, want ≈ linger 50ms", el)
	}
	if n := counter.CountOperation("eventbridge", "PutEvents"); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestEntryTooLarge(t *testing.T) {
	_, client, counter := newFake(t)
	b, _ := New(client, Config{Linger: time.Millisecond})
	defer b.Close(context.Background())
	// Exactly at the limit: accepted (a lone entry may use the full 1 MB).
	pad := putevents.MaxRequestBytes - len("s") - len("d") - len(`{"p":""}`)
	atLimit := Entry{Source: "s", DetailType: "d", Detail: []byte(`{"p":"` + strings.Repeat("x", pad) + `"}`)}
	if Size(atLimit) != putevents.MaxRequestBytes {
		t.Fatalf("size %d", Size(atLimit))
	}
	if err := b.Publish(context.Background(), atLimit); err != nil {
		t.Fatal(err)
	}
	over := atLimit
	over.Time = time.Unix(1, 0) // +14 bytes
	err := b.Publish(context.Background(), over)
	if !errors.Is(err, ErrEntryTooLarge) || !strings.Contains(err.Error(), "claimcheck") {
		t.Fatalf("err = %v", err)
	}
	if n := counter.CountOperation("eventbridge", "PutEvents"); n != 1 {
		t.Fatalf("%d requests, want 1 (oversize entry must not be sent)", n)
	}
}

func TestPartialFailureRetriesOnlyFailedEntries(t *testing.T) {
	f, client, _ := newFake(t)
	f.fail = func(req, idx int, d string) string {
		if req == 0 {
			switch d {
			case `{"n":1}`:
				return "ThrottlingException"
			case `{"n":3}`:
				return "InternalFailure"
			case `{"n":4}`:
				return "MalformedDetail" // permanent: never retried
			}
		}
		return ""
	}
	b, _ := New(client, Config{MaxEntries: 5, Linger: time.Hour, BaseBackoff: time.Millisecond})
	errs := publishN(t, b, 5, 0)
	b.Close(context.Background())
	reqs := f.requestEntries(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var retried []string
	for _, e := range reqs[1] {
		retried = append(retried, e.Detail)
	}
	if d := cmp.Diff([]string{`{"n":1}`, `{"n":3}`}, slices.Sorted(slices.Values(retried))); d != "" {
		t.Fatalf("second request entries (-want +got):\n%s", d)
	}
	for i, err := range errs {
		var ee *EntryError
		if i == 4 {
			if !errors.As(err, &ee) || ee.Code != "MalformedDetail" || ee.Attempts != 1 {
				t.Fatalf("entry 4: %v", err)
			}
		} else if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if s := b.Stats(); s.RetriedEntries != 2 || s.Published != 4 || s.Failed != 1 || s.Requests != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBoundedAttempts(t *testing.T) {
	f, client, _ := newFake(t)
	f.fail = func(int, int, string) string { return "InternalFailure" }
	b, _ := New(client, Config{MaxAttempts: 3, Linger: time.Millisecond, BaseBackoff: time.Millisecond})
	err := b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: detail(1)})
	b.Close(context.Background())
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Attempts != 3 || ee.Code != "InternalFailure" {
		t.Fatalf("err = %v", err)
	}
	if len(f.bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(f.bodies))
	}
}

func TestRequestErrors(t *testing.T) {
	f, client, _ := newFake(t)
	f.status = []int{500, 200} // transient, then OK
	b, _ := New(client, Config{Linger: time.Millisecond, BaseBackoff: time.Millisecond})
	if err := b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: detail(1)}); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 2 || f.bodies[0] != f.bodies[1] {
		t.Fatalf("want the same request twice, got %q", f.bodies)
	}
	f.status = []int{400} // validation: not retried
	if err := b.Publish(context.Background(), Entry{Source: "s", DetailType: "d", Detail: detail(2)}); err == nil || !strings.Contains(err.Error(), "ValidationException") {
		t.Fatalf("err = %v", err)
	}
	if len(f.bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(f.bodies))
	}
	b.Close(context.Background())
}

func TestFullJitterBounds(t *testing.T) {
	for attempt := 1; attempt < 10; attempt++ {
		ceiling := min(10*time.Millisecond<<(attempt-1), 100*time.Millisecond)
		for range 50 {
			if d := fullJitter(10*time.Millisecond, 100*time.Millisecond, attempt); d < 0 || d >= ceiling {
				t.Fatalf("attempt %d: %v outside [0,%v)", attempt, d, ceiling)
			}
		}
	}
}
