// Package tools is the agent side of fleetc's async tools (async-tools-eventbridge.txt): for
// every async class of runtime/tools.json, start_<class> enqueues a job and returns its id,
// get_<class>_status reads it back with a resume hint, and list_my_jobs lists the caller's
// jobs in a session. One implementation (Service.Call), served as plain HTTP+JSON, as the
// Lambda shapes of Bedrock Agents action groups and AgentCore Gateway targets, and as an MCP
// server (transport.go, lambda.go, mcp.go).
//
// A start writes the job QUEUED (conditional put), then publishes the request event. When the
// bus refuses the event the job is rewritten FAILED_TO_START (conditional on QUEUED), so no
// QUEUED job is left that no worker will ever see; a repeated start with the same key
// publishes it again.
package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetc/fleetc/runtime/events/putevents"
	"github.com/fleetc/fleetc/runtime/jobstore"
	"github.com/fleetc/fleetc/runtime/telemetry/genai"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/jobs"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Argument limits.
const (
	// MaxArgumentBytes: the arguments become the request event's detail, and EventBridge
	// refuses a PutEvents request over 1 MB; larger inputs travel by reference. The event
	// itself (detail with job id and trace, source, detail type) is held to the same limit.
	MaxArgumentBytes  = putevents.MaxRequestBytes
	MinIdempotencyKey = rc.MinIdempotencyKey
	ListDefault       = rc.ListDefault
	ListMax           = rc.ListMax
	ArgIdempotencyKey = rc.ArgIdempotencyKey
)

// Code is an error code of a tool answer.
type Code string

const (
	InvalidArgument Code = "INVALID_ARGUMENT"
	NotFound        Code = "NOT_FOUND"
	Unauthenticated Code = "UNAUTHENTICATED"
	// PermissionDenied: the request names a principal other than the one that signed it.
	PermissionDenied Code = "PERMISSION_DENIED"
	UnknownTool      Code = "UNKNOWN_TOOL"
	// StartFailed: the bus refused the request event; the job is FAILED_TO_START and the
	// same start may be retried.
	StartFailed Code = "START_FAILED"
	Unavailable Code = "UNAVAILABLE"
)

// Error is a tool's failure answer.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	JobID     string `json:"jobId,omitempty"`
}

// Resume actions of a status answer.
type Action string

const (
	Poll     Action = "poll"
	Continue Action = "continue"
	Replan   Action = "replan"
)

// ResumeHint tells the model what to do next.
type ResumeHint struct {
	Action       Action `json:"action"`
	PollAfterSec int64  `json:"pollAfterSec,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Answer is every tool's answer: ok with the fields of its tool, or not ok with Error.
type Answer struct {
	OK bool `json:"ok"`
	// start_* and get_*_status
	JobID        string      `json:"jobId,omitempty"`
	Status       jobs.Status `json:"status,omitempty"`
	NextTool     string      `json:"nextTool,omitempty"`
	PollAfterSec int64       `json:"pollAfterSec,omitempty"`
	Resumed      bool        `json:"resumed,omitempty"`
	// get_*_status
	CreatedAt    string          `json:"createdAt,omitempty"`
	UpdatedAt    string          `json:"updatedAt,omitempty"`
	ArtifactURI  string          `json:"artifactUri,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultRef    json.RawMessage `json:"resultRef,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	ResumeHint   *ResumeHint     `json:"resumeHint,omitempty"`
	// list_my_jobs
	Jobs      []JobSummary `json:"jobs,omitempty"`
	NextToken string       `json:"nextToken,omitempty"`

	Error *Error `json:"error,omitempty"`
}

// JobSummary is one job of a list_my_jobs page.
type JobSummary struct {
	JobID      string      `json:"jobId"`
	StatusTool string      `json:"statusTool"`
	Status     jobs.Status `json:"status"`
	CreatedAt  string      `json:"createdAt"`
	UpdatedAt  string      `json:"updatedAt,omitempty"`
}

