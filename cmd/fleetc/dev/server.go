package dev

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/schemas/awslimits"
)

//go:embed page/index.html
var pageFS embed.FS

// Snapshot is GET /api/fleet: every number from the emulator (queues, executions) and the
// workers' own log lines (verdicts), refreshed for each request and each server-sent event.
type Snapshot struct {
	Fleet     string         `json:"fleet"`
	Endpoint  string         `json:"endpoint"`
	Time      time.Time      `json:"time"`
	Classes   []ClassView    `json:"classes"`
	Workflows []WorkflowView `json:"workflows"`
	Events    []EventView    `json:"events"`
	// Unclaimed counts events on the bus no class consumes (seen by the observer rule).
	Unclaimed int        `json:"unclaimed"`
	Ledger    LedgerView `json:"ledger"`
	// Model is dev's Bedrock stand-in: calls, throttled calls, the current 429 wave.
	Model ModelView `json:"model"`
	Gaps  []string  `json:"gaps"` // what the page cannot do on this machine
}

// ClassView is one agent class.
type ClassView struct {
	Name           string         `json:"name"`
	Runtime        string         `json:"runtime"`
	Consumes       string         `json:"consumes,omitempty"`
	Emits          []string       `json:"emits"`
	Workflows      []string       `json:"workflows"`
	Queue          QueueView      `json:"queue"`
	DLQ            DLQView        `json:"dlq"`
	Submitted      int            `json:"submitted"`
	Completed      int            `json:"completed"`
	DeadLettered   int            `json:"dead_lettered"`
	WorkflowSteps  int            `json:"workflow_steps"` // finished or dead-lettered tasks of workflows (not events)
	Retries        int            `json:"retries"`
	StepsPerSecond float64        `json:"steps_per_second"`
	StderrLines    int            `json:"stderr_lines"`
	Recent         []Verdict      `json:"recent"`
	Worker         WorkerView     `json:"worker"`
	Fault          *Fault         `json:"fault,omitempty"`
	Errors         map[string]int `json:"-"`
}

// QueueView is a class queue's depth.
type QueueView struct {
	Visible          int      `json:"visible"`
	InFlight         int      `json:"in_flight"`
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"` // of work submitted and not yet finished
}

// DLQView is a class DLQ's depth and why its messages are there (ERROR_CODE, as the workers
// counted them when they dead-lettered).
type DLQView struct {
	Visible    int            `json:"visible"`
	InFlight   int            `json:"in_flight"`
	ErrorCodes map[string]int `json:"error_codes"`
}

// WorkerView is the class's fleet-worker process.
type WorkerView struct {
	State  string `json:"state"`
	PID    int    `json:"pid"`
	Starts int    `json:"starts"`
}

// WorkflowView is one workflow's executions by status.
type WorkflowView struct {
	Name       string          `json:"name"`
	Agents     []string        `json:"agents"`
	Executions map[string]int  `json:"executions"`
	Recent     []ExecutionView `json:"recent"`
}

// ExecutionView is one execution.
type ExecutionView struct {
	Name   string    `json:"name"`
	Status string    `json:"status"`
	Start  time.Time `json:"start"`
}

// EventView is one event type and how many the observer saw.
type EventView struct {
	DetailType string   `json:"detail_type"`
	Source     string   `json:"source"`
	Seen       int      `json:"seen"`
	Consumers  []string `json:"consumers"`
	Producers  []string `json:"producers"`
}

// LedgerView is the fleet's balance: every unit of work submitted to a class is completed
// once or dead-lettered, or still pending in its queue.
type LedgerView struct {
	Submitted    int  `json:"submitted"`
	Completed    int  `json:"completed"`
	DeadLettered int  `json:"dead_lettered"`
	Pending      int  `json:"pending"`
	Balanced     bool `json:"balanced"` // submitted = completed + dead_lettered
}

// Gaps of the live page.
var pageGaps = []string{
	"the model is dev's Bedrock stand-in (Converse only; OpenAI-compatible targets are not stood in for)",
	"steps of llm handlers and of http handlers whose sidecar answers show no input and result (they do not run behind dev-handler)",
}

