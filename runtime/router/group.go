package router

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// deployment is a target's health: recent failures, cooldown, and the server's retry-after.
type deployment struct {
	Deployment
	metrics   *depMetrics // nil: no metrics
	mu        sync.Mutex
	fails     []time.Time // failures within the window, oldest first
	coolUntil time.Time   // benched until then (allowed_fails exceeded)
	notBefore time.Time   // the server asked us to wait until then (retry-after)
	// What keeps it away: a throttle (rate limit, overload) rather than an outage.
	coolThrottle, waitThrottle bool
}

// fail records a failure at now; it reports whether the deployment went into cooldown.
func (d *deployment) fail(now time.Time, p *Policy, ps pause) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ps.after > 0 {
		if t := now.Add(ps.after); t.After(d.notBefore) {
			d.notBefore, d.waitThrottle = t, ps.throttle
		}
	}
	cut := now.Add(-p.FailWindow)
	i := 0
	for i < len(d.fails) && !d.fails[i].After(cut) {
		i++
	}
	d.fails = append(d.fails[i:], now)
	if b := ps.bench(p.Cooldown); len(d.fails) > p.AllowedFails && b > 0 {
		d.coolUntil, d.coolThrottle = now.Add(b), ps.throttle
		d.fails = d.fails[:0]
		return true
	}
	return false
}

// back is when the deployment may next be called (not after now: at once) and whether a
// throttle, not an outage, keeps it away until then.
func (d *deployment) back(now time.Time) (at time.Time, throttle bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at = now
	if d.coolUntil.After(at) {
		at, throttle = d.coolUntil, d.coolThrottle
	}
	if d.notBefore.After(at) {
		at, throttle = d.notBefore, d.waitThrottle
	}
	return at, throttle
}

// comeback is how long until some group of chain can call again (0: one can now) and
// whether a throttle is what keeps the first one back away (any of them, on a tie). A group
// can call once its token bucket has refilled (its own rate limit: a throttle) and its first
// deployment is back from its bench or retry-after.
func comeback(chain []*group, now time.Time) (time.Duration, bool) {
	first, throttle := time.Duration(-1), false
	for _, g := range chain {
		wait, th := g.back(now)
		if g.bucket != nil {
			if w := g.bucket.wait(now); w > wait {
				wait, th = w, true
			}
		}
		switch {
		case wait <= 0:
			return 0, false
		case first < 0 || wait < first:
			first, throttle = wait, th
		case wait == first:
			throttle = throttle || th
		}
	}
	return max(first, 0), throttle
}

// back is how long until the group's first deployment may be called again and whether a
// throttle keeps that one away.
func (g *group) back(now time.Time) (time.Duration, bool) {
	var first time.Time
	throttle := false
	for _, d := range g.deps {
		at, th := d.back(now)
		switch {
		case first.IsZero() || at.Before(first):
			first, throttle = at, th
		case at.Equal(first):
			throttle = throttle || th
		}
	}
	return first.Sub(now), throttle
}

// readyAt is when the deployment may be called: zero-wait if now, or the time the
// server's retry-after ends; cooling reports a cooldown (never called while it lasts).
func (d *deployment) readyAt(now time.Time) (at time.Time, cooling bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.coolUntil) {
		return d.coolUntil, true
	}
	if now.Before(d.notBefore) {
		return d.notBefore, false
	}
	return now, false
}

// group is a policy at run time.
type group struct {
	p         Policy
	deps      []*deployment
	rr        atomic.Uint32
	sem       chan struct{}    // nil: no cap
	bucket    *tokenBucket     // nil: no budget
	gauge     prometheus.Gauge // in-flight series; nil: no metrics
	fallbacks []*group         // the ordered chain after this group (transitive, deduplicated)
	cwChain   []*group         // context-window fallbacks (and their fallbacks)
}

// pick chooses the next deployment round-robin among those ready now. If none is ready
// but some only wait for a retry-after, it returns the one ready soonest and the wait.
// nil means every deployment is cooling down.
func (g *group) pick(now time.Time) (*deployment, time.Duration) {
	n := len(g.deps)
	start := int(g.rr.Add(1)-1) % n
	var soonest *deployment
	var soonestAt time.Time
	for i := 0; i < n; i++ {
		d := g.deps[(start+i)%n]
		at, cooling := d.readyAt(now)
		if cooling {
			continue
		}
		if !at.After(now) {
			return d, 0
		}
		if soonest == nil || at.Before(soonestAt) {
			soonest, soonestAt = d, at
		}
	}
	if soonest == nil {
		return nil, 0
	}
	return soonest, soonestAt.Sub(now)
}

// acquire takes an in-flight slot and waits for the token bucket, both bounded by ctx.
func (g *group) acquire(ctx context.Context) (func(), error) {
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		default:
			select {
			case g.sem <- struct{}{}:
			case <-ctx.Done():
				return nil, &routeError{codeInFlightCap, "max_in_flight " + strconv.Itoa(g.p.MaxInFlight) + " reached until the deadline"}
			}
		}
	}
	release := func() {
		if g.sem != nil {
			<-g.sem
		}
	}
	if g.bucket != nil {
		wait := g.bucket.wait(time.Now())
		if wait > 0 {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
				release()
				return nil, &routeError{codeTokenBudget, "tokens_per_minute " + strconv.Itoa(g.p.TokensPerMinute) + " spent; refills after the deadline"}
			}
			if err := sleep(ctx, wait); err != nil {
				release()
				return nil, err
			}
		}
	}
	return release, nil
}

// tokenBucket holds up to perMinute tokens and refills continuously; calls are let in
// while it is positive and charged afterwards with the usage the provider reported, so a
// burst can overdraw it and later calls wait for the debt to refill.
type tokenBucket struct {
	mu        sync.Mutex
	perMinute float64
	level     float64
	last      time.Time
}

func newTokenBucket(perMinute int, now time.Time) *tokenBucket {
	return &tokenBucket{perMinute: float64(perMinute), level: float64(perMinute), last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.level += el.Minutes() * b.perMinute
		if b.level > b.perMinute {
			b.level = b.perMinute
		}
		b.last = now
	}
}

// wait is how long until the bucket is positive again (0 = go now).
func (b *tokenBucket) wait(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.level > 0 {
		return 0
	}
	return time.Duration((1-b.level)/b.perMinute*float64(time.Minute)) + time.Millisecond
}

func (b *tokenBucket) charge(now time.Time, tokens int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.level -= float64(tokens)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
