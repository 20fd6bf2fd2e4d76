package router

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A provider error without a status is a call that got no answer: the transport's own error
// is the message, and it is a timeout only when the call's own deadline fired, else a
// retryable failure (a refused connection is not a slow model).
func TestNoAnswerErrors(t *testing.T) {
	refused := &ProviderError{Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	if got := refused.Error(); got != "dial tcp 127.0.0.1:1: connect: connection refused" {
		t.Errorf("no-answer message %q", got)
	}
	answered := &ProviderError{Status: 503, Code: "Unavailable", Message: "busy", Err: errors.New("transport detail")}
	if got := answered.Error(); got != "status 503 Unavailable: busy" {
		t.Errorf("answered message %q", got)
	}

	live := context.Background()
	if c := classify(refused, live); c != classRetryable {
		t.Errorf("refused with time left: class %d, want retryable", c)
	}
	expired, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-expired.Done()
	if c := classify(refused, expired); c != classTimeout {
		t.Errorf("no answer after the call's deadline: class %d, want timeout", c)
	}
	busy := &ProviderError{Status: 503, RetryAfter: 2 * time.Second, HasRetryAfter: true, Throttle: true}
	if c, p := classify(busy, live), pauseOf(busy); c != classRetryable || p != (pause{after: 2 * time.Second, named: true, throttle: true}) {
		t.Errorf("503 with retry-after: class %d, pause %+v", c, p)
	}
	// An error that is no provider answer at all (a stream cut, a caller's own error): a
	// timeout when the call's deadline fired or it says the deadline passed, else retryable.
	cut := errors.New("unexpected EOF")
	if c := classify(cut, expired); c != classTimeout {
		t.Errorf("a plain error after the call's deadline: class %d, want timeout", c)
	}
	if c := classify(context.DeadlineExceeded, live); c != classTimeout {
		t.Errorf("a deadline error with the call's context still live: class %d, want timeout", c)
	}
	if c := classify(cut, live); c != classRetryable {
		t.Errorf("a plain error with time left: class %d, want retryable", c)
	}
}

// pick goes round-robin past a cooling deployment, and when every ready one only waits for a
// retry-after it returns the soonest with the wait; all cooling is nil.
func TestPickSkipsCoolingAndWaitsForTheSoonest(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a := &deployment{Deployment: Deployment{Name: "a"}, coolUntil: now.Add(time.Minute)}
	b := &deployment{Deployment: Deployment{Name: "b"}}
	g := &group{deps: []*deployment{a, b}}
	for i := range 3 { // every start position of the round robin
		if d, wait := g.pick(now); d != b || wait != 0 {
			t.Fatalf("pick %d: %v after %s, want b at once", i, d, wait)
		}
	}
	b.notBefore = now.Add(3 * time.Second)
	c := &deployment{Deployment: Deployment{Name: "c"}, notBefore: now.Add(time.Second)}
	g = &group{deps: []*deployment{a, b, c}}
	for i := range 3 {
		if d, wait := g.pick(now); d != c || wait != time.Second {
			t.Fatalf("pick %d: %v after %s, want c after 1s", i, d, wait)
		}
	}
	b.coolUntil, c.coolUntil = now.Add(time.Minute), now.Add(time.Minute)
	if d, _ := g.pick(now); d != nil {
		t.Fatalf("all cooling: picked %s", d.Name)
	}
}

// An overdrawn token bucket makes a call wait for the refill; only a deadline that ends
// before the refill refuses it at once (without a deadline the call waits).
func TestTokenBucketWaitsUnlessTheDeadlineIsSooner(t *testing.T) {
	g := &group{p: Policy{TokensPerMinute: 60_000}, bucket: newTokenBucket(60_000, time.Now())}
	g.bucket.charge(time.Now(), 60_000+50) // 50 tokens of debt: refilled in ~50 ms
	release, err := g.acquire(context.Background())
	if err != nil {
		t.Fatalf("no deadline: %v, want a wait for the refill", err)
	}
	release()
	g.bucket.charge(time.Now(), 60_000+50_000) // ~50 s of debt
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	if _, err := g.acquire(ctx); err == nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("deadline before the refill: %v after %s, want a refusal at once", err, time.Since(start))
	}
}