func (d *Fleet) depth(ctx context.Context, url string) (visible, inFlight int) {
	if url == "" {
		return 0, 0
	}
	out, err := d.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, 0
	}
	visible, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight
}

// Snapshot reads the fleet's state now.
func (d *Fleet) Snapshot(ctx context.Context) *Snapshot {
	now := time.Now()
	s := &Snapshot{Fleet: d.ir.Name, Endpoint: d.endpoint, Time: now.UTC(), Gaps: pageGaps,
		Classes: []ClassView{}, Workflows: []WorkflowView{}, Events: []EventView{}}
	byType, submitted, unclaimed := d.obs.counts()
	s.Unclaimed = unclaimed
	d.faultsMu.Lock()
	faults, _ := ReadFaults(d.faultsAt)
	d.faultsMu.Unlock()
	for _, a := range d.ir.Agents {
		c := ClassView{Name: a.Name, Runtime: a.Runtime, Emits: []string{}, Workflows: []string{}}
		if a.Consumes != nil && a.Consumes.Event != nil {
			c.Consumes = a.Consumes.Event.DetailType
		}
		for _, e := range a.Emits {
			c.Emits = append(c.Emits, e.DetailType)
		}
		for _, w := range a.Workflows {
			c.Workflows = append(c.Workflows, w.Name)
		}
		q := d.queues[a.Name]
		c.Queue.Visible, c.Queue.InFlight = d.depth(ctx, q.queue)
		if q.ingress != "" {
			v, f := d.depth(ctx, q.ingress)
			c.Queue.Visible += v
			c.Queue.InFlight += f
		}
		c.DLQ.Visible, c.DLQ.InFlight = d.depth(ctx, q.dlq)
		n := d.sup.led.counts(a.Name, now)
		c.WorkflowSteps = n.WorkflowSteps
		c.Completed, c.DeadLettered, c.Retries, c.StepsPerSecond, c.StderrLines, c.Recent = n.Completed, n.DeadLettered, n.Retries, n.StepsPerSecond, n.StderrLines, n.Recent
		c.DLQ.ErrorCodes = n.Codes
		if !n.Oldest.IsZero() {
			age := now.Sub(n.Oldest).Seconds()
			c.Queue.OldestAgeSeconds = &age
		}
		c.Submitted = submitted[a.Name]
		c.Worker.State, c.Worker.PID, c.Worker.Starts = d.sup.status(a.Name)
		if f, ok := faults[a.Name]; ok && now.Before(f.Until) {
			c.Fault = &f
		}
		s.Classes = append(s.Classes, c)
		s.Ledger.Submitted += c.Submitted
		s.Ledger.Completed += c.Completed
		s.Ledger.DeadLettered += c.DeadLettered
	}
	if d.model != nil {
		s.Model = d.model.view(now)
	}
	s.Ledger.Pending = s.Ledger.Submitted - s.Ledger.Completed - s.Ledger.DeadLettered
	s.Ledger.Balanced = s.Ledger.Pending == 0
	for _, e := range d.ir.Events {
		ev := EventView{DetailType: e.DetailType, Source: e.Source, Seen: byType[e.DetailType], Consumers: []string{}, Producers: []string{}}
		for _, a := range e.Consumers {
			ev.Consumers = append(ev.Consumers, a.Name)
		}
		for _, a := range e.Producers {
			ev.Producers = append(ev.Producers, a.Name)
		}
		s.Events = append(s.Events, ev)
	}
	for _, w := range d.ir.Workflows {
		wv := WorkflowView{Name: w.Name, Agents: []string{}, Executions: map[string]int{}, Recent: []ExecutionView{}}
		for _, a := range w.Agents {
			wv.Agents = append(wv.Agents, a.Name)
		}
		if arn := d.machines[w.Name]; arn != "" {
			out, err := d.sfn.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn)})
			if err == nil {
				for _, e := range out.Executions {
					wv.Executions[string(e.Status)]++
					wv.Recent = append(wv.Recent, ExecutionView{Name: aws.ToString(e.Name), Status: string(e.Status), Start: aws.ToTime(e.StartDate)})
				}
				sort.Slice(wv.Recent, func(i, j int) bool { return wv.Recent[i].Start.After(wv.Recent[j].Start) })
				if len(wv.Recent) > 10 {
					wv.Recent = wv.Recent[:10]
				}
			}
		}
		s.Workflows = append(s.Workflows, wv)
	}
	return s
}

