package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/wire"
)

func TestFromStatus(t *testing.T) {
	cases := []struct {
		status    int
		ra        string
		retryable bool
		code      string
		after     time.Duration
	}{
		{200, "", false, "HTTP200", 0}, // a 2xx passed here is a caller bug; never retried
		{400, "", false, "HTTP400", 0},
		{404, "", false, "HTTP404", 0},
		{408, "", true, "HTTP408", 0},
		{409, "", true, "HTTP409", 0},
		{422, "", false, "HTTP422", 0},
		{429, "", false, "SpendLimit", 0},
		{429, "7", true, "HTTP429", 7 * time.Second},
		{500, "", true, "HTTP500", 0},
		{503, "2", true, "HTTP503", 2 * time.Second},
		{529, "", true, "HTTP529", 0},
		{599, "", true, "HTTP599", 0},
	}
	for _, c := range cases {
		e := FromStatus(c.status, c.ra, "")
		if e.Retryable != c.retryable || string(e.Code) != c.code || e.RetryAfter != c.after {
			t.Errorf("%d ra=%q: got %+v", c.status, c.ra, e)
		}
	}
}

func TestParseRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, ok := ParseRetryAfter(now.Add(30*time.Second).Format("Mon, 02 Jan 2006 15:04:05 GMT"), now)
	if !ok || d != 30*time.Second {
		t.Errorf("got %v %v", d, ok)
	}
	if _, ok := ParseRetryAfter("soon", now); ok {
		t.Error("garbage accepted")
	}
	if _, ok := ParseRetryAfter("-3", now); ok {
		t.Error("negative accepted")
	}
}

func TestBackoffFullJitter(t *testing.T) {
	p := Policy{Base: 500 * time.Millisecond, Cap: 30 * time.Second, Rand: func() float64 { return 0.999999 }}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for a, w := range want {
		got := p.Backoff(a)
		if got > w || got < w-w/1000 {
			t.Errorf("attempt %d: %v, want ~%v", a, got, w)
		}
	}
	if got := p.Backoff(200); got > 30*time.Second {
		t.Errorf("overflow: %v", got)
	}
	p.Rand = func() float64 { return 0 }
	if p.Backoff(3) != 0 {
		t.Error("full jitter must reach 0")
	}
	// Real randomness spreads: 1000 draws at attempt 6 are not clustered.
	p.Rand = nil
	var lo, hi int
	for i := 0; i < 1000; i++ {
		d := p.Backoff(6)
		if d < 0 || d > 30*time.Second {
			t.Fatalf("out of range %v", d)
		}
		if d < 10*time.Second {
			lo++
		} else if d > 20*time.Second {
			hi++
		}
	}
	if lo < 200 || hi < 200 {
		t.Errorf("not spread: lo=%d hi=%d", lo, hi)
	}
}

func TestDecide(t *testing.T) {
	p := Policy{MaxAttempts: 4, Base: 100 * time.Millisecond, Cap: time.Second, Rand: func() float64 { return 0.5 }}
	d := p.Decide(FromStatus(503, "", ""), 1)
	if d.DeadLetter || d.Delay != 100*time.Millisecond {
		t.Errorf("503 attempt 1: %+v", d)
	}
	d = p.Decide(FromStatus(503, "3", ""), 2)
	if d.DeadLetter || d.Delay != 3150*time.Millisecond {
		t.Errorf("retry-after wins (a throttle: 3 s plus half of its 10 %% jitter): %+v", d)
	}
	d = p.Decide(FromStatus(500, "3", ""), 2)
	if d.DeadLetter || d.Delay != 3*time.Second {
		t.Errorf("a 500's retry-after is taken as given (no throttle): %+v", d)
	}
	d = p.Decide(FromStatus(503, "", ""), 4)
	if !d.DeadLetter || d.Reason.Code != "RetriesExhausted" {
		t.Errorf("exhausted: %+v", d)
	}
	d = p.Decide(FromStatus(429, "", "monthly spend limit"), 1)
	if !d.DeadLetter || d.Reason.Code != "SpendLimit" {
		t.Errorf("spend limit: %+v", d)
	}
	d = p.Decide(fmt.Errorf("wrapped: %w", context.DeadlineExceeded), 1)
	if d.DeadLetter || d.Reason.Code != "Timeout" {
		t.Errorf("timeout: %+v", d)
	}
	d = p.Decide(Permanent("BadInput", errors.New("no trace_id")), 1)
	if !d.DeadLetter || d.Reason.Code != "BadInput" {
		t.Errorf("permanent: %+v", d)
	}
}

func TestThrottleNamesItsDelay(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "7")
	if e := FromResponse(429, h, ""); !e.Throttle || !e.Retryable || e.RetryAfter != 7*time.Second {
		t.Errorf("429 Retry-After 7 = %+v, want a 7 s throttle", e)
	}
	h.Set("retry-after-ms", "1500")
	if e := FromResponse(503, h, ""); !e.Throttle || e.RetryAfter != 1500*time.Millisecond {
		t.Errorf("503 retry-after-ms 1500 = %+v, want a 1.5 s throttle (ms wins)", e)
	}
	if e := FromResponse(429, http.Header{}, ""); e.Throttle || e.Retryable || e.Code != wire.SpendLimit {
		t.Errorf("429 without retry-after = %+v, want a spend limit", e)
	}
	if e := FromResponse(500, h, ""); e.Throttle || !e.Retryable {
		t.Errorf("500 = %+v, want a retryable failure, not a throttle", e)
	}
	if e := FromResponse(503, http.Header{}, ""); e.Throttle || !e.Retryable {
		t.Errorf("503 without retry-after = %+v, want a retryable failure, not a throttle", e)
	}
	if e := Throttled(wire.ModelUnavailable, time.Second, nil); !e.Throttle || !e.Retryable || e.RetryAfter != time.Second {
		t.Errorf("Throttled = %+v", e)
	}
}

