package router

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetc/fleetc/runtime/retry"
)

// script is an in-memory provider whose answers a test scripts per call.
type script struct {
	mu       sync.Mutex
	calls    int
	at       []time.Time
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	answer   func(n int) (*Response, error) // n is the 1-based call number
	delay    time.Duration
}

func (s *script) System() string { return "test" }

func (s *script) Chat(ctx context.Context, model string, req *Request) (*Response, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	cur := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if cur <= m || s.maxSeen.CompareAndSwap(m, cur) {
			break
		}
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, &ProviderError{Err: ctx.Err()}
		}
	}
	return s.answer(n)
}

func (s *script) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

func ok(text string) func(int) (*Response, error) {
	return func(int) (*Response, error) {
		return &Response{Model: "m", StopReason: StopEndTurn, Usage: Usage{InputTokens: 10, OutputTokens: 5},
			Message: Message{Role: RoleAssistant, Content: []Block{{Text: text}}}}, nil
	}
}

func status(code int, retryAfter string) func(int) (*Response, error) {
	return func(int) (*Response, error) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return nil, FromHTTP(code, h, "", "scripted")
	}
}

func policy(name string, p Provider, mod func(*Policy)) Policy {
	pol := Policy{Name: name, Deployments: []Deployment{{Name: "test/" + name, Model: name, Provider: p}},
		Retries: 2, Timeout: time.Second, AllowedFails: 2, Cooldown: time.Minute, BackoffBase: time.Millisecond, BackoffCap: 2 * time.Millisecond}
	if mod != nil {
		mod(&pol)
	}
	return pol
}

func req() *Request {
	return &Request{Messages: []Message{{Role: RoleUser, Content: []Block{{Text: "hi"}}}}}
}

