package capacity

import (
	"math"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
)

// Traffic is what the fleet is sized for: the spec's `traffic`, possibly overridden.
type Traffic struct {
	ConversationsPerMinute  float64
	StepsPerConversation    float64
	StepDuration            time.Duration // 0: each class's step.p95
	ConcurrentConversations int           // 0: not stated
	FanOutItems             float64       // items per fan_out run; 0: not stated (1 assumed)
}

// FromFleet is the spec's traffic, or the zero Traffic when the spec states none.
func FromFleet(f *ir.Fleet) Traffic {
	if f.Traffic == nil {
		return Traffic{}
	}
	t := f.Traffic
	return Traffic{
		ConversationsPerMinute:  t.ConversationsPerMinute,
		StepsPerConversation:    t.StepsPerConversation,
		StepDuration:            t.StepDuration,
		ConcurrentConversations: t.ConcurrentConversations,
		FanOutItems:             t.FanOutItems,
	}
}

// Scaled multiplies the arrival side of the traffic (conversations, concurrent
// conversations) by x; durations and the topology stay as they are.
func (t Traffic) Scaled(x float64) Traffic {
	t.ConversationsPerMinute *= x
	t.ConcurrentConversations = int(math.Round(float64(t.ConcurrentConversations) * x))
	return t
}

// Model is the traffic arithmetic for one fleet: every rate is per second unless its name
// says otherwise. Build it once (New) and ask it; it never changes the fleet.
type Model struct {
	Fleet   *ir.Fleet
	Traffic Traffic
	rate    map[*ir.Agent]float64
}

// Of is the model of the fleet's own traffic, as the quota rules read it.
func Of(f *ir.Fleet) *Model { return New(f, FromFleet(f)) }

// New builds the model of f under t.
func New(f *ir.Fleet, t Traffic) *Model {
	m := &Model{Fleet: f, Traffic: t, rate: map[*ir.Agent]float64{}}
	total := m.StepsPerSec()
	if total <= 0 || len(f.Agents) == 0 {
		return m
	}
	// A class with traffic.share takes that fraction of the steps; the rest are split over
	// the other classes by how often a conversation reaches each (Weight).
	shared, weights := 0.0, 0.0
	for _, a := range f.Agents {
		if a.Share > 0 {
			shared += a.Share
		} else {
			weights += m.Weight(a)
		}
	}
	rest := total * math.Max(0, 1-shared)
	for _, a := range f.Agents {
		if a.Share > 0 {
			m.rate[a] = total * a.Share
		} else if weights > 0 {
			m.rate[a] = rest * m.Weight(a) / weights
		}
	}
	return m
}

// FanOutItems is the items one fan_out run of the workflow processes: its items_per_run,
// else traffic.fan_out_items, else 1.
func (m *Model) FanOutItems(w *ir.Workflow) float64 {
	if w != nil && w.ItemsPerRun > 0 {
		return w.ItemsPerRun
	}
	if m.Traffic.FanOutItems > 0 {
		return m.Traffic.FanOutItems
	}
	return defaultFanOutItems
}

// Weight is how many steps of a conversation reach a class, relative to the other classes:
// one per workflow step that dispatches to it (a fan-out step: one per item), plus one when
// an EventBridge rule feeds it. A class reached by nothing counts once.
func (m *Model) Weight(a *ir.Agent) float64 {
	sync, token := m.workflowWeights(a)
	w := sync + token
	if a.Rule != nil {
		w++
	}
	if w == 0 {
		w = 1
	}
	return w
}

// workflowWeights splits the workflow steps that dispatch to a class (Weight's workflow part)
// into synchronous invokes and task-token dispatches through its queue.
func (m *Model) workflowWeights(a *ir.Agent) (sync, token float64) {
	for _, wf := range a.Workflows {
		for _, st := range wf.Steps {
			if st.Agent != a {
				continue
			}
			n := 1.0
			if st.FanOut != nil {
				n = m.FanOutItems(wf)
			}
			if st.Synchronous(wf) {
				sync += n
			} else {
				token += n
			}
		}
	}
	return sync, token
}

// TokenShare is the fraction of a class's steps that carry a task token: those its workflows
// dispatch through its queue. Steps an EventBridge rule feeds, and synchronous invokes, make
// no SendTask* call.
func (m *Model) TokenShare(a *ir.Agent) float64 {
	_, token := m.workflowWeights(a)
	return token / m.Weight(a)
}

// ConversationsPerSec is the arrival rate of new conversations (workflow executions).
func (m *Model) ConversationsPerSec() float64 {
	return finite(m.Traffic.ConversationsPerMinute / 60)
}

// StepsPerSec is the fleet-wide step arrival rate.
func (m *Model) StepsPerSec() float64 {
	return finite(m.Traffic.ConversationsPerMinute * m.Traffic.StepsPerConversation / 60)
}

// ClassStepsPerSec is the step arrival rate at a class's queue.
func (m *Model) ClassStepsPerSec(a *ir.Agent) float64 { return m.rate[a] }