// A throttle's delay is its RetryAfter plus at most 10 % jitter whatever the failure count,
// and it counts toward no budget; a failure's ceiling doubles with the count.
func TestDelayThrottleIsNotAFailure(t *testing.T) {
	p := Policy{Base: 100 * time.Millisecond, Cap: 10 * time.Second, Rand: func() float64 { return 0.999 }}
	th := Throttled(wire.ModelUnavailable, 2*time.Second, errors.New("cooling down"))
	for n := range 5 {
		if d := p.Delay(th, n); d < 2*time.Second || d > 2200*time.Millisecond {
			t.Errorf("throttle after %d failures waits %v, want 2 s..2.2 s", n, d)
		}
	}
	if Counts(th) {
		t.Error("a throttle counts as a failure")
	}
	f := FromStatus(503, "", "")
	if !Counts(f) {
		t.Error("a 503 without retry-after does not count as a failure")
	}
	if a, b := p.Delay(f, 0), p.Delay(f, 3); a >= 100*time.Millisecond || b < 700*time.Millisecond || b >= 800*time.Millisecond {
		t.Errorf("full jitter at 0.999: n=0 %v (ceiling 100 ms), n=3 %v (ceiling 800 ms)", a, b)
	}
}

// A retry-after too large for a time.Duration (retry-after-ms up to 2^53, Retry-After of
// 10^11 s, a handler's retry_after_seconds) is read as MaxRetryAfter, never as an overflowed
// (negative or wrapped) wait; and a throttle's jitter on it does not overflow either.
func TestRetryAfterHugeIsCapped(t *testing.T) {
	now := time.Now()
	for _, h := range []http.Header{
		{"Retry-After-Ms": {"9007199254740000"}},
		{"Retry-After": {"100000000000"}},
		{"Retry-After": {"9223372036854775807"}},
	} {
		d, ok := RetryAfterHeaders(h, now)
		if !ok || d != MaxRetryAfter {
			t.Errorf("%v: retry-after %v %t, want MaxRetryAfter %v", h, d, ok, MaxRetryAfter)
		}
	}
	p := Policy{Base: 100 * time.Millisecond, Cap: time.Second, Rand: func() float64 { return 0.999 }}
	e := Throttled(wire.ModelUnavailable, time.Duration(1<<63-1), nil)
	if d := p.Delay(e, 0); d < MaxRetryAfter {
		t.Errorf("throttle of %v: delay %v, want at least MaxRetryAfter", e.RetryAfter, d)
	}
}

// A throttle naming no wait (retry-after 0) waits at least the policy's base: it is not a
// call back at once, which would spin on the dependency for the whole step window.
func TestDelayZeroThrottleHasAFloor(t *testing.T) {
	p := Policy{Base: 500 * time.Millisecond, Cap: 30 * time.Second, Rand: func() float64 { return 0 }}
	for _, e := range []*Error{Throttled(wire.ModelUnavailable, 0, nil), FromStatus(429, "0", "")} {
		if d := p.Delay(e, 0); d < p.Base {
			t.Errorf("%+v: delay %v, want at least the base %v", e, d, p.Base)
		}
	}
}

// A wait is named rounded up in both headers, and read back it is never shorter than the
// wait: a truncated retry-after-ms (999.7 ms as "999") brought fleetc dev's model stand-in's
// client back while its 429 wave still held.
func TestSetRetryAfterHeadersNeverComesBackEarly(t *testing.T) {
	for _, tc := range []struct {
		d     time.Duration
		s, ms string
	}{
		{999*time.Millisecond + 700*time.Microsecond, "1", "1000"},
		{time.Millisecond + 1, "1", "2"},
		{2 * time.Second, "2", "2000"},
		{2*time.Second + 1, "3", "2001"},
		{3 * time.Nanosecond, "1", "1"},
	} {
		h := http.Header{}
		SetRetryAfterHeaders(h, tc.d)
		if h.Get("Retry-After") != tc.s || h.Get("Retry-After-Ms") != tc.ms {
			t.Errorf("%v: Retry-After %q, retry-after-ms %q; want %q, %q", tc.d, h.Get("Retry-After"), h.Get("Retry-After-Ms"), tc.s, tc.ms)
		}
		if got, ok := RetryAfterHeaders(h, time.Now()); !ok || got < tc.d {
			t.Errorf("%v read back as %v (%v): earlier than named", tc.d, got, ok)
		}
		h.Del("Retry-After-Ms")
		if got, ok := RetryAfterHeaders(h, time.Now()); !ok || got < tc.d {
			t.Errorf("%v read back from Retry-After alone as %v (%v): earlier than named", tc.d, got, ok)
		}
	}
}