// StartExecution starts a workflow with its generated example input (a fresh trace_id).
func (d *Fleet) StartExecution(ctx context.Context, workflow string, input []byte) (string, string, error) {
	arn := d.machines[workflow]
	if arn == "" {
		return "", "", fmt.Errorf("no workflow %q", workflow)
	}
	if input == nil {
		input = d.examples[workflow]
	}
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		return "", "", fmt.Errorf("the input is not a JSON object: %w", err)
	}
	trace := NewTraceID()
	in[traceField] = trace
	b, _ := json.Marshal(in)
	out, err := d.sfn.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn),
		Name: aws.String("dev-" + trace[:12]), Input: aws.String(string(b))})
	if err != nil {
		return "", "", err
	}
	return aws.ToString(out.ExecutionArn), trace, nil
}

// Redrive moves every message of a class's DLQ back to its queue, as `fleetc dlq redrive`
// moves them one by one (send first, then delete; the worker's ERROR_CODE… stay behind: the
// redriven message starts over; each letter at most once, so a message that fails fast ends
// the redrive instead of looping), and reports moved / failed again / left.
func (d *Fleet) Redrive(ctx context.Context, class string) (*dlq.Result, error) {
	ts, err := dlq.Targets(d.ir, class)
	if err != nil {
		return nil, err
	}
	t, q := ts[0], d.queues[class]
	t.QueueURL, t.DLQURL = q.queue, q.dlq
	s := dlq.NewSession()
	moved, err := dlq.Move(ctx, d.sqs, t, dlq.MoveOptions{Rate: devRedriveRate, Session: s})
	if err != nil {
		return &dlq.Result{Moved: len(moved)}, err
	}
	return s.Tally(ctx, d.sqs, t, dlq.DefaultSettle)
}

// devRedriveRate paces the live page's redrive: an emulator, and a person waiting.
const devRedriveRate = 1000

