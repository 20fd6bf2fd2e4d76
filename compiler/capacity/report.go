package capacity

import (
	"fmt"
	"math"
	"sort"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/jsonreport"
)

// Input bounds past which no figure is computed: beyond them the arithmetic stops meaning
// anything (no AWS account runs a billion conversations a minute) and products of such
// numbers would leave float64's range.
const (
	MaxConversationsPerMinute = 1e9
	MaxStepsPerConversation   = 1e6
)

// Report is the capacity of one fleet under one traffic assumption.
type Report struct {
	// Header is format_version and the diagnostics of the spec sized (the command sets them).
	jsonreport.Header
	Fleet             string       `json:"fleet"`
	Region            string       `json:"region"`
	Traffic           TrafficInput `json:"traffic"`
	Notes             []string     `json:"notes"`
	SeedModel         Totals       `json:"seed_model"`
	WorkerModel       Totals       `json:"worker_model"`
	Classes           []Class      `json:"classes"`
	Workflows         []Workflow   `json:"workflows"`
	Models            []ModelUse   `json:"models"`
	Quotas            []Quota      `json:"quotas"`
	FirstQuotaToBreak *Quota       `json:"first_quota_to_break"`
	Cost              *Cost        `json:"cost"`

	// unlimited are quotas the traffic draws on whose limit the spec leaves unstated (a
	// policy without tokens_per_minute): nothing to break, but a diff shows a limit that
	// comes or goes.
	unlimited []Quota
}

// TrafficInput is the traffic the report was computed for.
type TrafficInput struct {
	ConversationsPerMinute  float64 `json:"conversations_per_minute"`
	StepsPerConversation    float64 `json:"steps_per_conversation"`
	StepDurationSeconds     float64 `json:"step_duration_seconds"` // 0: each class's step.p95
	ConcurrentConversations int     `json:"concurrent_conversations"`
	FanOutItems             float64 `json:"fan_out_items"`
}

// Totals are the fleet's request volumes, counted one way (seed_model or worker_model).
type Totals struct {
	StepsPerMinute           float64  `json:"steps_per_minute"`
	StepsPerSecond           float64  `json:"steps_per_second"`
	SQSRequestsPerMinute     float64  `json:"sqs_requests_per_minute"`
	SQSRequestsPerDay        float64  `json:"sqs_requests_per_day"`
	PutEventsEntriesPerDay   float64  `json:"putevents_entries_per_day"`
	PutEventsRequestsPerDay  float64  `json:"putevents_requests_per_day"`
	DynamoDBWritesPerDay     float64  `json:"dynamodb_writes_per_day"`
	StepFunctionsRequestsDay float64  `json:"stepfunctions_requests_per_day"`
	StepsInFlight            float64  `json:"steps_in_flight"`
	InFlightShareOfCap       float64  `json:"in_flight_share_of_cap"`
	CallbacksPerSecond       float64  `json:"callbacks_per_second"`
	CallbackHeadroom         *float64 `json:"callback_headroom"` // null: no callbacks
}

// Class is one agent class's share of the traffic.
type Class struct {
	Name                 string     `json:"name"`
	Runtime              string     `json:"runtime"`
	ShareOfSteps         float64    `json:"share_of_steps"`
	StepsPerMinute       float64    `json:"steps_per_minute"`
	StepsPerSecond       float64    `json:"steps_per_second"`
	StepDurationSeconds  float64    `json:"step_duration_seconds"`
	InFlight             float64    `json:"in_flight"`
	InFlightShareOfCap   float64    `json:"in_flight_share_of_cap"`
	SQSRequestsPerDay    float64    `json:"sqs_requests_per_day"`
	DynamoDBWritesPerDay float64    `json:"dynamodb_writes_per_day"`
	EventsPerDay         float64    `json:"events_per_day"`
	FIFO                 *FIFOUse   `json:"fifo,omitempty"`
	KEDA                 *KEDAUse   `json:"keda,omitempty"`
	Lambda               *LambdaUse `json:"lambda,omitempty"`
}

// FIFOUse is a FIFO queue's SendMessage rate against its mode's limit.
type FIFOUse struct {
	TPS   float64 `json:"tps"`
	Limit float64 `json:"limit"`
	Mode  string  `json:"mode"`
}

