package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/retry"
)

// Provider is one model API. Chat makes exactly one HTTP call (SDK retries off) and
// returns a *ProviderError for an error answer.
type Provider interface {
	// System is the OpenTelemetry gen_ai.provider.name, e.g. "aws.bedrock" or "openai".
	System() string
	Chat(ctx context.Context, model string, req *Request) (*Response, error)
}

// Options tune New.
type Options struct {
	Tracer  trace.TracerProvider // nil: no spans
	Metrics *Metrics             // nil: no metrics
	Rand    func() float64       // full-jitter source; nil = math/rand
}

// Router routes chat calls through policies. It is safe for concurrent use; caps,
// buckets and cooldowns are shared by every caller in the process.
type Router struct {
	groups  map[string]*group
	tracer  trace.Tracer
	tracing bool
	metrics *Metrics
	rand    func() float64
}

// New checks the policies and builds a Router.
func New(policies []Policy, o Options) (*Router, error) {
	r := &Router{groups: map[string]*group{}, metrics: o.Metrics, rand: o.Rand}
	if r.rand == nil {
		r.rand = rand.Float64
	}
	if o.Tracer != nil {
		r.tracer, r.tracing = o.Tracer.Tracer("github.com/fleetc/fleetc/runtime/router"), true
	}
	now := time.Now()
	for _, p := range policies {
		if _, dup := r.groups[p.Name]; dup {
			return nil, fmt.Errorf("model policy %q defined twice", p.Name)
		}
		if len(p.Deployments) == 0 {
			return nil, fmt.Errorf("model policy %q has no targets", p.Name)
		}
		if p.FailWindow <= 0 {
			p.FailWindow = time.Minute
		}
		if p.BackoffBase <= 0 {
			p.BackoffBase = 100 * time.Millisecond
		}
		if p.BackoffCap <= 0 {
			p.BackoffCap = 2 * time.Second
		}
		g := &group{p: p, gauge: r.metrics.forPolicy(p.Name)}
		for _, d := range p.Deployments {
			if d.Provider == nil {
				return nil, fmt.Errorf("model policy %q target %q has no provider", p.Name, d.Name)
			}
			g.deps = append(g.deps, &deployment{Deployment: d, metrics: r.metrics.forDeployment(p.Name, d.Name)})
		}
		if p.MaxInFlight > 0 {
			g.sem = make(chan struct{}, p.MaxInFlight)
		}
		if p.TokensPerMinute > 0 {
			g.bucket = newTokenBucket(p.TokensPerMinute, now)
		}
		r.groups[p.Name] = g
	}
	for _, g := range r.groups {
		var err error
		if g.fallbacks, err = r.chain(g, g.p.Fallbacks); err != nil {
			return nil, err
		}
		if g.cwChain, err = r.chain(g, g.p.ContextWindowFallbacks); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// chain resolves names depth-first: each fallback, then its own fallbacks; never the
// starting group, never twice.
func (r *Router) chain(start *group, names []string) ([]*group, error) {
	seen := map[*group]bool{start: true}
	var out []*group
	var walk func(names []string) error
	walk = func(names []string) error {
		for _, n := range names {
			g, ok := r.groups[n]
			if !ok {
				return fmt.Errorf("model policy %q: fallback %q is not defined", start.p.Name, n)
			}
			if seen[g] {
				continue
			}
			seen[g] = true
			out = append(out, g)
			if err := walk(g.p.Fallbacks); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(names)
}

// Has reports whether policy is defined.
func (r *Router) Has(policy string) bool { _, ok := r.groups[policy]; return ok }

// Chat routes req through policy: in-group attempts, then the fallback chain. ctx's
// deadline (the step's) bounds every attempt and every wait. The error is a
// *retry.Error: SpendLimit, ContextWindowExceeded and ModelRequestRejected are final,
// ModelUnavailable is retryable by the queue.
func (r *Router) Chat(ctx context.Context, policy string, req *Request) (*Response, error) {
	return r.chat(ctx, policy, req, nil)
}

// chat is Chat, or ChatStream when st is set.
func (r *Router) chat(ctx context.Context, policy string, req *Request, st *streamState) (*Response, error) {
	g := r.groups[policy]
	if g == nil {
		return nil, &retry.Error{Code: CodeUnknownPolicy, Message: fmt.Sprintf("model policy %q is not configured", policy)}
	}
	resp, err := r.route(ctx, g, append([]*group{g}, g.fallbacks...), req, st)
	if err == nil {
		return resp, nil
	}
	var re *retry.Error
	if errors.As(err, &re) && re.Code == CodeContextWindow && len(g.cwChain) > 0 {
		r.metrics.fallback(g.p.Name, g.cwChain[0].p.Name, "context_window")
		return r.route(ctx, g, g.cwChain, req, st)
	}
	return nil, err
}

func (r *Router) route(ctx context.Context, origin *group, chain []*group, req *Request, st *streamState) (*Response, error) {
	var last error
	lastClass := classRetryable
	started := time.Now()
	for i, g := range chain {
		if i > 0 {
			r.metrics.fallback(origin.p.Name, g.p.Name, "failure")
		}
		resp, c, err := r.tryGroup(ctx, g, req, st)
		if err == nil {
			return resp, nil
		}
		if st != nil && st.committed {
			return nil, midStreamError(err, g.p.Name, started)
		}
		switch c {
		case classSpendLimit, classContextWindow, classPermanent:
			return nil, stepError(c, err, g.p.Name)
		}
		last, lastClass = err, c
		if ctx.Err() != nil {
			return nil, &retry.Error{Code: CodeStepDeadline, Retryable: true, Err: ctx.Err(),
				Message: fmt.Sprintf("step deadline reached while routing policy %s (last: %v)", origin.p.Name, last)}
		}
	}
	return nil, exhausted(chain, lastClass, last, origin.p.Name, time.Now())
}

// tryGroup makes up to 1+Retries attempts inside g.
func (r *Router) tryGroup(ctx context.Context, g *group, req *Request, st *streamState) (*Response, class, error) {
	var last error
	lastClass := classRetryable
	tm := timingOf(ctx)
	for attempt := 0; attempt <= g.p.Retries; attempt++ {
		if attempt > 0 {
			// Full jitter between in-group attempts, never past the deadline.
			d := time.Duration(r.rand() * float64(min(g.p.BackoffCap, g.p.BackoffBase<<min(attempt-1, 30))))
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
				return nil, lastClass, last
			}
			waited := time.Now()
			err := sleep(ctx, d)
			tm.backoff(waited)
			if err != nil {
				return nil, classTimeout, err
			}
		}
		var queued time.Time
		if tm != nil {
			queued = time.Now()
		}
		release, err := g.acquire(ctx)
		tm.queued(queued)
		if err != nil {
			return nil, classRetryable, err
		}
		d, wait := g.pick(time.Now())
		if d == nil {
			release()
			return nil, classRetryable, &routeError{codeNoHealthy, "every target of " + g.p.Name + " is cooling down"}
		}
		if wait > 0 { // honour the server's retry-after
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
				release()
				if last == nil {
					last = &routeError{codeRetryAfterTooLong, d.Name + " asked to wait " + wait.String()}
				}
				return nil, lastClass, last
			}
			waited := time.Now()
			err := sleep(ctx, wait)
			tm.backoff(waited)
			if err != nil {
				release()
				return nil, classTimeout, err
			}
			if _, cooling := d.readyAt(time.Now()); cooling {
				release()
				continue
			}
		}
		resp, c, err := r.call(ctx, g, d, req, st)
		release()
		if err == nil {
			return resp, 0, nil
		}
		last, lastClass = err, c
		if !c.countsAgainst() || ctx.Err() != nil || (st != nil && st.committed) {
			return nil, c, err
		}
	}
	return nil, lastClass, last
}

// call is one attempt against one deployment, with its span and metrics.
func (r *Router) call(ctx context.Context, g *group, d *deployment, req *Request, st *streamState) (*Response, class, error) {
	cctx, cancel := context.WithTimeout(ctx, g.p.Timeout)
	defer cancel()
	cctx, span := r.startSpan(cctx, g, d, req)
	start := time.Now()
	if g.gauge != nil {
		g.gauge.Inc()
	}
	var resp *Response
	var err error
	if st != nil {
		resp, err = st.stream(cctx, g.p.Name, d, req)
	} else {
		resp, err = d.Provider.Chat(cctx, d.Model, req)
	}
	if g.gauge != nil {
		g.gauge.Dec()
	}
	now := time.Now()
	if tm := timingOf(ctx); tm != nil {
		tm.Upstream += now.Sub(start)
	}
	if err == nil {
		if g.bucket != nil {
			g.bucket.charge(now, resp.Usage.Total())
		}
		resp.Policy, resp.Deployment = g.p.Name, d.Name
		d.metrics.success(now.Sub(start), resp.Usage)
		endSpan(span, resp, "", nil)
		return resp, 0, nil
	}
	c := classify(err, cctx)
	cooled := false
	var gone *callerGone
	if c.countsAgainst() && ctx.Err() == nil && !errors.As(err, &gone) {
		cooled = d.fail(now, &g.p, pauseOf(err))
	}
	r.metrics.failure(g.p.Name, d.Name, c.String(), now.Sub(start), cooled)
	endSpan(span, nil, c.String(), err)
	return nil, c, err
}
