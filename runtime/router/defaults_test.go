package router

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Between in-group attempts the router waits a full-jitter delay: Rand times the ceiling
// min(BackoffCap, BackoffBase << (attempt-1)), with 100 ms and 2 s when the policy sets
// neither. Rand is 1 here, so every delay is its ceiling; a ceiling longer than the time left
// before the step deadline ends the group at once instead of sleeping.
func TestBackoffDefaultsBetweenAttempts(t *testing.T) {
	flaky := func() *script {
		return &script{answer: func(n int) (*Response, error) {
			if n == 1 {
				return status(503, "")(n)
			}
			return ok("second")(n)
		}}
	}
	always1 := Options{Rand: func() float64 { return 1 }}
	defaults := func(p *Policy) { p.Retries, p.BackoffBase, p.BackoffCap = 1, 0, 0 }

	// The first retry waits the default base, 100 ms: it fits a 350 ms deadline, where a
	// retry waiting as the third would (400 ms), or the cap's 2 s, would not.
	s := flaky()
	r, err := New([]Policy{policy("p", s, defaults)}, always1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	resp, err := r.Chat(ctx, "p", req())
	if err != nil || resp.Text() != "second" || s.count() != 2 {
		t.Fatalf("%v %v after %d calls: want the retry's answer", resp, err, s.count())
	}
	if gap := s.at[1].Sub(s.at[0]); gap < 100*time.Millisecond {
		t.Errorf("retry %s after the first attempt, want the default base 100ms", gap)
	}

	// The cap: a base of 4 s is capped at the default 2 s, which fits a 2.6 s deadline.
	s = flaky()
	r, _ = New([]Policy{policy("p", s, func(p *Policy) { defaults(p); p.BackoffBase = 4 * time.Second })}, always1)
	ctx, cancel = context.WithTimeout(context.Background(), 2600*time.Millisecond)
	defer cancel()
	resp, err = r.Chat(ctx, "p", req())
	if err != nil || resp.Text() != "second" || s.count() != 2 {
		t.Fatalf("base 4s, default cap: %v %v after %d calls: want the retry after 2s", resp, err, s.count())
	}
	if gap := s.at[1].Sub(s.at[0]); gap < 2*time.Second {
		t.Errorf("retry %s after the first attempt, want the default cap 2s", gap)
	}
}

// A policy's own FailWindow is kept however short: failures further apart than it never add
// up to a cooldown (only an unset or negative window is the default minute).
func TestShortFailWindowIsKept(t *testing.T) {
	down := &script{answer: status(503, ""), delay: time.Millisecond}
	r, _ := New([]Policy{policy("p", down, func(p *Policy) {
		p.FailWindow, p.AllowedFails, p.Retries = time.Nanosecond, 1, 0
	})}, Options{})
	for i := 0; i < 4; i++ {
		r.Chat(context.Background(), "p", req())
	}
	if down.count() != 4 {
		t.Fatalf("%d calls of 4: failures 1 ms apart in a 1 ns window benched the deployment", down.count())
	}
	// The same failures in the default window (unset) bench it after allowed_fails + 1.
	down = &script{answer: status(503, ""), delay: time.Millisecond}
	r, _ = New([]Policy{policy("p", down, func(p *Policy) { p.AllowedFails, p.Retries = 1, 0 })}, Options{})
	for i := 0; i < 4; i++ {
		r.Chat(context.Background(), "p", req())
	}
	if down.count() != 2 {
		t.Fatalf("%d calls of 4 in the default window, want 2 (benched after the second failure)", down.count())
	}
}

// max_in_flight 1 is a cap (one call at a time); 0 is no cap at all, not a cap of nothing.
func TestMaxInFlightEdges(t *testing.T) {
	// Uncapped, the three calls overlap for 2 s (room for a loaded machine to start them);
	// capped, they run one after another.
	for _, c := range []struct {
		cap, wantMax int64
		delay        time.Duration
	}{{0, 3, 2 * time.Second}, {1, 1, 100 * time.Millisecond}} {
		s := &script{answer: ok("ok"), delay: c.delay}
		r, _ := New([]Policy{policy("p", s, func(p *Policy) { p.MaxInFlight, p.Timeout = int(c.cap), 4*time.Second })}, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Chat(ctx, "p", req()); err != nil {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		cancel()
		if failed.Load() != 0 || s.maxSeen.Load() != c.wantMax {
			t.Errorf("max_in_flight %d: %d of 3 failed, %d in flight at most, want %d", c.cap, failed.Load(), s.maxSeen.Load(), c.wantMax)
		}
	}
}

// tokens_per_minute 1 is a budget: the first answer (15 tokens) spends it, so the next call
// goes to the fallback.
func TestOneTokenPerMinuteIsABudget(t *testing.T) {
	heavy := &script{answer: ok("primary")}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{
		policy("p", heavy, func(p *Policy) { p.TokensPerMinute = 1; p.Fallbacks = []string{"spare"} }),
		policy("spare", spare, nil),
	}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a refill is a minute away
	defer cancel()
	first, _ := r.Chat(ctx, "p", req())
	second, err := r.Chat(ctx, "p", req())
	if first == nil || first.Text() != "primary" || err != nil || second.Text() != "spare" || heavy.count() != 1 {
		t.Fatalf("first %v, second %v (%v), primary calls %d: a budget of 1 token must send the second call to the fallback", first, second, err, heavy.count())
	}
}
