// Package simulate predicts a fleet's behaviour under traffic and faults before it runs: a
// deterministic discrete-event simulation of every class's queue, workers and model policy,
// with the worker's fault handling (docs/faults.md). One event heap drives it; a seed fixes
// every random draw, so the same fleet, scenario and seed give the same bytes.
package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/keda"
	rcfg "github.com/fleetc/fleetc/compiler/runtimeconfig"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/retry"
)

// Scaling delays the simulation assumes; the spec states none of them.
const (
	// KEDAPodStart is how long a pod KEDA asks for takes to be ready to receive (image on the
	// node). KEDA itself reads the queue every keda.PollingInterval seconds.
	KEDAPodStart = 20 * time.Second
	// LambdaScaleInterval is how often an event source mapping (and AgentCore) adds
	// concurrency toward the backlog, and LambdaScaleUpDelay how long new concurrency takes
	// to start polling.
	LambdaScaleInterval = 10 * time.Second
	LambdaScaleUpDelay  = 5 * time.Second
	// ThrottleRetryAfter is the retry-after a throttled call waits when its policy has no
	// cooldown to wait out.
	ThrottleRetryAfter = 5 * time.Second
	// WarmupFraction of the run is left out of mean_in_flight: the fleet starts empty.
	WarmupFraction = 0.1
	// SeriesPoints is about how many samples each class's series holds.
	SeriesPoints = 360
	// MaxSteps bounds the steps one run may simulate (about half a minute of CPU): past it
	// the run is refused rather than left to exhaust the machine.
	MaxSteps = 20_000_000
)

// Options are one simulation's knobs.
type Options struct {
	Duration time.Duration
	Seed     uint64
	Scenario *Scenario // nil: no faults, the spec's traffic
}

// The events of the heap.
type evKind uint8

const (
	evArrive     evKind = iota // a class's next arrival (or a re-draw at a rate change)
	evBurst                    // one step of a scenario's burst arrives
	evDone                     // a running attempt finished its step
	evTimeout                  // a running attempt reached the end of its step window
	evRetry                    // an in-process wait (backoff, throttle) is over
	evVisible                  // a released message's delay is over
	evCapTimeout               // the window of a message waiting for a model slot closed
	evScale                    // a class's scaler reads its queue
	evScaleTo                  // replicas asked for earlier are ready
	evSample                   // record every class's series point
	evFaultEnd                 // a fault stopped: see whether classes have drained
)

type event struct {
	t    float64
	seq  uint64
	m    *msg
	cls  int32
	n    int32
	gen  uint32
	kind evKind
}

// msg is one step message on its class's queue.
type msg struct {
	c         *class
	arrived   float64
	windowEnd float64
	byDL      bool // the run's deadline, not step.max, closes this receive's window
	receives  int
	failures  int // in this receive
	gen       uint32
	held      bool    // a worker holds it (this receive)
	pol       *policy // the policy whose slot it holds or waits for
	capWait   bool
	done      bool
	key       int     // fairness key (a tenant of fairness.cardinality); -1: none, never capped
	deferrals int     // times the per-key cap re-sent it (no receive spent)
	claimedAt float64 // when its last receive started
	doneAt    float64 // when it completed
}

// policy is a model policy's shared state: calls in flight against max_in_flight, the
// cooldown a throttle put it in, and the steps waiting for a slot.
type policy struct {
	m         *ir.Model
	inFlight  int
	coolUntil float64
	waiters   []*msg
	price     capacity.ModelPrice // fleetc capacity's price of its tokens (capacity.PriceOf)
	priced    bool
}