func fail(code Code, retryable bool, format string, a ...any) Answer {
	return Answer{Error: &Error{Code: code, Retryable: retryable, Message: fmt.Sprintf(format, a...)}}
}

// Caller is who calls a tool: the principal the transport authenticated, and the
// conversation (session) the call belongs to.
type Caller struct {
	Principal string
	Session   string
	// TraceID is the conversation's trace id (wire.HeaderTraceID): the job's request event
	// carries it, so the job joins the agent's run. "" starts a fresh trace.
	TraceID string
}

// Store is the jobs table as the tools use it (runtime/jobstore.Store).
type Store interface {
	Get(ctx context.Context, id string) (*jobs.Record, error)
	Create(ctx context.Context, r *jobs.Record) error
	Replace(ctx context.Context, r *jobs.Record, from jobs.Status) error
	List(ctx context.Context, principal, session string, status jobs.Status, limit int32, after *jobstore.Cursor) ([]jobs.Record, *jobstore.Cursor, error)
}

// Bus publishes one request event (runtime/tools.EventBridge).
type Bus interface {
	Publish(ctx context.Context, detailType, source string, detail []byte) error
}

// Service answers tool calls.
type Service struct {
	Cfg   *rc.Tools
	Store Store
	Bus   Bus
	Now   func() time.Time
	// Tracer, when set, wraps every call in an execute_tool span (tools mode). An llm
	// step runs the service in-process and opens the span itself, so it leaves this nil.
	Tracer trace.TracerProvider

	byTool map[string]*class

	handlerOnce sync.Once
	handler     http.Handler
	handlerErr  error
}

type class struct {
	rc.ToolClass
	schema *jsonschema.Schema
	kind   string // "start" | "status"
}

// New checks cfg and compiles every request schema.
func New(cfg *rc.Tools, store Store, bus Bus) (*Service, error) {
	if p := cfg.Check(); len(p) > 0 {
		return nil, fmt.Errorf("tools config: %s", strings.Join(p, "; "))
	}
	s := &Service{Cfg: cfg, Store: store, Bus: bus, byTool: map[string]*class{}}
	for _, c := range cfg.Classes {
		sch, err := compile(c.Request.DetailType, c.Request.Schema)
		if err != nil {
			return nil, err
		}
		s.byTool[c.StartTool] = &class{ToolClass: c, schema: sch, kind: "start"}
		s.byTool[c.StatusTool] = &class{ToolClass: c, schema: sch, kind: "status"}
	}
	return s, nil
}

func compile(detailType string, raw []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("remote $ref %q not allowed", u) }
	url := "fleetc:///tools/" + detailType + ".detail.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("request %s: %w", detailType, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", detailType, err)
	}
	return sch, nil
}

