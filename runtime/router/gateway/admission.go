package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/transport"
)

// Admission control. Each policy admits at most its max_in_flight plus a bounded number
// of waiting requests; past that a request is answered at once with a 429 instead of
// queueing without end (at 5× the sustainable rate an unbounded queue grew the process to
// 0.9 GB and its latency to 20 s). The retry-after it carries is the router's own
// (the policy's chain cooling down or out of tokens) or the time the requests ahead need
// at the service time measured so far; none before anything was measured.

// DefaultWaitingPerSlot sizes a policy's waiting room when not configured: this many
// waiting requests per max_in_flight slot, so an admitted request waits at most about
// this many service times for capacity.
const DefaultWaitingPerSlot = 2

// admission is the router behind the gateway's admission control: the handlers call it
// as they would the router.
type admission struct {
	r     *router.Router
	gates map[string]*gate
}

// gate is one policy's admission bound and what it measured.
type gate struct {
	slots, waiting int          // in flight (max_in_flight, or the uncapped pool size) and waiting room
	in             atomic.Int64 // admitted and not yet answered
	service        atomic.Int64 // moving average of the time an admitted request held capacity, ns
	series         *series      // nil: no metrics
}

func newAdmission(r *router.Router, maxWaiting int, m *Metrics) *admission {
	a := &admission{r: r, gates: map[string]*gate{}}
	for _, p := range r.Policies() {
		slots, waiting := r.MaxInFlight(p), maxWaiting
		switch {
		case slots <= 0:
			// Uncapped: the router takes every call at once (nothing waits), and the upstream
			// pool keeps this many connections; past it a call opens a new one.
			slots = transport.DefaultIdle
			waiting = max(waiting, 0)
		case waiting <= 0:
			waiting = DefaultWaitingPerSlot * slots
		}
		a.gates[p] = &gate{slots: slots, waiting: waiting, series: m.forPolicy(p)}
	}
	return a
}

// overloaded is a request refused by admission control: a 429 (errors.go).
type overloaded struct {
	policy         string
	slots, waiting int
	retryAfter     time.Duration // 0: no estimate yet
}

func (o *overloaded) Error() string {
	msg := fmt.Sprintf("model gateway overloaded: policy %s has %d requests in flight and %d waiting, its bound", o.policy, o.slots, o.waiting)
	if o.retryAfter > 0 {
		msg += "; capacity expected in " + o.retryAfter.Round(time.Millisecond).String()
	}
	return msg
}

// Has reports whether policy is defined.
func (a *admission) Has(policy string) bool { return a.r.Has(policy) }

// Chat is router.Chat behind the policy's admission bound.
func (a *admission) Chat(ctx context.Context, policy string, req *router.Request) (*router.Response, error) {
	g, c, err := a.admit(ctx, policy)
	if err != nil {
		return nil, err
	}
	defer a.leave(g, c)
	return a.r.Chat(ctx, policy, req)
}

// ChatStream is router.ChatStream behind the policy's admission bound.
func (a *admission) ChatStream(ctx context.Context, policy string, req *router.Request, emit func(router.StreamEvent) error) (*router.Response, error) {
	g, c, err := a.admit(ctx, policy)
	if err != nil {
		return nil, err
	}
	defer a.leave(g, c)
	return a.r.ChatStream(ctx, policy, req, emit)
}

// admit takes a place under policy's bound, or refuses at once. An unknown policy passes
// (the router answers it). c is the request's bookkeeping (nil outside ServeHTTP).
func (a *admission) admit(ctx context.Context, policy string) (*gate, *call, error) {
	c := callOf(ctx)
	if c != nil {
		c.policy = policy
	}
	g := a.gates[policy]
	if g == nil {
		return nil, c, nil
	}
	if g.in.Add(1) > int64(g.slots+g.waiting) {
		g.in.Add(-1)
		return nil, c, &overloaded{policy: policy, slots: g.slots, waiting: g.waiting, retryAfter: a.retryAfter(g, policy)}
	}
	if g.series != nil {
		g.series.admitted.Inc()
	}
	if c != nil {
		c.admitted = true
		c.admittedAt = time.Now()
	}
	return g, c, nil
}

// leave gives the place back and folds the time the request held capacity (not counting
// its wait for it) into the gate's service time.
func (a *admission) leave(g *gate, c *call) {
	if g == nil {
		return
	}
	g.in.Add(-1)
	if g.series != nil {
		g.series.admitted.Dec()
	}
	if c == nil {
		return
	}
	held := int64(time.Since(c.admittedAt) - c.Queued)
	// An exponentially weighted average over about the last 16 calls; a lost update
	// under contention only drops one sample.
	if old := g.service.Load(); old == 0 {
		g.service.Store(held)
	} else {
		g.service.Store(old + (held-old)/16)
	}
}

// retryAfter is when a refused request may expect room: the router's own comeback when
// the policy's chain is away (cooldown, retry-after, token bucket), else the time the
// waiting requests need to be served, slots at a time, at the measured service time; 0
// when neither is known.
func (a *admission) retryAfter(g *gate, policy string) time.Duration {
	wait, _ := a.r.Comeback(policy)
	if s := time.Duration(g.service.Load()); s > 0 {
		wait = max(wait, s*time.Duration(max(1, g.waiting/g.slots)))
	}
	return wait
}