// class is one agent class's queue, workers and counters.
type class struct {
	a          *ir.Agent
	idx        int
	rate       float64
	capIn      float64 // capacity's in-flight figure (Little's law)
	dist       stepDist
	window     float64
	deadline   float64
	retryLimit int
	chain      []*policy // the class's model policy, then its fallbacks (depth first, each once)

	replicas, asked int
	perReplica      int
	lastScaleUp     float64
	scaleEvery      float64
	scaleDelay      float64

	visible     []*msg // FIFO; head is visible[vhead]
	vhead       int
	delayed     int
	held        int    // claimed by a worker: running or waiting in process
	waiting     int    // held but not running (backoff, throttle, model slot)
	dispatching bool   // inside dispatch: a claim that ends at once does not re-enter it
	live        []*msg // every message not yet deleted, in arrival order, from lhead
	lhead       int

	arrived, completed, dead int
	peakBacklog              int
	latencies                []float64
	area, lastT              float64
	drainAt                  float64
	drained                  bool
	deadReasons              map[string]int
	series                   []Point
	lastFinish               float64 // when a step was last deleted (done or dead-lettered)
	tokens                   int64   // model tokens of the completed steps
	costUSD                  float64 // and what they cost at the serving policy's price
	costed                   bool    // a completed step was priced
	faultEnd                 float64 // when the last fault acting on the class stops

	// fairness: the class's per-key cap (nil: none), steps running per key, and when each
	// key's last deferred copy comes back (runtime/queue/fair.go's schedule).
	fair      *ir.Fairness
	perKey    map[int]int
	nextDefer map[int]float64
}

func (c *class) backlog() int { return len(c.visible) - c.vhead + c.delayed }

// oldestWaiting is the oldest message in the queue that no worker holds (nil: none). The
// live list is in arrival order; the messages before that one are held or finished, and the
// finished ones are dropped (the held ones shift right, keeping their order), so each sample
// walks about the held messages, not the whole queue.
func (c *class) oldestWaiting() *msg {
	k := c.lhead
	for k < len(c.live) && (c.live[k].done || c.live[k].held) {
		k++
	}
	var oldest *msg
	if k < len(c.live) {
		oldest = c.live[k]
	}
	w := k
	for i := k - 1; i >= c.lhead; i-- {
		if m := c.live[i]; !m.done {
			w--
			c.live[w] = m
		}
	}
	clear(c.live[c.lhead:w])
	c.lhead = w
	if c.lhead > 1024 && c.lhead*2 > len(c.live) {
		c.live = append(c.live[:0], c.live[c.lhead:]...)
		c.lhead = 0
	}
	return oldest
}

func (c *class) slots() int { return c.replicas * c.perReplica }

// sim is one run.
type sim struct {
	now      float64
	end      float64
	warm     float64
	seq      uint64
	heap     []event
	rng      *rand.Rand
	backoff  retry.Policy // the worker's retry delays, drawing from the run's seeded source
	classes  []*class
	faults   []Fault
	bounds   []float64 // spike starts and ends, sorted: where arrival rates change
	faultEnd float64
	scenario *Scenario
	diags    []string
}

// Run simulates f for the options' duration.
func Run(f *ir.Fleet, o Options) (*Result, error) {
	if o.Duration <= 0 {
		return nil, fmt.Errorf("the duration must be above 0")
	}
	sc := o.Scenario
	if sc == nil {
		sc = &Scenario{}
	}
	t := sc.Traffic.Apply(capacity.FromFleet(f))
	// Bursts alone are traffic enough: a scenario may state steps rather than a rate.
	steady := t.ConversationsPerMinute != 0 && t.StepsPerConversation != 0
	if !steady && sc.bursts() == 0 {
		return nil, fmt.Errorf("no traffic to simulate: state traffic.conversations_per_minute and traffic.steps_per_conversation in the spec or under the scenario's traffic key, or a burst fault")
	}
	if !steady {
		t.ConversationsPerMinute, t.StepsPerConversation = 0, 0
	} else if p := capacity.Problems(t); len(p) > 0 {
		return nil, fmt.Errorf("traffic: %s", p[0])
	}
	if n := expectedSteps(t, sc, o.Duration); n > MaxSteps {
		return nil, fmt.Errorf("the run would simulate about %.0f steps, more than %d: shorten --duration or lower the traffic", n, MaxSteps)
	}
	s := &sim{
		end: o.Duration.Seconds(), rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		faults: sc.Faults, faultEnd: sc.lastFaultEnd().Seconds(), scenario: sc,
	}
	s.warm = s.end * WarmupFraction
	s.backoff = retry.Policy{
		Base: time.Duration(rcfg.RetryBaseMS) * time.Millisecond,
		Cap:  time.Duration(rcfg.RetryCapMS) * time.Millisecond,
		Rand: s.rng.Float64,
	}
	s.build(f, capacity.New(f, t))
	s.start()
	s.loop()
	return s.result(o), nil
}