// KEDAUse is the replicas Little's law asks for against scaling.max.
type KEDAUse struct {
	ReplicasNeeded int  `json:"replicas_needed"`
	PerReplica     int  `json:"per_replica"`
	Max            int  `json:"max"`
	Covered        bool `json:"covered"`
}

// LambdaUse is the concurrency a lambda class needs and the seed's poller heuristic for the
// event source mapping's provisioned mode.
type LambdaUse struct {
	Concurrency float64 `json:"concurrency"`
	BatchSize   int     `json:"batch_size"`
	MinPollers  int     `json:"min_pollers"`
	// Provisioned is the provisioned mode the class configures (null: on-demand scaling).
	Provisioned *PollerRange `json:"provisioned_pollers"`
}

// PollerRange is a provisioned event source mapping's minimum and maximum pollers.
type PollerRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Workflow is one workflow's execution and transition rates (one execution per conversation).
type Workflow struct {
	Name                    string  `json:"name"`
	Type                    string  `json:"type"`
	ExecutionsPerSecond     float64 `json:"executions_per_second"`
	TransitionsPerExecution int     `json:"transitions_per_execution"`
	TransitionsPerSecond    float64 `json:"transitions_per_second"`
}

// ModelUse is a model policy's token need against its budget.
type ModelUse struct {
	Name                 string   `json:"name"`
	Classes              []string `json:"classes"`
	TokensPerMinute      float64  `json:"tokens_per_minute"`
	TokensPerMinuteLimit int      `json:"tokens_per_minute_limit"`
	MaxInFlight          int      `json:"max_in_flight"`
	// BudgetInFlight is the concurrent steps the token budget sustains (the seed's
	// backpressure: size the cap from tokens per minute); 0 when it cannot be computed.
	BudgetInFlight float64 `json:"budget_in_flight"`
	Overrun        bool    `json:"max_in_flight_overruns_budget"`
}

// Quota is one service quota the fleet's traffic draws on.
type Quota struct {
	Name  string  `json:"name"`
	Scope string  `json:"scope"`          // "fleet", or the class, workflow or policy it is for
	Rule  string  `json:"rule,omitempty"` // the validate rule that checks it
	Limit float64 `json:"limit"`
	Usage float64 `json:"usage"`
	Unit  string  `json:"unit"`
	// Headroom is Limit / Usage: the traffic multiple at which the quota breaks (below 1:
	// already broken).
	Headroom float64 `json:"headroom"`
}

// Breaks says the quota is exceeded at this traffic.
func (q Quota) Breaks() bool { return Over(q.Usage, q.Limit) }

// Over says a usage exceeds its limit by more than rounding noise: exactly at the limit
// (however float64 computes it) is within it.
func Over(usage, limit float64) bool { return usage > limit && differ(usage, limit) }

// Build computes the report of f under t.
func Build(f *ir.Fleet, t Traffic) *Report {
	r := &Report{
		Header: jsonreport.NewHeader(nil), Fleet: f.Name, Region: f.Region,
		Traffic: TrafficInput{
			ConversationsPerMinute: finite(t.ConversationsPerMinute), StepsPerConversation: finite(t.StepsPerConversation),
			StepDurationSeconds: t.StepDuration.Seconds(), ConcurrentConversations: t.ConcurrentConversations,
			FanOutItems: finite(t.FanOutItems),
		},
		Notes: []string{}, Classes: []Class{}, Workflows: []Workflow{}, Models: []ModelUse{}, Quotas: []Quota{},
	}
	if problems := Problems(t); len(problems) > 0 {
		r.Notes = append(r.Notes, problems...)
		r.Notes = append(r.Notes, "no rate, quota or cost figure is computed until the traffic is usable")
		return r
	}
	m := New(f, t)
	r.notes(m)
	r.classes(m)
	r.workflows(m)
	r.models(m)
	r.SeedModel = seedTotals(m)
	r.WorkerModel = workerTotals(m)
	r.quotas(m)
	r.Cost = cost(m, r)
	return r
}