// Names lists every tool name the service answers, sorted.
func (s *Service) Names() []string {
	names := []string{s.Cfg.ListTool}
	for n := range s.byTool {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Call runs one tool. It never panics on input; every failure is an Answer with Error.
func (s *Service) Call(ctx context.Context, who Caller, tool string, args json.RawMessage) Answer {
	if s.Tracer == nil {
		return s.call(ctx, who, tool, args)
	}
	ctx, span := genai.StartTool(ctx, s.Tracer, tool, "")
	a := s.call(ctx, who, tool, args)
	if a.Error != nil {
		genai.EndTool(span, string(a.Error.Code), a.Error.Message)
	} else {
		genai.EndTool(span, "", "")
	}
	return a
}

func (s *Service) call(ctx context.Context, who Caller, tool string, args json.RawMessage) Answer {
	if who.Principal == "" {
		return fail(Unauthenticated, false, "no principal: the caller's identity is required")
	}
	if who.Session == "" {
		return fail(InvalidArgument, false, "no session id: jobs are listed per session")
	}
	if len(args) > MaxArgumentBytes {
		return fail(InvalidArgument, false, "arguments are %d bytes, over the %d-byte limit; pass large inputs by reference", len(args), MaxArgumentBytes)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return fail(InvalidArgument, false, "arguments must be a JSON object")
	}
	if tool == s.Cfg.ListTool {
		return s.list(ctx, who, m)
	}
	c, ok := s.byTool[tool]
	if !ok {
		return fail(UnknownTool, false, "unknown tool %q; tools: %s", tool, strings.Join(s.Names(), ", "))
	}
	if c.kind == "start" {
		return s.start(ctx, who, c, m)
	}
	return s.status(ctx, who, c, m)
}

// jobNamespace makes job ids: UUIDv5 of class, principal and idempotency key, so a repeated
// start is the same job without a second pointer item, and one principal's key never names
// another's job.
var jobNamespace = uuid.MustParse("6f0c3b1e-4a58-5d2e-9f1a-0e5b7c9d2a41")

// jobID is a UUID deterministic in (class, principal, idempotency key) whose first group is
// the principal's jobs.JobIDPrefix, which IAM can hold a role to.
func jobID(class, principal, key string) string {
	id, owner := uuid.NewSHA1(jobNamespace, []byte(strings.Join([]string{class, principal, key}, "\x00"))).String(), jobs.JobIDPrefix(principal)
	return owner + id[len(owner):]
}

func (s *Service) start(ctx context.Context, who Caller, c *class, args map[string]json.RawMessage) Answer {
	for _, f := range []string{c.IDField, c.TraceField} {
		if _, ok := args[f]; ok {
			return fail(InvalidArgument, false, "%s is written by the tool; leave it out", f)
		}
	}
	key, err := idempotencyKey(c, args)
	if err != nil {
		return fail(InvalidArgument, false, "%v", err)
	}
	delete(args, ArgIdempotencyKey)
	id := jobID(c.Class, who.Principal, key)
	detail, err := s.detail(c, args, id, who.TraceID)
	if err != nil {
		return fail(InvalidArgument, false, "%v", err)
	}

	existing, err := s.Store.Get(ctx, id)
	if err != nil {
		return fail(Unavailable, true, "%v", err)
	}
	now := s.now()
	rec := &jobs.Record{
		JobID: id, Class: c.Class, Tool: c.StartTool, Status: jobs.Queued,
		PrincipalID: who.Principal, SessionID: who.Session, IdempotencyKey: key,
		CreatedAt: jobs.FormatTime(now), UpdatedAt: jobs.FormatTime(now),
		ExpiresAt: now.Add(c.Expiry()).Unix(),
	}
	switch {
	case existing != nil && existing.Status == jobs.FailedToStart:
		// The bus refused this job's event before: claim it back to QUEUED and publish again.
		rec.CreatedAt, rec.SessionID = existing.CreatedAt, existing.SessionID
		if err := s.Store.Replace(ctx, rec, jobs.FailedToStart); errors.Is(err, jobstore.ErrConflict) {
			return s.started(ctx, c, id, true)
		} else if err != nil {
			return fail(Unavailable, true, "%v", err)
		}
	case existing != nil:
		return s.startedFrom(c, existing, true)
	default:
		if err := s.Store.Create(ctx, rec); errors.Is(err, jobstore.ErrConflict) {
			return s.started(ctx, c, id, true) // a concurrent start with the same key won
		} else if err != nil {
			return fail(Unavailable, true, "%v", err)
		}
	}
	if err := s.Bus.Publish(ctx, c.Request.DetailType, c.Request.Source, detail); err != nil {
		failed := *rec
		failed.Status, failed.ErrorMessage, failed.UpdatedAt = jobs.FailedToStart, err.Error(), jobs.FormatTime(s.now())
		if rerr := s.Store.Replace(context.WithoutCancel(ctx), &failed, jobs.Queued); rerr != nil && !errors.Is(rerr, jobstore.ErrConflict) {
			// The job stays QUEUED without an event; its TTL ends it. Say so.
			a := fail(StartFailed, true, "the bus refused the request event (%v), and the job could not be marked FAILED_TO_START (%v)", err, rerr)
			a.Error.JobID = id
			return a
		}
		a := fail(StartFailed, true, "the bus refused the request event: %v; the job is FAILED_TO_START, start again with the same arguments to retry", err)
		a.Error.JobID = id
		return a
	}
	return s.startedFrom(c, rec, false)
}

func (s *Service) started(ctx context.Context, c *class, id string, resumed bool) Answer {
	r, err := s.Store.Get(ctx, id)
	if err != nil || r == nil {
		return fail(Unavailable, true, "job %s changed under this start; retry", id)
	}
	return s.startedFrom(c, r, resumed)
}

func (s *Service) startedFrom(c *class, r *jobs.Record, resumed bool) Answer {
	return Answer{OK: true, JobID: r.JobID, Status: r.Status, NextTool: c.StatusTool,
		PollAfterSec: int64(c.StatusPollAfter() / time.Second), Resumed: resumed}
}

// idempotencyKey is the explicit idempotencyKey, else the canonical JSON of the class's key
// fields' values.
func idempotencyKey(c *class, args map[string]json.RawMessage) (string, error) {
	if raw, ok := args[ArgIdempotencyKey]; ok {
		var k string
		if err := json.Unmarshal(raw, &k); err != nil || len(k) < MinIdempotencyKey {
			return "", fmt.Errorf("%s must be a string of at least %d characters", ArgIdempotencyKey, MinIdempotencyKey)
		}
		return k, nil
	}
	if len(c.IdempotencyKey) == 0 {
		return "", fmt.Errorf("%s is required: a repeated start with the same key returns the same job", ArgIdempotencyKey)
	}
	vals := make([]json.RawMessage, len(c.IdempotencyKey))
	for i, f := range c.IdempotencyKey {
		v, ok := args[f]
		if !ok {
			return "", fmt.Errorf("%s is required (it is part of the idempotency key), or pass %s", f, ArgIdempotencyKey)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return "", err
		}
		vals[i] = buf.Bytes()
	}
	b, _ := json.Marshal(vals)
	return string(b), nil
}

// detail is the request event's detail: the arguments plus the job id and the caller's trace
// id (a fresh one when the caller has none), checked against the event's detail schema.
func (s *Service) detail(c *class, args map[string]json.RawMessage, id, traceID string) ([]byte, error) {
	d := make(map[string]json.RawMessage, len(args)+2)
	for k, v := range args {
		d[k] = v
	}
	d[c.IDField], _ = json.Marshal(id)
	if traceID == "" {
		traceID = newTraceID()
	}
	d[c.TraceField], _ = json.Marshal(traceID)
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, fmt.Errorf("arguments do not fit %s: %s", c.Request.DetailType, problems(err))
	}
	// The request event reaches the async class through its SQS queue, whose message is the
	// whole event: the entry keeps EventBridge's envelope under the queue's ceiling.
	if n := putevents.EntrySize(c.Request.Source, c.Request.DetailType, raw, nil, false); n > awslimits.EventBridgeMaxEntryToQueueBytes {
		return nil, fmt.Errorf("the request event would be %d bytes, over the %d bytes an event delivered to a queue may carry (PutEvents and SQS allow 1 MiB, EventBridge's envelope needs the rest); pass large inputs by reference", n, awslimits.EventBridgeMaxEntryToQueueBytes)
	}
	return raw, nil
}

func problems(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			out = append(out, loc+": "+e.Message)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "; ")
}