// chain is a policy and its fallbacks in the order the router tries them, each once.
func chain(m *ir.Model, pols map[*ir.Model]*policy) []*policy {
	var out []*policy
	seen := map[*ir.Model]bool{}
	var walk func(*ir.Model)
	walk = func(m *ir.Model) {
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		out = append(out, pols[m])
		for _, f := range m.Fallbacks {
			walk(f)
		}
	}
	walk(m)
	return out
}

// expectedSteps bounds the arrivals of a run from above: every spike taken as lasting all
// of it.
func expectedSteps(t capacity.Traffic, sc *Scenario, d time.Duration) float64 {
	n := t.ConversationsPerMinute * t.StepsPerConversation / 60 * d.Seconds()
	for _, f := range sc.Faults {
		if f.Kind == Spike && f.Factor > 1 {
			n *= f.Factor
		}
	}
	return n + float64(sc.bursts())
}

func (s *sim) build(f *ir.Fleet, m *capacity.Model) {
	pols := map[*ir.Model]*policy{}
	for _, mp := range f.Models {
		p := &policy{m: mp}
		p.price, _, p.priced = capacity.PriceOf(mp)
		pols[mp] = p
	}
	for i, a := range f.Agents {
		d, _ := m.StepDuration(a)
		c := &class{
			a: a, idx: i, rate: m.ClassStepsPerSec(a), capIn: m.InFlight(a),
			dist:   fitStep(d.Seconds(), a.StepP95.Seconds(), a.StepMax.Seconds()),
			window: a.StepMax.Seconds(), deadline: a.Deadline.Seconds(), retryLimit: a.RetryLimit(),
			chain: chain(a.Model, pols), replicas: a.Scaling.Min, perReplica: max(1, a.Scaling.PerReplica),
			deadReasons: map[string]int{},
			fair:        a.Fairness, perKey: map[int]int{}, nextDefer: map[int]float64{},
		}
		c.asked = c.replicas
		c.faultEnd = s.scenario.classFaultEnd(a).Seconds()
		if a.Runtime == "eks" {
			c.scaleEvery, c.scaleDelay = float64(keda.PollingInterval), KEDAPodStart.Seconds()
		} else {
			c.scaleEvery, c.scaleDelay = LambdaScaleInterval.Seconds(), LambdaScaleUpDelay.Seconds()
		}
		if c.window <= 0 {
			c.window = math.Inf(1)
		}
		if d > a.StepMax && a.StepMax > 0 {
			s.diags = append(s.diags, fmt.Sprintf("%s: the step duration %s is above step.max %s: steps are drawn up to step.max, so in-flight work is below capacity's", a.Name, d, a.StepMax))
		}
		if need := m.InFlight(a); float64(a.Scaling.Max*c.perReplica) < need {
			s.diags = append(s.diags, fmt.Sprintf("%s: scaling.max × per_replica = %d steps at once, below the %.0f in flight its traffic needs: its backlog grows without bound", a.Name, a.Scaling.Max*c.perReplica, need))
		}
		s.classes = append(s.classes, c)
	}
	for _, ft := range s.faults {
		if ft.Kind == Spike {
			s.bounds = append(s.bounds, ft.At.Seconds(), ft.End().Seconds())
		}
	}
	slices.Sort(s.bounds)
}