// A call is let in while the bucket holds any token at all; at zero or in debt it waits until
// one whole token has refilled (plus a millisecond), at the policy's rate.
func TestTokenBucketWait(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name  string
		spent int // of 60 per minute, one token a second
		want  time.Duration
	}{
		{"full", 0, 0},
		{"one token left", 59, 0},
		{"empty", 60, time.Second + time.Millisecond},
		{"nine tokens of debt", 69, 10*time.Second + time.Millisecond},
	} {
		b := newTokenBucket(60, t0)
		b.charge(t0, c.spent)
		if got := b.wait(t0); got != c.want {
			t.Errorf("%s: wait %s, want %s", c.name, got, c.want)
		}
	}
	// Half a token is a token: the call goes now.
	b := newTokenBucket(60, t0)
	b.charge(t0, 60)
	if got := b.wait(t0.Add(500 * time.Millisecond)); got != 0 {
		t.Errorf("half a token refilled: wait %s, want 0", got)
	}
}

// comeback is the wait until the first deployment of any group of the chain is back, and the
// reason that one is away: the soonest decides, a tie is a throttle if any is, one deployment
// ready now means no wait, and a group's spent token bucket holds it back as a throttle.
func TestComebackIsTheFirstDeploymentBack(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	dep := func(coolFor time.Duration, coolThrottle bool, waitFor time.Duration, waitThrottle bool) *deployment {
		return &deployment{coolUntil: now.Add(coolFor), coolThrottle: coolThrottle, notBefore: now.Add(waitFor), waitThrottle: waitThrottle}
	}
	outage5 := dep(5*time.Second, false, 0, false)
	throttled2 := dep(2*time.Second, true, 0, false)
	// Benched 1 s for an outage but its server asked for 3 s as a throttle: the later wins.
	waits3 := dep(time.Second, false, 3*time.Second, true)
	outage2 := dep(0, false, 2*time.Second, false)
	ready := dep(-time.Second, true, -time.Second, true)
	for _, c := range []struct {
		name     string
		groups   [][]*deployment
		wait     time.Duration
		throttle bool
	}{
		{"the soonest in a group decides", [][]*deployment{{outage5, throttled2}}, 2 * time.Second, true},
		{"the soonest across groups decides", [][]*deployment{{outage5}, {waits3}}, 3 * time.Second, true},
		{"an outage back first is an outage", [][]*deployment{{waits3}, {outage2}}, 2 * time.Second, false},
		{"a tie is a throttle", [][]*deployment{{outage2, throttled2}}, 2 * time.Second, true},
		{"one ready now: no wait", [][]*deployment{{outage5}, {throttled2, ready}}, 0, false},
	} {
		var chain []*group
		for _, deps := range c.groups {
			chain = append(chain, &group{deps: deps})
		}
		if wait, th := comeback(chain, now); wait != c.wait || th != c.throttle {
			t.Errorf("%s: %s throttle %v, want %s throttle %v", c.name, wait, th, c.wait, c.throttle)
		}
	}
	// A group whose deployment is ready but whose bucket is 9 tokens in debt (60 a minute)
	// can call in 10 s, a throttle: sooner than an outage of 5 s it is not; later than it, yes.
	spent := &group{deps: []*deployment{ready}, bucket: newTokenBucket(60, now)}
	spent.bucket.charge(now, 69)
	if wait, th := comeback([]*group{spent, {deps: []*deployment{outage5}}}, now); wait != 5*time.Second || th {
		t.Errorf("spent bucket behind a 5 s outage: %s throttle %v", wait, th)
	}
	if wait, th := comeback([]*group{spent}, now); wait != 10*time.Second+time.Millisecond || !th {
		t.Errorf("spent bucket: %s throttle %v, want 10.001s throttle", wait, th)
	}
}

// The bench after allowed_fails: a throttle that named its retry-after is benched for it,
// shorter or longer than the cooldown; anything else for the cooldown; no cooldown, no bench.
func TestBenchIsTheThrottlesRetryAfter(t *testing.T) {
	for _, c := range []struct {
		p        pause
		cooldown time.Duration
		want     time.Duration
	}{
		{pause{after: 5 * time.Second, named: true, throttle: true}, time.Minute, 5 * time.Second},
		{pause{after: 2 * time.Minute, named: true, throttle: true}, time.Minute, 2 * time.Minute},
		{pause{throttle: true}, time.Minute, time.Minute},                      // Bedrock ThrottlingException: no retry-after
		{pause{after: 5 * time.Second, named: true}, time.Minute, time.Minute}, // a 500 with a retry-after: an outage
		{pause{after: 5 * time.Second, named: true, throttle: true}, 0, 0},     // benching off
	} {
		if got := c.p.bench(c.cooldown); got != c.want {
			t.Errorf("%+v, cooldown %s: bench %s, want %s", c.p, c.cooldown, got, c.want)
		}
	}
}