// newTraceID is a W3C trace id (32 hex digits).
func newTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Service) status(ctx context.Context, who Caller, c *class, args map[string]json.RawMessage) Answer {
	var id string
	for k, v := range args {
		if k != rc.ArgJobID {
			return fail(InvalidArgument, false, "unknown argument %q: %s takes only jobId", k, c.StatusTool)
		}
		if json.Unmarshal(v, &id) != nil {
			return fail(InvalidArgument, false, "jobId must be a string")
		}
	}
	if id == "" {
		return fail(InvalidArgument, false, "%s takes jobId, the id %s returned", c.StatusTool, c.StartTool)
	}
	if _, err := uuid.Parse(id); err != nil {
		return fail(NotFound, false, "unknown jobId")
	}
	r, err := s.Store.Get(ctx, id)
	if err != nil {
		return fail(Unavailable, true, "%v", err)
	}
	// Another principal's job, or another class's, is not found: never say it exists.
	if r == nil || r.PrincipalID != who.Principal || (r.Class != "" && r.Class != c.Class) {
		return fail(NotFound, false, "unknown jobId")
	}
	a := Answer{OK: true, JobID: r.JobID, Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ArtifactURI: r.ArtifactURI}
	poll := int64(c.StatusPollAfter() / time.Second)
	switch r.Status {
	case jobs.Queued, jobs.Running:
		a.ResumeHint = &ResumeHint{Action: Poll, PollAfterSec: poll}
	case jobs.Succeeded:
		if json.Valid([]byte(r.Result)) {
			a.Result = json.RawMessage(r.Result)
		}
		if json.Valid([]byte(r.ResultRef)) {
			a.ResultRef = json.RawMessage(r.ResultRef)
		}
		a.ResumeHint = &ResumeHint{Action: Continue}
	case jobs.Failed:
		a.ErrorMessage = r.ErrorMessage
		a.ResumeHint = &ResumeHint{Action: Replan, Reason: "the job failed; do not start it again unless the user confirms"}
	case jobs.FailedToStart:
		a.ErrorMessage = r.ErrorMessage
		a.ResumeHint = &ResumeHint{Action: Replan, Reason: "the job never started; " + c.StartTool + " with the same arguments retries it"}
	}
	return a
}