func (s *sim) start() {
	for _, c := range s.classes {
		s.nextArrival(c)
		s.push(event{t: 0, kind: evScale, cls: int32(c.idx)})
	}
	for _, ft := range s.faults {
		if ft.Kind == Burst {
			s.burst(ft)
			continue
		}
		s.push(event{t: ft.End().Seconds(), kind: evFaultEnd})
	}
	s.push(event{t: 0, kind: evSample})
}

// burst schedules a burst's steps evenly over its span: step i at at + i × for/count.
func (s *sim) burst(ft Fault) {
	for _, c := range s.classes {
		if c.a.Name != ft.Class {
			continue
		}
		every := ft.For.Seconds() / float64(ft.Count)
		for i := range ft.Count {
			s.push(event{t: ft.At.Seconds() + float64(i)*every, kind: evBurst, cls: int32(c.idx)})
		}
	}
}

// loop runs events in time order until the end.
func (s *sim) loop() {
	for len(s.heap) > 0 {
		e := s.pop()
		if e.t > s.end {
			break
		}
		s.now = e.t
		switch e.kind {
		case evArrive:
			if e.n == 1 {
				s.arrive(s.classes[e.cls])
			}
			s.nextArrival(s.classes[e.cls])
		case evBurst:
			s.arrive(s.classes[e.cls])
		case evDone:
			s.done(e.m)
		case evTimeout:
			s.stopRunning(e.m)
			s.closeWindow(e.m, "the step ran to the end of its window", 0)
		case evRetry:
			e.m.c.waiting--
			s.attempt(e.m.c, e.m)
		case evVisible:
			c := e.m.c
			c.delayed--
			c.visible = append(c.visible, e.m)
			s.dispatch(c)
		case evCapTimeout:
			if e.m.capWait && e.m.gen == e.gen {
				e.m.capWait = false
				e.m.c.waiting--
				s.closeWindow(e.m, "max_in_flight reached until the window closed", 0)
			}
		case evScale:
			s.scale(s.classes[e.cls])
		case evScaleTo:
			c := s.classes[e.cls]
			if int(e.n) > c.replicas {
				c.replicas = int(e.n)
				s.dispatch(c)
			}
		case evSample:
			s.sample()
		case evFaultEnd:
			for _, c := range s.classes {
				s.settle(c)
			}
		}
	}
	s.now = s.end
	for _, c := range s.classes {
		s.account(c)
	}
}

// nextArrival schedules the class's next arrival (Poisson at its rate × any spike).
func (s *sim) nextArrival(c *class) {
	r := c.rate * s.spike(s.now)
	next := math.Inf(1)
	if r > 0 {
		next = s.now + s.rng.ExpFloat64()/r
	}
	// Rates are constant between spike bounds: past the next bound, draw again from there
	// (the exponential forgets, so this is exact).
	i := sort.SearchFloat64s(s.bounds, s.now+1e-9)
	if i < len(s.bounds) && s.bounds[i] < next {
		s.push(event{t: s.bounds[i], kind: evArrive, cls: int32(c.idx), n: 0})
		return
	}
	if next <= s.end {
		s.push(event{t: next, kind: evArrive, cls: int32(c.idx), n: 1})
	}
}

// spike is the arrival multiple at t.
func (s *sim) spike(t float64) float64 {
	x := 1.0
	for _, ft := range s.faults {
		if ft.Kind == Spike && ft.active(t) {
			x *= ft.Factor
		}
	}
	return x
}

// arrive puts one step on the class's queue, from one of the declared tenants when the
// class is fair (equally busy: a burst from one tenant is a test's own sends).
func (s *sim) arrive(c *class) {
	m := &msg{c: c, arrived: s.now, key: -1}
	if c.fair != nil && c.fair.Cardinality > 0 {
		m.key = s.rng.IntN(c.fair.Cardinality)
	}
	c.arrived++
	c.live = append(c.live, m)
	c.visible = append(c.visible, m)
	s.dispatch(c)
}