func TestHardDownPrimaryFallbackAnswersAll(t *testing.T) {
	for _, withFallback := range []bool{false, true} {
		down := &script{answer: status(503, "")}
		spare := &script{answer: ok("spare")}
		reg := prometheus.NewRegistry()
		m, _ := NewMetrics(reg)
		fb := []string(nil)
		if withFallback {
			fb = []string{"spare"}
		}
		r, err := New([]Policy{
			policy("primary", down, func(p *Policy) { p.Fallbacks = fb }),
			policy("spare", spare, nil),
		}, Options{Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		succeeded := 0
		for i := 0; i < 30; i++ {
			resp, err := r.Chat(context.Background(), "primary", req())
			if err == nil && resp.Text() == "spare" && resp.Policy == "spare" {
				succeeded++
			}
		}
		// allowed_fails 2: the third failure benches the primary; it is never called again.
		if down.count() != 3 {
			t.Errorf("fallback=%v: primary called %d times, want 3 (no call while cooling down)", withFallback, down.count())
		}
		if withFallback && succeeded != 30 {
			t.Errorf("with a cross-group fallback: %d/30 succeeded", succeeded)
		}
		if !withFallback && succeeded != 0 {
			t.Errorf("in-group retries alone against a hard-down group: %d/30 succeeded, want 0", succeeded)
		}
		if got := testutil.ToFloat64(m.cooldowns.WithLabelValues("primary", "test/primary")); got != 1 {
			t.Errorf("cooldowns = %v, want 1", got)
		}
		if withFallback {
			if got := testutil.ToFloat64(m.fallbacks.WithLabelValues("primary", "spare", "failure")); got != 30 {
				t.Errorf("fallbacks = %v, want 30", got)
			}
		}
		// Trying the requested policy itself is no fallback: spare is the only series.
		if n, want := testutil.CollectAndCount(m.fallbacks), map[bool]int{false: 0, true: 1}[withFallback]; n != want {
			t.Errorf("fallback series = %d, want %d (primary to spare only)", n, want)
		}
	}
}

func TestCooldownEndsAndDeploymentIsProbedAgain(t *testing.T) {
	flaky := &script{answer: func(n int) (*Response, error) {
		if n <= 3 {
			return status(500, "")(n)
		}
		return ok("back")(n)
	}}
	r, _ := New([]Policy{policy("p", flaky, func(p *Policy) { p.Cooldown = 150 * time.Millisecond; p.Retries = 0 })}, Options{})
	for i := 0; i < 3; i++ {
		r.Chat(context.Background(), "p", req())
	}
	if _, err := r.Chat(context.Background(), "p", req()); err == nil || flaky.count() != 3 {
		t.Fatalf("during cooldown: err %v, calls %d (want an error and no new call)", err, flaky.count())
	}
	time.Sleep(200 * time.Millisecond)
	resp, err := r.Chat(context.Background(), "p", req())
	if err != nil || resp.Text() != "back" {
		t.Fatalf("after cooldown: %v %v", resp, err)
	}
}

func TestSpendLimitIsNeverRetriedNorFallenBack(t *testing.T) {
	spent := &script{answer: status(429, "")}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{policy("p", spent, func(p *Policy) { p.Fallbacks = []string{"spare"} }), policy("spare", spare, nil)}, Options{})
	_, err := r.Chat(context.Background(), "p", req())
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != CodeSpendLimit || re.Retryable {
		t.Fatalf("err = %#v, want a non-retryable SpendLimit", err)
	}
	if spent.count() != 1 || spare.count() != 0 {
		t.Fatalf("calls: primary %d, fallback %d; want 1 and 0", spent.count(), spare.count())
	}
	if d := (retry.Policy{MaxAttempts: 5}).Decide(err, 1); !d.DeadLetter || d.Reason.Code != CodeSpendLimit {
		t.Fatalf("queue decision %+v: want dead-letter SpendLimit", d)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	s := &script{answer: func(n int) (*Response, error) {
		if n == 1 {
			return status(429, "1")(n)
		}
		return ok("ok")(n)
	}}
	r, _ := New([]Policy{policy("p", s, nil)}, Options{})
	resp, err := r.Chat(context.Background(), "p", req())
	if err != nil || resp.Text() != "ok" {
		t.Fatal(resp, err)
	}
	if gap := s.at[1].Sub(s.at[0]); gap < time.Second {
		t.Fatalf("second call %v after a retry-after: 1, want >= 1s", gap)
	}
	// A retry-after past the step deadline is not waited for.
	s2 := &script{answer: status(529, "30")}
	r2, _ := New([]Policy{policy("p", s2, nil)}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r2.Chat(ctx, "p", req())
	var re *retry.Error
	// It comes back as a throttle carrying what remains of the retry-after (an overloaded 529
	// that named when to come back is a delay, not a failure).
	if !errors.As(err, &re) || !re.Retryable || !re.Throttle || re.RetryAfter <= 29*time.Second || re.RetryAfter > 30*time.Second ||
		time.Since(start) > 250*time.Millisecond || s2.count() != 1 {
		t.Fatalf("err %v after %v, %d calls: want an immediate throttle carrying the rest of retry-after 30s", err, time.Since(start), s2.count())
	}
}

func TestTimeoutAndStepDeadlineBoundEveryAttempt(t *testing.T) {
	slow := &script{answer: ok("slow"), delay: 2 * time.Second}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{
		policy("p", slow, func(p *Policy) { p.Timeout = 100 * time.Millisecond; p.Retries = 1; p.Fallbacks = []string{"spare"} }),
		policy("spare", spare, nil),
	}, Options{})
	start := time.Now()
	resp, err := r.Chat(context.Background(), "p", req())
	if err != nil || resp.Text() != "spare" || time.Since(start) > time.Second {
		t.Fatalf("%v %v after %v: want the fallback within ~0.2s", resp, err, time.Since(start))
	}
	// The step deadline (50 ms) is shorter than the policy timeout (1 s): it wins.
	r2, _ := New([]Policy{policy("p", &script{answer: ok("slow"), delay: 2 * time.Second}, nil)}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = r2.Chat(ctx, "p", req())
	var re *retry.Error
	if !errors.As(err, &re) || !re.Retryable || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("err %v after %v: want a retryable timeout near 50ms", err, time.Since(start))
	}
}

func TestInFlightCapHoldsWhileFallingBack(t *testing.T) {
	down := &script{answer: status(503, ""), delay: 5 * time.Millisecond}
	spare := &script{answer: ok("spare"), delay: 20 * time.Millisecond}
	r, _ := New([]Policy{
		policy("p", down, func(p *Policy) { p.MaxInFlight = 4; p.Fallbacks = []string{"spare"}; p.AllowedFails = 1000 }),
		policy("spare", spare, func(p *Policy) { p.MaxInFlight = 3 }),
	}, Options{})
	var wg sync.WaitGroup
	var okN atomic.Int64
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.Chat(ctx, "p", req()); err == nil {
				okN.Add(1)
			}
		}()
	}
	wg.Wait()
	if okN.Load() != 40 {
		t.Errorf("%d/40 succeeded", okN.Load())
	}
	if down.maxSeen.Load() > 4 || spare.maxSeen.Load() > 3 {
		t.Fatalf("max in flight: primary %d (cap 4), fallback %d (cap 3)", down.maxSeen.Load(), spare.maxSeen.Load())
	}
	if spare.maxSeen.Load() < 2 {
		t.Errorf("fallback never ran concurrently (max %d): the test does not exercise the cap", spare.maxSeen.Load())
	}
}

func TestContextWindowFallback(t *testing.T) {
	small := &script{answer: func(int) (*Response, error) {
		return nil, &ProviderError{Status: 400, Code: "ValidationException", Message: "too long", ContextWindow: true}
	}}
	big := &script{answer: ok("big")}
	other := &script{answer: ok("other")}
	r, _ := New([]Policy{
		policy("p", small, func(p *Policy) { p.Fallbacks = []string{"other"}; p.ContextWindowFallbacks = []string{"big"} }),
		policy("big", big, nil), policy("other", other, nil),
	}, Options{})
	resp, err := r.Chat(context.Background(), "p", req())
	if err != nil || resp.Text() != "big" || small.count() != 1 || other.count() != 0 {
		t.Fatalf("%v %v: small %d, other %d", resp, err, small.count(), other.count())
	}
	r2, _ := New([]Policy{policy("p", small, nil)}, Options{})
	_, err = r2.Chat(context.Background(), "p", req())
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != CodeContextWindow || re.Retryable {
		t.Fatalf("without a context-window fallback: %v", err)
	}
}