// Problems says why a traffic assumption cannot be computed with; nil when it can.
func Problems(t Traffic) []string {
	var p []string
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	switch {
	case bad(t.ConversationsPerMinute):
		p = append(p, "conversations per minute is not a finite number ≥ 0")
	case t.ConversationsPerMinute > MaxConversationsPerMinute:
		p = append(p, fmt.Sprintf("conversations per minute %s is beyond any AWS account (at most %s)", Num(t.ConversationsPerMinute), Num(MaxConversationsPerMinute)))
	case t.ConversationsPerMinute == 0:
		p = append(p, "no traffic: set traffic.conversations_per_minute (or --conversations-per-minute) above 0")
	}
	switch {
	case bad(t.StepsPerConversation):
		p = append(p, "steps per conversation is not a finite number ≥ 0")
	case t.StepsPerConversation > MaxStepsPerConversation:
		p = append(p, fmt.Sprintf("steps per conversation %s is beyond any agent run (at most %s)", Num(t.StepsPerConversation), Num(MaxStepsPerConversation)))
	case t.StepsPerConversation == 0:
		p = append(p, "no steps: set traffic.steps_per_conversation (or --steps-per-conversation) above 0")
	}
	if t.StepDuration < 0 {
		p = append(p, "step duration is negative")
	}
	if bad(t.FanOutItems) || t.FanOutItems > MaxStepsPerConversation {
		p = append(p, "fan-out items is not a finite number ≥ 0 (at most a million)")
	}
	if t.ConcurrentConversations < 0 {
		p = append(p, "concurrent conversations is negative")
	}
	return p
}

func (r *Report) notes(m *Model) {
	if m.Traffic.StepDuration == 0 {
		r.Notes = append(r.Notes, "traffic.step_duration not stated: each class's step.p95 stands in for its average step")
	}
	shared := 0.0
	for _, a := range m.Fleet.Agents {
		shared += a.Share
	}
	if shared > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("the classes' traffic.share values add up to %s, above 1: classes without a share get no steps", Num(shared)))
	}
	if m.Traffic.FanOutItems == 0 {
		for _, w := range m.Fleet.Workflows {
			for _, st := range w.Steps {
				if st.FanOut != nil && w.ItemsPerRun == 0 {
					r.Notes = append(r.Notes, fmt.Sprintf("workflow %s fans out without items_per_run or traffic.fan_out_items: 1 item per run assumed", w.Name))
					break
				}
			}
		}
	}
	if _, ok := prices(m.Fleet.Region); !ok {
		r.Notes = append(r.Notes, fmt.Sprintf("no price table for %s: cost not estimated", m.Fleet.Region))
	}
}

func (r *Report) classes(m *Model) {
	total := m.StepsPerSec()
	for _, a := range m.Fleet.Agents {
		rate := m.ClassStepsPerSec(a)
		d, _ := m.StepDuration(a)
		hb := m.HeartbeatsPerStep(a)
		c := Class{
			Name: a.Name, Runtime: a.Runtime, ShareOfSteps: ratio(rate, total),
			StepsPerMinute: rate * 60, StepsPerSecond: rate, StepDurationSeconds: d.Seconds(),
			InFlight: m.InFlight(a), InFlightShareOfCap: m.InFlight(a) / InFlightCap,
			SQSRequestsPerDay:    rate * (WorkerSQSPerStep + hb/WorkerSQSBatch) * secondsPerDay,
			DynamoDBWritesPerDay: rate * (WorkerDynamoDBPerStep + hb) * secondsPerDay,
			EventsPerDay:         rate * float64(len(a.Emits)) * secondsPerDay,
		}
		if a.FIFO {
			limit, mode := FIFOLimit(m.Fleet, a)
			c.FIFO = &FIFOUse{TPS: rate, Limit: limit, Mode: mode}
		}
		if a.K8s != nil && a.Scaling.PerReplica > 0 {
			n := int(CeilFigure(c.InFlight / float64(a.Scaling.PerReplica)))
			c.KEDA = &KEDAUse{ReplicasNeeded: n, PerReplica: a.Scaling.PerReplica, Max: a.Scaling.Max, Covered: n <= a.Scaling.Max}
		}
		if a.Lambda != nil {
			b := max(a.Lambda.BatchSize, 1)
			c.Lambda = &LambdaUse{Concurrency: CeilFigure(c.InFlight / float64(b)), BatchSize: b, MinPollers: ir.MinPollers(d.Seconds(), b)}
			if p := a.Lambda.Pollers; p != nil {
				c.Lambda.Provisioned = &PollerRange{Min: p.Min, Max: p.Max}
			}
		}
		r.Classes = append(r.Classes, c)
	}
}