// StepDuration is the duration Little's law uses for a class: traffic.step_duration when
// given, else the class's p95 — and where that number was written.
func (m *Model) StepDuration(a *ir.Agent) (time.Duration, string) {
	if m.Traffic.StepDuration > 0 {
		return m.Traffic.StepDuration, "/traffic/step_duration"
	}
	return a.StepP95, a.Path + "/step/p95"
}

// InFlight is Little's law for one class queue: arrival rate × step duration.
func (m *Model) InFlight(a *ir.Agent) float64 {
	d, _ := m.StepDuration(a)
	return finite(m.ClassStepsPerSec(a) * d.Seconds())
}

// HeartbeatsPerStep is how many visibility heartbeats (and lease renewals) one step of the
// class makes on average: its duration over the worker's heartbeat interval.
func (m *Model) HeartbeatsPerStep(a *ir.Agent) float64 {
	if a.Heartbeat <= 0 {
		return 0
	}
	d, _ := m.StepDuration(a)
	return d.Seconds() / a.Heartbeat.Seconds()
}

// EmittedPerSec is the events the fleet's classes put on the bus: one per emitted event
// type per step.
func (m *Model) EmittedPerSec() float64 {
	var n float64
	for _, a := range m.Fleet.Agents {
		n += m.ClassStepsPerSec(a) * float64(len(a.Emits))
	}
	return n
}

// PutEventsPerSec is the PutEvents requests those events take at the bus's batch size.
func (m *Model) PutEventsPerSec() float64 {
	if m.Fleet.Bus.MaxEntries < 1 {
		return 0
	}
	return m.EmittedPerSec() / float64(m.Fleet.Bus.MaxEntries)
}

// InvocationsPerSec is the EventBridge target invocations: one per step of every class a
// rule feeds.
func (m *Model) InvocationsPerSec() float64 {
	var n float64
	for _, a := range m.Fleet.Agents {
		if a.Rule != nil {
			n += m.ClassStepsPerSec(a)
		}
	}
	return n
}

// CallbacksPerSec is the SendTask* calls, which share one token bucket: a SendTaskSuccess or
// SendTaskFailure per task-token step, and its SendTaskHeartbeat at the worker's cadence while
// the step runs. Rule-fed and synchronously invoked steps of the same class make none.
func (m *Model) CallbacksPerSec() (answers, heartbeats float64) {
	for _, a := range m.Fleet.Agents {
		rate := m.ClassStepsPerSec(a) * m.TokenShare(a)
		answers += rate
		heartbeats += rate * m.HeartbeatsPerStep(a)
	}
	return answers, heartbeats
}

// PolicyTokens is a model policy's projected token use: Σ over the classes whose default
// policy it is of their steps/s × traffic.tokens_per_step, per minute. Classes lists those
// classes; unknown, those of them without tokens_per_step (left out of the sum).
func (m *Model) PolicyTokens(p *ir.Model) (perMinute float64, classes, unknown []*ir.Agent) {
	for _, a := range m.Fleet.Agents {
		if a.Model != p {
			continue
		}
		classes = append(classes, a)
		if a.TokensPerStep <= 0 {
			unknown = append(unknown, a)
			continue
		}
		perMinute += m.ClassStepsPerSec(a) * float64(a.TokensPerStep) * 60
	}
	return finite(perMinute), classes, unknown
}

// TransitionsPerExecution is a Standard workflow's state transitions per execution: the
// start, then each step and each of its retries.
func TransitionsPerExecution(w *ir.Workflow) int {
	per := 1
	for _, st := range w.Steps {
		per += 1 + st.Retries
	}
	return per
}

// TransitionsPerSec is a Standard workflow's state transitions, one execution per
// conversation.
func (m *Model) TransitionsPerSec(w *ir.Workflow) float64 {
	return m.ConversationsPerSec() * float64(TransitionsPerExecution(w))
}

// AgentCoreSessions is the active AgentCore sessions: the concurrent conversations when
// traffic states them, else the in-flight steps of the agentcore classes.
func (m *Model) AgentCoreSessions() (sessions float64, fromConversations bool) {
	if m.Traffic.ConcurrentConversations > 0 {
		return float64(m.Traffic.ConcurrentConversations), true
	}
	for _, a := range m.Fleet.Agents {
		if a.Runtime == "agentcore" {
			sessions += m.InFlight(a)
		}
	}
	return sessions, false
}

// FIFOLimit is the SendMessage TPS a FIFO class's queue allows, and the mode it is in.
func FIFOLimit(f *ir.Fleet, a *ir.Agent) (float64, string) {
	if a.HighThroughput {
		return FIFOHighThroughputTPS(f.Region), "in high-throughput mode in " + f.Region
	}
	return FIFOTPS, "without high-throughput mode"
}

// roundingNoise is the relative error float64 arithmetic leaves in a figure (99 in flight
// computes as 99.00000000000001): below it, two figures are the same number.
const roundingNoise = 1e-9

// CeilFigure is the whole number of units (replicas, executions) a figure needs: its
// ceiling once rounding noise is taken off, so exactly 11 replicas' worth needs 11, not 12.
func CeilFigure(v float64) float64 {
	return math.Ceil(v - math.Abs(v)*roundingNoise)
}

// finite keeps NaN and ±Inf out of every figure: they come only from absurd inputs, which
// the report names instead.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