// dispatch hands visible messages to free worker slots. Receives are immediate: the long
// poll is not modelled.
func (s *sim) dispatch(c *class) {
	if c.dispatching {
		return // a claim that dead-letters at once frees its slot inside this loop
	}
	c.dispatching = true
	for c.vhead < len(c.visible) && c.held < c.slots() {
		m := c.visible[c.vhead]
		c.visible[c.vhead] = nil
		c.vhead++
		if s.overCap(c, m) {
			s.deferMsg(c, m)
			continue
		}
		s.claim(c, m)
	}
	c.dispatching = false
	if c.vhead > 1024 && c.vhead*2 > len(c.visible) {
		c.visible = append(c.visible[:0], c.visible[c.vhead:]...)
		c.vhead = 0
	}
	c.peakBacklog = max(c.peakBacklog, c.backlog())
	s.settle(c)
}

// claim is one receive: the worker holds the message for one step window, step.max from now
// clipped by the run's deadline.
func (s *sim) claim(c *class, m *msg) {
	s.account(c)
	c.held++
	m.held = true
	if m.key >= 0 {
		c.perKey[m.key]++
	}
	m.claimedAt = s.now
	m.receives++
	m.failures = 0
	m.windowEnd, m.byDL = s.now+c.window, false
	if c.deadline > 0 && m.arrived+c.deadline <= m.windowEnd {
		m.windowEnd, m.byDL = m.arrived+c.deadline, true
	}
	if m.windowEnd <= s.now {
		s.closeWindow(m, "the run's deadline passed in the queue", 0)
		return
	}
	s.attempt(c, m)
}

// attempt runs the handler once, unless a fault answers first.
func (s *sim) attempt(c *class, m *msg) {
	for _, ft := range s.faults {
		if ft.Kind == Outage && ft.Class == c.a.Name && ft.active(s.now) {
			// A retryable failure: the worker's own delay, full jitter on the failures so
			// far in this receive.
			wait := s.backoff.Delay(&retry.Error{Retryable: true}, m.failures).Seconds()
			m.failures++
			s.wait(c, m, wait, "the class's target is down (retryable)")
			return
		}
	}
	if len(c.chain) > 0 {
		p := s.route(c)
		if p == nil {
			// Every policy of the chain is cooling down after a 429: wait for the first to
			// come back, plus jitter. A throttle is a delay, not a failure.
			first := c.chain[0]
			for _, q := range c.chain {
				if q.coolUntil < first.coolUntil {
					first = q
				}
			}
			// The router's throttle names the remaining cooldown as its retry-after; the
			// worker's own delay adds its jitter.
			after := time.Duration((first.coolUntil - s.now) * float64(time.Second))
			wait := s.backoff.Delay(&retry.Error{Retryable: true, Throttle: true, RetryAfter: after}, m.failures).Seconds()
			s.wait(c, m, wait, "HTTP429 from policy "+c.chain[0].m.Name)
			return
		}
		m.pol = p
		if p.m.MaxInFlight > 0 && p.inFlight >= p.m.MaxInFlight {
			m.capWait = true
			c.waiting++
			p.waiters = append(p.waiters, m)
			s.push(event{t: m.windowEnd, kind: evCapTimeout, m: m, gen: m.gen})
			return
		}
		p.inFlight++
	}
	if d := c.dist.draw(s.rng); s.now+d <= m.windowEnd {
		s.push(event{t: s.now + d, kind: evDone, m: m})
	} else {
		s.push(event{t: m.windowEnd, kind: evTimeout, m: m})
	}
}

// route is the policy a call goes to: the class's policy, else the first of its fallbacks
// that is not cooling down. A policy under a throttle fault answers 429 and cools down for
// its cooldown; nil when the whole chain is cooling.
func (s *sim) route(c *class) *policy {
	for _, p := range c.chain {
		if ft := s.throttled(p); ft != nil && p.coolUntil <= s.now {
			p.coolUntil = s.now + s.bench(p, ft)
		}
		if p.coolUntil <= s.now {
			return p
		}
	}
	return nil
}