func (s *Service) list(ctx context.Context, who Caller, args map[string]json.RawMessage) Answer {
	var in struct {
		Status    jobs.Status `json:"status"`
		Limit     *int        `json:"limit"`
		NextToken string      `json:"nextToken"`
	}
	dec := json.NewDecoder(bytes.NewReader(mustJSON(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return fail(InvalidArgument, false, "%s takes status, limit and nextToken: %v", s.Cfg.ListTool, err)
	}
	if in.Status != "" && !in.Status.Valid() {
		return fail(InvalidArgument, false, "status %q: want one of %v", in.Status, jobs.Statuses)
	}
	limit := ListDefault
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > ListMax {
			return fail(InvalidArgument, false, "limit must be 1..%d", ListMax)
		}
		limit = *in.Limit
	}
	var after *jobstore.Cursor
	if in.NextToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		var c jobstore.Cursor
		if err != nil || json.Unmarshal(raw, &c) != nil || c.JobID == "" || c.CreatedAt == "" {
			return fail(InvalidArgument, false, "nextToken is not one this tool returned")
		}
		after = &c
	}
	recs, next, err := s.Store.List(ctx, who.Principal, who.Session, in.Status, int32(limit), after)
	if err != nil {
		return fail(Unavailable, true, "%v", err)
	}
	a := Answer{OK: true, Jobs: []JobSummary{}}
	statusTool := map[string]string{}
	for _, c := range s.Cfg.Classes {
		statusTool[c.Class] = c.StatusTool
	}
	for _, r := range recs {
		a.Jobs = append(a.Jobs, JobSummary{JobID: r.JobID, StatusTool: statusTool[r.Class], Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}
	if next != nil {
		b, _ := json.Marshal(next)
		a.NextToken = base64.RawURLEncoding.EncodeToString(b)
	}
	return a
}

func mustJSON(m map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(m)
	return b
}
