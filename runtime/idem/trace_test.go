package idem

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FindTrace finds a conversation's records by the trace id Acquire labelled them with, or by
// a key that is the trace id, and nothing of another trace or older than since.
func TestFindTrace(t *testing.T) {
	d, clk := store(t)
	ctx := context.Background()
	start := clk.Now()
	c, err := d.Acquire(WithTraceID(ctx, "t-1"), "ev-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Complete(ctx, "ev-1", c.Owner, json.RawMessage(`{}`), true, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second)
	if _, err := d.Acquire(ctx, "t-1", 10*time.Second); err != nil { // keyed by the trace id
		t.Fatal(err)
	}
	if _, err := d.Acquire(WithTraceID(ctx, "t-2"), "ev-2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rs, err := FindTrace(ctx, d.API.(ScanAPI), d.Table, "t-1", start)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Key != "ev-1" || rs[0].Status != statusDone || !rs[0].Published || rs[0].TraceID != "t-1" || rs[0].Class != "researcher" ||
		rs[1].Key != "t-1" || rs[1].Status != statusRunning || !rs[1].UpdatedAt.After(rs[0].UpdatedAt) {
		t.Fatalf("records of t-1: %+v", rs)
	}
	if rs, err := FindTrace(ctx, d.API.(ScanAPI), d.Table, "t-1", start.Add(time.Minute)); err != nil || len(rs) != 0 {
		t.Fatalf("since a minute later: %+v %v", rs, err)
	}
}

// A producer's trace id longer than MaxTraceIDBytes is not written on the record: it would
// take the room the record keeps for the step's result.
func TestLongTraceIDIsLeftOut(t *testing.T) {
	at := strings.Repeat("t", MaxTraceIDBytes)
	if got := traceIDFrom(WithTraceID(context.Background(), at)); got != at {
		t.Errorf("a trace id of %d bytes: %q", MaxTraceIDBytes, got)
	}
	if got := traceIDFrom(WithTraceID(context.Background(), at+"t")); got != "" {
		t.Errorf("a trace id of %d bytes was kept", MaxTraceIDBytes+1)
	}
}