func (r *Report) workflows(m *Model) {
	for _, w := range m.Fleet.Workflows {
		per := TransitionsPerExecution(w)
		wu := Workflow{Name: w.Name, Type: w.Type, ExecutionsPerSecond: m.ConversationsPerSec(), TransitionsPerExecution: per}
		if w.Type != "express" {
			wu.TransitionsPerSecond = m.TransitionsPerSec(w)
		}
		r.Workflows = append(r.Workflows, wu)
	}
}

func (r *Report) models(m *Model) {
	for _, p := range m.Fleet.Models {
		perMinute, classes, unknown := m.PolicyTokens(p)
		if len(classes) == 0 {
			continue
		}
		u := ModelUse{Name: p.Name, TokensPerMinute: perMinute, TokensPerMinuteLimit: p.TokensPerMinute, MaxInFlight: p.MaxInFlight}
		if len(unknown) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("model policy %s: a class without traffic.tokens_per_step is left out of its token figures", p.Name))
		}
		var steps, inflightSec float64
		for _, a := range classes {
			u.Classes = append(u.Classes, a.Name)
			if a.TokensPerStep > 0 {
				d, _ := m.StepDuration(a)
				steps += m.ClassStepsPerSec(a)
				inflightSec += m.ClassStepsPerSec(a) * d.Seconds()
			}
		}
		if p.TokensPerMinute > 0 && steps > 0 && perMinute > 0 {
			// Steps per minute the budget allows, times the average step's minutes in flight.
			tokensPerStep := perMinute / 60 / steps
			avgMinutes := inflightSec / steps / 60
			u.BudgetInFlight = float64(p.TokensPerMinute) / tokensPerStep * avgMinutes
			u.Overrun = p.MaxInFlight > 0 && float64(p.MaxInFlight) > u.BudgetInFlight
		}
		r.Models = append(r.Models, u)
	}
}

func seedTotals(m *Model) Totals {
	sps := m.StepsPerSec()
	var inFlight float64
	for _, a := range m.Fleet.Agents {
		inFlight += m.InFlight(a)
	}
	if m.Traffic.StepDuration > 0 {
		inFlight = sps * m.Traffic.StepDuration.Seconds()
	}
	refill, _ := CallbackRefill(m.Fleet.Region)
	t := Totals{
		StepsPerMinute: sps * 60, StepsPerSecond: sps,
		SQSRequestsPerMinute:     sps * SeedSQSPerStep * 60,
		SQSRequestsPerDay:        sps * SeedSQSPerStep * secondsPerDay,
		PutEventsEntriesPerDay:   sps * secondsPerDay,
		PutEventsRequestsPerDay:  sps * secondsPerDay / SeedPutEventsBatch,
		DynamoDBWritesPerDay:     sps * SeedDynamoDBPerStep * secondsPerDay,
		StepFunctionsRequestsDay: sps * secondsPerDay,
		StepsInFlight:            inFlight,
		InFlightShareOfCap:       inFlight / InFlightCap,
		CallbacksPerSecond:       sps,
	}
	t.CallbackHeadroom = headroom(refill, t.CallbacksPerSecond)
	return t
}

func workerTotals(m *Model) Totals {
	var t Totals
	sps := m.StepsPerSec()
	t.StepsPerSecond, t.StepsPerMinute = sps, sps*60
	var sqs, ddb float64
	for _, a := range m.Fleet.Agents {
		rate, hb := m.ClassStepsPerSec(a), m.HeartbeatsPerStep(a)
		sqs += rate * (WorkerSQSPerStep + hb/WorkerSQSBatch)
		ddb += rate * (WorkerDynamoDBPerStep + hb)
		n := m.InFlight(a)
		t.StepsInFlight += n
		t.InFlightShareOfCap = math.Max(t.InFlightShareOfCap, n/InFlightCap)
	}
	answers, beats := m.CallbacksPerSec()
	t.CallbacksPerSecond = answers + beats
	refill, _ := CallbackRefill(m.Fleet.Region)
	t.CallbackHeadroom = headroom(refill, t.CallbacksPerSecond)
	t.SQSRequestsPerMinute, t.SQSRequestsPerDay = sqs*60, sqs*secondsPerDay
	t.PutEventsEntriesPerDay = m.EmittedPerSec() * secondsPerDay
	t.PutEventsRequestsPerDay = m.PutEventsPerSec() * secondsPerDay
	t.DynamoDBWritesPerDay = ddb * secondsPerDay
	starts := m.ConversationsPerSec() * float64(len(m.Fleet.Workflows))
	t.StepFunctionsRequestsDay = (t.CallbacksPerSecond + starts) * secondsPerDay
	return t
}