// throttled is the throttle fault active on the policy now (nil: none).
func (s *sim) throttled(p *policy) *Fault {
	for i, ft := range s.faults {
		if ft.Kind == Throttle && ft.Policy == p.m.Name && ft.active(s.now) {
			return &s.faults[i]
		}
	}
	return nil
}

// bench is how long a 429 keeps the policy away, as the router benches a deployment: the
// retry-after the 429 names (never past the fault's end: the provider names its next
// window), else the policy's cooldown, else a typical retry-after.
func (s *sim) bench(p *policy, ft *Fault) float64 {
	switch {
	case ft.RetryAfter > 0:
		return math.Min(ft.RetryAfter.Seconds(), ft.End().Seconds()-s.now)
	case p.m.Cooldown > 0:
		return p.m.Cooldown.Seconds()
	}
	return ThrottleRetryAfter.Seconds()
}

// wait holds the message in process for d, unless that passes the window.
func (s *sim) wait(c *class, m *msg, d float64, cause string) {
	if s.now+d > m.windowEnd {
		s.closeWindow(m, cause, d)
		return
	}
	c.waiting++
	s.push(event{t: s.now + d, kind: evRetry, m: m})
}

// stopRunning ends a running attempt: its model slot goes to the next waiter.
func (s *sim) stopRunning(m *msg) {
	p := m.pol
	if p == nil {
		return
	}
	p.inFlight--
	for len(p.waiters) > 0 && (p.m.MaxInFlight == 0 || p.inFlight < p.m.MaxInFlight) {
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		if !w.capWait {
			continue // its window closed while it waited
		}
		w.capWait = false
		w.gen++
		w.c.waiting--
		s.attempt(w.c, w)
	}
}

// done is a step that finished: the message is deleted.
func (s *sim) done(m *msg) {
	s.stopRunning(m)
	c := m.c
	c.completed++
	m.doneAt = s.now
	c.latencies = append(c.latencies, s.now-m.arrived)
	if p := m.pol; p != nil && c.a.TokensPerStep > 0 {
		out := float64(c.a.OutputTokensPerStep)
		in := float64(c.a.TokensPerStep) - out
		c.tokens += int64(c.a.TokensPerStep)
		if p.priced {
			c.costUSD += (in*p.price.InputPerMTok + out*p.price.OutputPerMTok) / 1e6
			c.costed = true
		}
	}
	s.finish(m)
}

// closeWindow is the end of a receive without success (docs/faults.md, rule 5): the run's
// deadline closing it dead-letters the message (DeadlineExceeded); step.max closing it
// releases it with the pending delay, which spends a receive, and at RetryLimit receives
// dead-letters it (RetriesExhausted).
func (s *sim) closeWindow(m *msg, cause string, pending float64) {
	c := m.c
	switch {
	case m.byDL:
		c.deadReasons["DeadlineExceeded: "+cause]++
		c.dead++
		s.finish(m)
	case m.receives >= c.retryLimit:
		c.deadReasons["RetriesExhausted: "+cause]++
		c.dead++
		s.finish(m)
	default:
		s.account(c)
		c.held--
		m.held = false
		s.unkey(m)
		c.delayed++
		s.push(event{t: s.now + pending, kind: evVisible, m: m})
		s.dispatch(c)
	}
}

// overCap is fleet-worker's per-key cap: each replica runs at most max_in_flight_per_key
// steps of one key (the simulation pools the replicas' caps: it does not place messages on
// replicas).
func (s *sim) overCap(c *class, m *msg) bool {
	return c.fair != nil && m.key >= 0 && c.perKey[m.key] >= c.fair.MaxInFlight*max(1, c.replicas)
}