// serve starts the live page and its API on 127.0.0.1:port for the whole run; requests go to
// the fleet of the current session (503 between sessions). localhttp guards it: any page the
// developer opens could otherwise kill workers, send events or read the fleet.
func serve(ctx context.Context, port int, current *atomic.Pointer[Fleet]) (*http.Server, string, error) {
	l, err := localhttp.Listen(net.JoinHostPort(localhttp.DefaultHost, strconv.Itoa(port)))
	if err != nil {
		return nil, "", fmt.Errorf("live page: %w", err)
	}
	var mu sync.Mutex
	handlers := map[*Fleet]http.Handler{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := current.Load()
		if d == nil {
			w.Header().Set("Retry-After", "2")
			http.Error(w, "the fleet is being (re)applied", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		fh, ok := handlers[d]
		if !ok {
			clear(handlers) // an earlier session's handler is never used again
			fh = d.Handler(ctx)
			handlers[d] = fh
		}
		mu.Unlock()
		fh.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: localhttp.Guard(h), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, l.Addr().String(), nil
}

// maxBody bounds a request body: one event, at most PutEvents' 1 MB.
const maxBody = awslimits.PutEventsMaxRequestBytes

// Handler is the live page and its JSON API.
func (d *Fleet) Handler(ctx context.Context) http.Handler {
	a := &liveAPI{d: d, ctx: ctx}
	mux := http.NewServeMux()
	for _, rt := range []struct {
		pattern string
		handle  http.HandlerFunc
	}{
		{"GET /{$}", a.page},
		{"GET /api/fleet", a.fleet},
		{"GET /api/stream", a.stream},
		{"GET /api/activity", a.activity},
		{"GET /api/trace/{trace_id}", a.trace},
		{"POST /api/events", a.sendEvent},
		{"GET /api/examples", a.examples},
		{"POST /api/workflows/{name}/executions", a.startExecution},
		{"POST /api/classes/{name}/redrive", a.redrive},
		{"POST /api/classes/{name}/kill", a.kill},
		{"POST /api/classes/{name}/pause", a.pause},
		{"POST /api/faults/model-429", a.model429},
		{"POST /api/classes/{name}/fault", a.fault},
	} {
		mux.HandleFunc(rt.pattern, rt.handle)
	}
	return mux
}

// liveAPI serves the routes of Handler for one session.
type liveAPI struct {
	d   *Fleet
	ctx context.Context // the session's: streams end with it

	cacheMu sync.Mutex
	cached  *Snapshot
}

// snapshot is the fleet's snapshot, taken at most about once a second however many pages
// ask.
func (a *liveAPI) snapshot(r *http.Request) *Snapshot {
	a.cacheMu.Lock()
	defer a.cacheMu.Unlock()
	if a.cached == nil || time.Since(a.cached.Time) > 900*time.Millisecond {
		a.cached = a.d.Snapshot(r.Context())
	}
	return a.cached
}

// page serves the live page.
func (a *liveAPI) page(w http.ResponseWriter, r *http.Request) {
	b, _ := pageFS.ReadFile("page/index.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

// fleet answers the current snapshot.
func (a *liveAPI) fleet(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.snapshot(r))
}

// stream sends a snapshot a second as server-sent events until the client, the session or the
// fleet ends.
func (a *liveAPI) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		b, _ := json.Marshal(a.snapshot(r))
		if _, err := fmt.Fprintf(w, "event: fleet\ndata: %s\n\n", b); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-a.ctx.Done():
			return
		case <-a.d.done:
			return
		case <-t.C:
		}
	}
}

// The API's other answers.
type (
	// ErrorAnswer is every refusal: what went wrong (and, for a redrive cut short, how many
	// letters had moved).
	ErrorAnswer struct {
		Error string `json:"error"`
		Moved *int   `json:"moved,omitempty"`
	}
	// SentEvent is POST /api/events: the event as it went on the bus.
	SentEvent struct {
		EventID string          `json:"event_id"`
		TraceID string          `json:"trace_id"`
		Detail  json.RawMessage `json:"detail"`
	}
	// Examples is GET /api/examples: each event's and each workflow's example input.
	Examples struct {
		Events    map[string]json.RawMessage `json:"events"`
		Workflows map[string]json.RawMessage `json:"workflows"`
	}
	// StartedExecution is POST /api/workflows/{name}/executions.
	StartedExecution struct {
		ExecutionARN string `json:"execution_arn"`
		TraceID      string `json:"trace_id"`
	}
	// Killed is POST /api/classes/{name}/kill: the worker's pid.
	Killed struct {
		Killed int `json:"killed"`
	}
	// Paused is POST /api/classes/{name}/pause.
	Paused struct {
		Paused bool `json:"paused"`
	}
	// FaultSet is POST /api/classes/{name}/fault and /api/faults/model-429.
	FaultSet struct {
		Kind    string  `json:"kind"`
		Seconds float64 `json:"seconds"`
	}
)

// Activity is GET /api/activity: the newest things dev saw, across conversations, oldest
// first: events on the bus with their detail, handler runs with their input and result, the
// workers' verdicts.
type Activity struct {
	Entries []trace.Entry `json:"entries"`
}

// activityEntries is how many entries GET /api/activity answers.
const activityEntries = 100

// activity answers the newest entries.
func (a *liveAPI) activity(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Activity{Entries: a.d.journal.recent(activityEntries)})
}

// trace answers one conversation's timeline.
func (a *liveAPI) trace(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.d.Trace(r.Context(), r.PathValue("trace_id")))
}