func TestTokenBucketGatesAndSpills(t *testing.T) {
	// 600 tokens per minute = 10 per second; each answer reports 15 tokens.
	heavy := &script{answer: ok("primary")}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{
		policy("p", heavy, func(p *Policy) { p.TokensPerMinute = 10; p.Fallbacks = []string{"spare"} }),
		policy("spare", spare, nil),
	}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	first, _ := r.Chat(ctx, "p", req())
	second, err := r.Chat(ctx, "p", req())
	if first.Text() != "primary" || err != nil || second.Text() != "spare" || heavy.count() != 1 {
		t.Fatalf("first %q, second %q (%v), primary calls %d: the spent budget must send the second call to the fallback", first.Text(), second.Text(), err, heavy.count())
	}
}

func TestPermanentErrorStopsAtOnce(t *testing.T) {
	bad := &script{answer: status(400, "")}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{policy("p", bad, func(p *Policy) { p.Fallbacks = []string{"spare"} }), policy("spare", spare, nil)}, Options{})
	_, err := r.Chat(context.Background(), "p", req())
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != CodeModelRejected || re.Retryable || bad.count() != 1 || spare.count() != 0 {
		t.Fatalf("err %v, calls %d/%d", err, bad.count(), spare.count())
	}
}

func TestNewRejectsUnknownFallback(t *testing.T) {
	if _, err := New([]Policy{policy("p", &script{}, func(p *Policy) { p.Fallbacks = []string{"nope"} })}, Options{}); err == nil {
		t.Fatal("want an error for an undefined fallback")
	}
}

// A→[B, D], B→[C]: a fallback's own fallbacks come right after it, so the order is
// B, C, D (C before D), each tried once the one before has failed.
func TestFallbackChainIsDepthFirstInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	down := func(name string) *script {
		return &script{answer: func(n int) (*Response, error) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return status(503, "")(n)
		}}
	}
	retries0 := func(p *Policy) { p.Retries = 0 }
	r, err := New([]Policy{
		policy("A", down("A"), func(p *Policy) { p.Retries = 0; p.Fallbacks = []string{"B", "D"} }),
		policy("B", down("B"), func(p *Policy) { p.Retries = 0; p.Fallbacks = []string{"C"} }),
		policy("C", down("C"), retries0),
		policy("D", down("D"), retries0),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Chat(context.Background(), "A", req())
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != CodeModelUnavailable {
		t.Fatalf("every group down: %v", err)
	}
	if got := strings.Join(order, ","); got != "A,B,C,D" {
		t.Fatalf("tried %s, want A,B,C,D", got)
	}
}

// Throttling that names itself a rate limit, without Retry-After, is retried in-group and
// then fallen back; only a 429 that is neither throttling nor carries Retry-After is the
// final spend limit.
func TestRateLimitWithoutRetryAfterIsNotASpendLimit(t *testing.T) {
	throttled := &script{answer: func(int) (*Response, error) {
		return nil, &ProviderError{Status: 429, Code: "ThrottlingException", RateLimited: true}
	}}
	spare := &script{answer: ok("spare")}
	r, _ := New([]Policy{policy("p", throttled, func(p *Policy) { p.Fallbacks = []string{"spare"} }), policy("spare", spare, nil)}, Options{})
	resp, err := r.Chat(context.Background(), "p", req())
	if err != nil || resp.Text() != "spare" || throttled.count() != 3 || spare.count() != 1 {
		t.Fatalf("%v %v: throttled %d calls (want 1 + 2 retries), spare %d", resp, err, throttled.count(), spare.count())
	}
	transient := &script{answer: func(int) (*Response, error) {
		return nil, &ProviderError{Status: 424, Code: "ModelErrorException", Transient: true}
	}}
	r2, _ := New([]Policy{policy("p", transient, func(p *Policy) { p.Fallbacks = []string{"spare"} }), policy("spare", spare, nil)}, Options{})
	if resp, err := r2.Chat(context.Background(), "p", req()); err != nil || resp.Text() != "spare" || transient.count() != 3 {
		t.Fatalf("424 ModelErrorException: %v %v after %d calls", resp, err, transient.count())
	}
}

func TestContextWindowWordings(t *testing.T) {
	for _, m := range []string{
		"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
		"litellm.ContextWindowExceededError: litellm.BadRequestError: prompt too big",
		"input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again",
		"prompt is too long: 201234 tokens > 200000 maximum",
		"Input is too long for requested model.",
		"context_length_exceeded",
	} {
		if !ContextWindowMessage(m) {
			t.Errorf("not recognised as a context-window error: %q", m)
		}
	}
	for _, m := range []string{"Rate limit reached for requests", "Invalid value for 'temperature'", "messages: too many tool results"} {
		if ContextWindowMessage(m) {
			t.Errorf("%q taken for a context-window error", m)
		}
	}
}