// deferMsg is the worker's deferral: the message goes back to the queue as a copy delayed by
// the key's schedule (queue.DeferSchedule with one step of step.p95), and spends no receive.
func (s *sim) deferMsg(c *class, m *msg) {
	prev := time.Duration((c.nextDefer[m.key] - s.now) * float64(time.Second))
	next, delay := queue.DeferSchedule(prev, c.a.StepP95, c.fair.MaxInFlight)
	c.nextDefer[m.key] = s.now + next.Seconds()
	m.deferrals++
	c.delayed++
	s.push(event{t: s.now + delay.Seconds(), kind: evVisible, m: m})
}

// unkey ends a held message's step for its key's cap (called where a receive ends).
func (s *sim) unkey(m *msg) {
	if m.key >= 0 {
		m.c.perKey[m.key]--
	}
}

// finish frees the worker slot of a message that is deleted (done or dead-lettered).
func (s *sim) finish(m *msg) {
	c := m.c
	m.done, m.held = true, false
	c.lastFinish = s.now
	s.unkey(m)
	s.account(c)
	c.held--
	s.dispatch(c)
}

// account adds the in-flight area since the last change, after the warm-up.
func (s *sim) account(c *class) {
	from := max(c.lastT, s.warm)
	if s.now > from {
		c.area += float64(c.held) * (s.now - from)
	}
	c.lastT = s.now
}

// settle records when the class drains after the last fault: nothing in its queue and
// nothing held waiting.
func (s *sim) settle(c *class) {
	if !c.drained && s.now >= s.faultEnd && c.backlog() == 0 && c.waiting == 0 {
		c.drained, c.drainAt = true, s.now
	}
}

// scale is one read of the queue by the class's scaler: KEDA (eks) asks for
// ceil(messages / per_replica) replicas within scaling's bounds, counting in-flight messages
// unless scale_on_in_flight is off; Lambda and AgentCore the same in units of concurrency.
// Scale-up takes the start-up delay; scale-down waits out scaling.cooldown since the last
// scale-up, and running steps finish.
func (s *sim) scale(c *class) {
	sc := c.a.Scaling
	demand := len(c.visible) - c.vhead
	if sc.ScaleOnInFlight {
		demand += c.held
	}
	want := (demand + c.perReplica - 1) / c.perReplica
	if c.replicas == 0 && demand < sc.Activation {
		want = 0
	}
	want = min(max(want, sc.Min), sc.Max)
	switch {
	case want > c.asked:
		c.asked, c.lastScaleUp = want, s.now
		s.push(event{t: s.now + c.scaleDelay, kind: evScaleTo, cls: int32(c.idx), n: int32(want)})
	case want < c.replicas && s.now-c.lastScaleUp >= sc.Cooldown.Seconds():
		c.replicas, c.asked = want, want
	}
	s.push(event{t: s.now + c.scaleEvery, kind: evScale, cls: int32(c.idx)})
}

// sampleEvery is the series interval: about SeriesPoints points, in whole seconds.
func (s *sim) sampleEvery() float64 { return math.Max(1, math.Ceil(s.end/SeriesPoints)) }

func (s *sim) sample() {
	for _, c := range s.classes {
		age := 0.0
		if m := c.oldestWaiting(); m != nil {
			age = s.now - m.arrived
		}
		c.series = append(c.series, Point{
			T: s.now, Backlog: c.backlog(), InFlight: c.held, OldestAgeSeconds: round(age),
			Completed: c.completed, DeadLettered: c.dead, Replicas: c.replicas,
		})
	}
	s.push(event{t: s.now + s.sampleEvery(), kind: evSample})
}

// The event heap, ordered by time then by the order events were pushed.
func (s *sim) push(e event) {
	s.seq++
	e.seq = s.seq
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&s.heap[i], &s.heap[p]) {
			break
		}
		s.heap[i], s.heap[p] = s.heap[p], s.heap[i]
		i = p
	}
}

func (s *sim) pop() event {
	h := s.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			j = r
		}
		if !less(&h[j], &h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	s.heap = h
	return top
}

func less(a, b *event) bool { return a.t < b.t || a.t == b.t && a.seq < b.seq }

// sortedKeys is a map's keys in order, for messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