// Trace is one conversation's timeline in this session: what dev saw (events on the bus,
// handler runs, verdicts) and what `fleetc trace` reads from the emulator (dead letters with
// their ERROR_CODE, idempotency records, workflow executions and their history), oldest
// first. What cannot be read is a note, not a failure: the page keeps what dev saw.
func (d *Fleet) Trace(ctx context.Context, traceID string) *trace.Timeline {
	t := &trace.Timeline{TraceID: traceID, Since: d.started.UTC(), Entries: d.journal.of(traceID), Notes: []string{}}
	if d.sqs != nil {
		src, notes, err := d.traceSources()
		t.Notes = append(t.Notes, notes...)
		var read *trace.Timeline
		if err == nil {
			read, err = trace.Read(ctx, src, traceID, d.started)
		}
		if err != nil {
			t.Notes = append(t.Notes, "the emulator's dead letters, records and executions: "+err.Error())
		} else {
			t.Entries = append(t.Entries, read.Entries...)
			t.Notes = append(t.Notes, read.Notes...)
		}
	}
	for i := range t.Entries {
		t.Entries[i].TraceID = "" // all of the timeline's trace
	}
	t.Sort()
	return t
}

// traceSources are the session's queues, tables and state machines as `fleetc trace` reads
// them.
func (d *Fleet) traceSources() (trace.Sources, []string, error) {
	ts, err := dlq.Targets(d.ir, "")
	if err != nil {
		return trace.Sources{}, nil, err
	}
	for _, t := range ts {
		q := d.queues[t.Class]
		t.QueueURL, t.DLQURL = q.queue, q.dlq
	}
	src := trace.Sources{SQS: d.sqs, DDB: awsconfig.DynamoDB(d.aws, awsconfig.WithoutCRC32), Targets: ts, Machines: map[string]string{}}
	var notes []string
	for _, w := range d.ir.Workflows {
		switch arn := d.machines[w.Name]; {
		case w.IsExpress():
			notes = append(notes, fmt.Sprintf("workflow %s not read: Step Functions keeps no history of express executions", w.Name))
		case arn != "":
			src.Machines[w.Name] = arn
		}
	}
	if len(src.Machines) > 0 {
		src.SFN = d.sfn
	}
	return src, notes, nil
}