// quotas lists every quota the traffic draws on, and the first to break as traffic grows.
func (r *Report) quotas(m *Model) {
	f := m.Fleet
	add := func(q Quota) {
		if q.Usage <= 0 {
			return // nothing drawn: nothing to break
		}
		if q.Limit <= 0 {
			r.unlimited = append(r.unlimited, q)
			return
		}
		q.Headroom = q.Limit / q.Usage
		r.Quotas = append(r.Quotas, q)
	}
	add(Quota{Name: "EventBridge PutEvents requests/s", Scope: "fleet", Rule: "E011", Limit: PutEventsRPS(f.Region), Usage: m.PutEventsPerSec(), Unit: "requests/s"})
	add(Quota{Name: "EventBridge target invocations/s", Scope: "fleet", Rule: "E012", Limit: InvocationsPerSec, Usage: m.InvocationsPerSec(), Unit: "invocations/s"})
	refill, _ := CallbackRefill(f.Region)
	answers, beats := m.CallbacksPerSec()
	add(Quota{Name: "Step Functions SendTask* refill", Scope: "fleet", Rule: "S007", Limit: refill, Usage: answers + beats, Unit: "calls/s"})
	for _, w := range f.Workflows {
		if w.Type == "express" {
			add(Quota{Name: "Step Functions Express StartExecution/s", Scope: w.Name, Rule: "S008", Limit: ExpressStartPerSec, Usage: m.ConversationsPerSec(), Unit: "starts/s"})
		} else {
			add(Quota{Name: "Step Functions state transitions/s", Scope: w.Name, Rule: "S008", Limit: TransitionsPerSec, Usage: m.TransitionsPerSec(w), Unit: "transitions/s"})
		}
	}
	if FansOut(f) {
		add(Quota{Name: "Distributed Map open Map Runs", Scope: "fleet", Rule: "S006", Limit: OpenMapRuns, Usage: float64(m.Traffic.ConcurrentConversations), Unit: "map runs"})
	}
	if HasRuntime(f, "agentcore") {
		s, _ := m.AgentCoreSessions()
		add(Quota{Name: "AgentCore active sessions", Scope: "fleet", Rule: "W004", Limit: float64(AgentCoreSessions(f.Region)), Usage: s, Unit: "sessions"})
	}
	var lambda float64
	for _, a := range f.Agents {
		add(Quota{Name: "SQS in-flight messages", Scope: a.Name, Rule: "Q010", Limit: InFlightCap, Usage: m.InFlight(a), Unit: "messages"})
		if a.FIFO {
			limit, _ := FIFOLimit(f, a)
			add(Quota{Name: "SQS FIFO SendMessage TPS", Scope: a.Name, Rule: "Q008", Limit: limit, Usage: m.ClassStepsPerSec(a), Unit: "TPS"})
		}
		if a.Lambda != nil {
			lambda += CeilFigure(m.InFlight(a) / float64(max(a.Lambda.BatchSize, 1)))
		}
	}
	add(Quota{Name: "Lambda concurrent executions", Scope: "fleet", Limit: LambdaConcurrency, Usage: lambda, Unit: "executions"})
	for _, u := range r.Models {
		add(Quota{Name: "model tokens per minute", Scope: u.Name, Rule: "S011", Limit: float64(u.TokensPerMinuteLimit), Usage: u.TokensPerMinute, Unit: "tokens/min"})
	}
	sort.SliceStable(r.Quotas, func(i, j int) bool { return r.Quotas[i].Headroom < r.Quotas[j].Headroom })
	if len(r.Quotas) > 0 {
		q := r.Quotas[0]
		r.FirstQuotaToBreak = &q
	}
}

// FansOut says some workflow of the fleet has a fan_out step (each execution opens a Map Run).
func FansOut(f *ir.Fleet) bool {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			if st.FanOut != nil {
				return true
			}
		}
	}
	return false
}

// HasRuntime says some class runs on the given runtime.
func HasRuntime(f *ir.Fleet, runtime string) bool {
	for _, a := range f.Agents {
		if a.Runtime == runtime {
			return true
		}
	}
	return false
}

func headroom(limit, usage float64) *float64 {
	if usage <= 0 {
		return nil
	}
	h := limit / usage
	return &h
}

func ratio(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return part / whole
}
