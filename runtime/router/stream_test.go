package router_test

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
)

// deltas is a streaming provider whose answer is n text deltas of one piece each: what a
// model server sends for a long answer, one token per chunk.
type deltas struct {
	n     int
	piece string
	sent  int // events handed out, across calls
}

func (d *deltas) System() string { return "test" }

func (d *deltas) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	panic("the router must stream from a StreamProvider")
}

func (d *deltas) ChatStream(context.Context, string, *router.Request) (router.Stream, error) {
	return &deltaStream{d: d}, nil
}

type deltaStream struct {
	d *deltas
	i int
}

func (s *deltaStream) Recv() (router.StreamEvent, error) {
	s.i++
	s.d.sent++
	switch {
	case s.i == 1:
		return router.StreamEvent{Kind: router.EventMessageStart}, nil
	case s.i <= s.d.n+1:
		return router.StreamEvent{Kind: router.EventBlockDelta, Text: s.d.piece}, nil
	case s.i == s.d.n+2:
		return router.StreamEvent{Kind: router.EventMessageStop, StopReason: router.StopEndTurn}, nil
	case s.i == s.d.n+3:
		return router.StreamEvent{Kind: router.EventMetadata}, nil
	}
	return router.StreamEvent{}, io.EOF
}

func (s *deltaStream) Close() error { return nil }

func streamRouter(tb testing.TB, d *deltas) *router.Router {
	tb.Helper()
	r, err := router.New([]router.Policy{pol("p", d, "m", func(p *router.Policy) { p.Timeout = time.Minute })}, router.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// streamBytes streams n deltas through the router and returns the bytes it allocated.
func streamBytes(t *testing.T, n int, piece string) uint64 {
	t.Helper()
	r := streamRouter(t, &deltas{n: n, piece: piece})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := r.ChatStream(context.Background(), "p", ask("x"), func(router.StreamEvent) error { return nil })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(resp.Text()); got != n*len(piece) {
		t.Fatalf("the assembled answer has %d bytes, want %d", got, n*len(piece))
	}
	return after.TotalAlloc - before.TotalAlloc
}

// Assembling a streamed answer is linear in its deltas: four times the deltas allocate
// about four times the bytes. Concatenating each delta onto the text so far copied the
// whole text every time (quadratic: 40,000 deltas took 67 s of CPU), sixteen times the bytes.
func TestStreamAssemblyIsLinear(t *testing.T) {
	piece := strings.Repeat("x", 16)
	const n = 4000
	small, large := streamBytes(t, n, piece), streamBytes(t, 4*n, piece)
	t.Logf("%d deltas: %d bytes allocated; %d deltas: %d bytes (ratio %.1f)", n, small, 4*n, large, float64(large)/float64(small))
	if large > 8*small {
		t.Errorf("4x the deltas allocated %.1fx the bytes (%d, %d): assembly is not linear", float64(large)/float64(small), small, large)
	}
}

// A streamed answer is bounded like a whole one: past router.MaxResponseBytes of content
// the call ends with an error naming the cap, and no more of the stream is read.
func TestStreamedAnswerIsCapped(t *testing.T) {
	const piece = 1 << 20
	d := &deltas{n: 2 * router.MaxResponseBytes / piece, piece: strings.Repeat("x", piece)}
	r := streamRouter(t, d)
	var emitted int
	_, err := r.ChatStream(context.Background(), "p", ask("x"), func(router.StreamEvent) error { emitted++; return nil })
	if err == nil || !strings.Contains(err.Error(), "router.MaxResponseBytes") {
		t.Fatalf("a %d-byte streamed answer: %v", d.n*piece, err)
	}
	if limit := 1 + router.MaxResponseBytes/piece + 1; d.sent > limit {
		t.Errorf("%d events read from the provider after the cap; at most %d needed", d.sent, limit)
	}
}

// BenchmarkStreamAssembly40k streams 40,000 one-token deltas through the router: the size
// of answer that took 67 s of CPU with quadratic assembly.
func BenchmarkStreamAssembly40k(b *testing.B) {
	r := streamRouter(b, &deltas{n: 40000, piece: "tok "})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ChatStream(context.Background(), "p", ask("x"), func(router.StreamEvent) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// cutStream is a provider stream that ends (io.EOF) after its first `after` events of a
// complete answer: a connection closed early.
type cutStream struct {
	deltaStream
	after int
}

type cutProvider struct{ after int }

func (c cutProvider) System() string { return "test" }
func (c cutProvider) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	panic("the router must stream from a StreamProvider")
}
func (c cutProvider) ChatStream(context.Context, string, *router.Request) (router.Stream, error) {
	return &cutStream{deltaStream: deltaStream{d: &deltas{n: 2, piece: "ab"}}, after: c.after}, nil
}

func (s *cutStream) Recv() (router.StreamEvent, error) {
	if s.i >= s.after {
		return router.StreamEvent{}, io.EOF
	}
	return s.deltaStream.Recv()
}

// A stream that ends before its stop event, or after it but before the metadata (the
// usage the token bucket is charged with), is a failed call, never a complete answer;
// the whole stream (start, 2 deltas, stop, metadata: 5 events) is one.
func TestStreamCutBeforeItsLastEventIsAnError(t *testing.T) {
	for after := 1; after <= 5; after++ {
		r, err := router.New([]router.Policy{pol("p", cutProvider{after: after}, "m", func(p *router.Policy) { p.Timeout = time.Minute })}, router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.ChatStream(context.Background(), "p", ask("x"), func(router.StreamEvent) error { return nil })
		switch {
		case after < 5 && err == nil:
			t.Errorf("a stream cut after %d of 5 events answered %q, want an error", after, resp.Text())
		case after < 5 && !strings.Contains(err.Error(), "ended before its stop and metadata events"):
			t.Errorf("a stream cut after %d of 5 events: %v", after, err)
		case after == 5 && err != nil:
			t.Errorf("the whole stream: %v", err)
		}
	}
}