// sendEvent puts one event on the bus; 422 when it breaks its contract.
func (a *liveAPI) sendEvent(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DetailType string          `json:"detail_type"`
		Detail     json.RawMessage `json:"detail"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	var detail []byte
	if len(req.Detail) > 0 && string(req.Detail) != "null" {
		detail = req.Detail
	}
	ev, id, err := a.d.Send(r.Context(), req.DetailType, detail)
	if err != nil {
		status := http.StatusBadGateway
		var se *SchemaError
		if errors.As(err, &se) || strings.HasPrefix(err.Error(), "no event") || strings.Contains(err.Error(), "not one JSON object") {
			status = http.StatusUnprocessableEntity
		}
		writeJSON(w, status, ErrorAnswer{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, SentEvent{EventID: id, TraceID: ev.TraceID, Detail: ev.Detail})
}

// examples answers each event's and each workflow's example input.
func (a *liveAPI) examples(w http.ResponseWriter, r *http.Request) {
	ex := Examples{Events: map[string]json.RawMessage{}, Workflows: map[string]json.RawMessage{}}
	for name, c := range a.d.contracts {
		ex.Events[name] = c.Example
		if c.Example == nil {
			ex.Events[name] = json.RawMessage("null")
		}
	}
	for name, b := range a.d.examples {
		ex.Workflows[name] = b
	}
	writeJSON(w, http.StatusOK, ex)
}

// startExecution starts an execution of the workflow {name}.
func (a *liveAPI) startExecution(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if r.ContentLength != 0 && !readJSON(w, r, &req) {
		return
	}
	var input []byte
	if len(req.Input) > 0 && string(req.Input) != "null" {
		input = req.Input
	}
	arn, trace, err := a.d.StartExecution(r.Context(), r.PathValue("name"), input)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, StartedExecution{ExecutionARN: arn, TraceID: trace})
}

// redrive moves class {name}'s dead letters back to its queue and answers the counts.
func (a *liveAPI) redrive(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Redrive(r.Context(), r.PathValue("name"))
	if err != nil {
		answer := ErrorAnswer{Error: err.Error()}
		if res != nil {
			answer.Moved = &res.Moved
		}
		writeJSON(w, http.StatusBadRequest, answer)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// kill kills class {name}'s worker; it restarts after RestartDelay.
func (a *liveAPI) kill(w http.ResponseWriter, r *http.Request) {
	pid, err := a.d.sup.kill(r.PathValue("name"))
	if err != nil {
		writeJSON(w, http.StatusConflict, ErrorAnswer{Error: err.Error()})
		return
	}
	a.d.sup.out.line(r.PathValue("name"), fmt.Sprintf("fleetc dev: fault: kill -9 %d (restarts in %s)", pid, RestartDelay))
	writeJSON(w, http.StatusOK, Killed{Killed: pid})
}

// pause pauses class {name}'s worker, or resumes it with {"paused": false}.
func (a *liveAPI) pause(w http.ResponseWriter, r *http.Request) {
	req := struct {
		Paused *bool `json:"paused"`
	}{}
	if r.ContentLength != 0 && !readJSON(w, r, &req) {
		return
	}
	paused := req.Paused == nil || *req.Paused
	if err := a.d.sup.pause(r.PathValue("name"), paused); err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: err.Error()})
		return
	}
	a.d.sup.out.line(r.PathValue("name"), fmt.Sprintf("fleetc dev: paused=%v", paused))
	writeJSON(w, http.StatusOK, Paused{Paused: paused})
}

// Faults last at most MaxFault; a slow handler sleeps DefaultSlowDelay unless told otherwise.
const (
	MaxFault         = time.Hour
	DefaultSlowDelay = 5 * time.Second
)

// faultDuration reads a fault's length in seconds, answering 400 when it is not in
// (0, MaxFault].
func faultDuration(w http.ResponseWriter, seconds float64) (time.Duration, bool) {
	if seconds <= 0 || seconds > MaxFault.Seconds() {
		writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("seconds: want 0 < seconds <= %g", MaxFault.Seconds())})
		return 0, false
	}
	return time.Duration(seconds * float64(time.Second)), true
}

// model429 makes the model answer 429 ThrottlingException for a while.
func (a *liveAPI) model429(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Seconds float64 `json:"seconds"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	dur, ok := faultDuration(w, req.Seconds)
	if !ok {
		return
	}
	a.d.model.wave(dur)
	a.d.sup.out.line(modelClass, fmt.Sprintf("fleetc dev: fault: the model answers 429 ThrottlingException for %s", dur))
	writeJSON(w, http.StatusOK, FaultSet{Kind: "model-429", Seconds: req.Seconds})
}

// fault makes class {name}'s handler fail or slow down for a while.
func (a *liveAPI) fault(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Kind         FaultKind `json:"kind"`
		Seconds      float64   `json:"seconds"`
		DelaySeconds float64   `json:"delay_seconds"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	dur, ok := faultDuration(w, req.Seconds)
	if !ok {
		return
	}
	delay := time.Duration(req.DelaySeconds * float64(time.Second))
	if req.Kind == FaultSlow && delay <= 0 {
		delay = DefaultSlowDelay
	}
	if err := a.d.SetFault(r.PathValue("name"), req.Kind, dur, delay); err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: err.Error()})
		return
	}
	a.d.sup.out.line(r.PathValue("name"), fmt.Sprintf("fleetc dev: fault: handler %s for %s", req.Kind, dur))
	writeJSON(w, http.StatusOK, FaultSet{Kind: string(req.Kind), Seconds: req.Seconds})
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: "request body: " + err.Error()})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
