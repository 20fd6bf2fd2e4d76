// Package llm is the `llm` handler: a tool-use loop over the model router. The step input
// is the user turn, the system prompt comes from a file, every model call goes through the
// class's policy with the step's deadline as its budget, and the loop stops at a hard cap
// on iterations. Tools are HTTP endpoints or events to other classes; each call carries an
// idempotency key derived from the run, the step, the tool and its arguments, so a
// redelivered step repeats no side effect a tool deduplicates. A tool "async:<class>" offers
// the model the fleet's async tools of that class (start_<class>, get_<class>_status and
// list_my_jobs, the definitions `fleetc tools` prints), run in-process by runtime/tools.
// Every tool call is an execute_tool span under the step's invoke_agent span.
package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/telemetry/genai"
	"github.com/fleetc/fleetc/runtime/tools"
	"github.com/fleetc/fleetc/runtime/wire"
	"github.com/fleetc/fleetc/schemas/jobs"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// DefaultMaxIterations caps the tool-use loop when the config names no cap.
const DefaultMaxIterations = 8

// CodeMaxIterations dead-letters a step whose model never stopped asking for tools:
// running it again would loop again.
const CodeMaxIterations = "LLMMaxIterations"

// Chatter is the router as the handler uses it.
type Chatter interface {
	Chat(ctx context.Context, policy string, req *router.Request) (*router.Response, error)
}

// Publisher sends event tools' events (the worker's EventBridge batcher).
type Publisher interface {
	Publish(ctx context.Context, e events.Entry) error
}

// Config is the handler's setup.
type Config struct {
	Policy        string
	System        string // the prompt text (read from the system prompt file)
	Tools         []string
	MaxTokens     int
	MaxIterations int
	EventSource   string    // source of event tools' events
	Events        Publisher // required when a tool is event:…
	HTTP          *http.Client
	// Async runs the fleet's async tools (runtime/tools on the jobs table and the bus);
	// required when a tool is async:<class>.
	Async *tools.Service
}

// Tool kinds, and the prefixes that name them in a tool string.
const (
	kindHTTP  = "http"
	kindEvent = "event"
	kindAsync = "async"

	prefixEvent = kindEvent + ":"
)

// ToolKinds says which kinds of tool a tool list names (event, async), for the worker to
// wire a publisher or the async tools service only when needed. Malformed entries are
// New's to refuse.
func ToolKinds(specs []string) (events, async bool) {
	for _, s := range specs {
		switch t, _ := parseTool(s); t.kind {
		case kindEvent:
			events = true
		case kindAsync:
			async = true
		}
	}
	return events, async
}

type tool struct {
	spec   router.Tool
	kind   string
	target string // URL or detail-type
}

// Handler runs llm steps.
type Handler struct {
	cfg   Config
	chat  Chatter
	tools map[string]tool
	specs []router.Tool
}

// ReadSystem reads the system prompt file.
func ReadSystem(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("llm handler: system prompt: %w", err)
	}
	return string(b), nil
}

// New checks the tools and builds the handler.
func New(cfg Config, chat Chatter) (*Handler, error) {
	if cfg.Policy == "" {
		return nil, fmt.Errorf("llm handler: no model policy")
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	h := &Handler{cfg: cfg, chat: chat, tools: map[string]tool{}}
	for _, s := range cfg.Tools {
		t, err := parseTool(s)
		if err != nil {
			return nil, err
		}
		ts := []tool{t}
		switch t.kind {
		case kindEvent:
			if cfg.Events == nil {
				return nil, fmt.Errorf("llm handler: tool %q publishes events, but the class has no event bus", s)
			}
		case kindAsync:
			if ts, err = asyncTools(cfg.Async, t.target); err != nil {
				return nil, fmt.Errorf("llm handler: tool %q: %w", s, err)
			}
		}
		for _, t := range ts {
			if prev, dup := h.tools[t.spec.Name]; dup {
				if t.kind == kindAsync && prev.kind == kindAsync && t.spec.Name == cfg.Async.Cfg.ListTool {
					continue // one list_my_jobs for every async class
				}
				return nil, fmt.Errorf("llm handler: two tools are named %q (name them: name=target)", t.spec.Name)
			}
			h.tools[t.spec.Name] = t
			h.specs = append(h.specs, t.spec)
		}
	}
	return h, nil
}

// asyncTools are the start and status tools of one async class plus the list tool, with
// the definitions the tools config gives (the same `fleetc tools` prints).
func asyncTools(svc *tools.Service, class string) ([]tool, error) {
	if svc == nil {
		return nil, fmt.Errorf("the runtime config has no async_tools (fleetc build writes them for the classes the handler names)")
	}
	defs, err := svc.Cfg.Definitions()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range svc.Cfg.Classes {
		if c.Class == class {
			names = []string{c.StartTool, c.StatusTool, svc.Cfg.ListTool}
		}
	}
	if names == nil {
		return nil, fmt.Errorf("%s is not an async tool class of the fleet", class)
	}
	var out []tool
	for _, d := range defs {
		if !slices.Contains(names, d.Name) {
			continue
		}
		schema, err := json.Marshal(d.InputSchema)
		if err != nil {
			return nil, err
		}
		out = append(out, tool{kind: kindAsync, target: class, spec: router.Tool{Name: d.Name, Description: d.Description, Schema: schema}})
	}
	return out, nil
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// parseTool reads "[name=]https://host/path" (an HTTP tool: the arguments are POSTed)
// or "[name=]event:<detail-type>" (an event to other classes, the arguments its detail).
func parseTool(s string) (tool, error) {
	var t tool
	// The class's tools keep their own names; a name= would rename nothing.
	if class, ok, err := rc.ParseAsyncTool(s); ok {
		t.kind, t.target = kindAsync, class
		if err != nil {
			return t, fmt.Errorf("llm handler: %w", err)
		}
		return t, nil
	}
	name, target, named := strings.Cut(s, "=")
	if !named || strings.Contains(name, ":") {
		name, target = "", s
	}
	switch {
	case strings.HasPrefix(target, prefixEvent):
		t.kind, t.target = kindEvent, strings.TrimPrefix(target, prefixEvent)
		if name == "" {
			name = "emit_" + t.target
		}
		t.spec.Description = "Publish a " + t.target + " event; the arguments are its detail."
	case strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://"):
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return t, fmt.Errorf("llm handler: tool %q: not a URL", s)
		}
		t.kind, t.target = kindHTTP, target
		if name == "" {
			name = path.Base(u.Path)
		}
		t.spec.Description = "Call " + target + " with the arguments as a JSON body."
	default:
		return t, fmt.Errorf("llm handler: tool %q: want [name=]https://…, [name=]event:<detail-type> or %s<class>", s, rc.AsyncToolPrefix)
	}
	name = strings.Trim(nonName.ReplaceAllString(name, "_"), "_")
	if name == "" || len(name) > 64 {
		return t, fmt.Errorf("llm handler: tool %q: cannot derive a name (use name=target)", s)
	}
	t.spec.Name = name
	t.spec.Schema = json.RawMessage(`{"type":"object"}`)
	return t, nil
}

// Result is what a finished step returns.
type Result struct {
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
	Model      string `json:"model"`
	Policy     string `json:"policy"`
	Deployment string `json:"deployment"`
	Iterations int    `json:"iterations"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Handle runs the loop: model, tools, model … until the model stops or the cap is hit.
func (h *Handler) Handle(ctx context.Context, req handler.Request) (json.RawMessage, error) {
	input := string(req.Input)
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		input = s // a JSON string is the prompt itself
	}
	msgs := []router.Message{{Role: router.RoleUser, Content: []router.Block{{Text: input}}}}
	var res Result
	policy := h.cfg.Policy
	if req.ModelPolicy != "" {
		policy = req.ModelPolicy // the worker checked it is one of the class's allowed policies
	}
	for i := 1; i <= h.cfg.MaxIterations; i++ {
		resp, err := h.chat.Chat(ctx, policy, &router.Request{System: h.cfg.System, Messages: msgs, Tools: h.specs, MaxTokens: h.cfg.MaxTokens})
		if err != nil {
			return nil, err // a *retry.Error from the router: SpendLimit dead-letters, the rest the queue retries
		}
		res.Iterations = i
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		res.Model, res.Policy, res.Deployment, res.StopReason = resp.Model, resp.Policy, resp.Deployment, resp.StopReason
		uses := resp.ToolUses()
		if len(uses) == 0 {
			res.Text = resp.Text()
			return json.Marshal(res)
		}
		msgs = append(msgs, resp.Message)
		results := router.Message{Role: router.RoleUser}
		for _, u := range uses {
			tctx, span := genai.StartTool(ctx, nil, u.Name, u.ID)
			content, errType := h.callTool(tctx, req, u)
			genai.EndTool(span, errType, content)
			results.Content = append(results.Content, router.Block{ToolResult: &router.ToolResult{ID: u.ID, Content: content, IsError: errType != ""}})
		}
		if ctx.Err() != nil {
			return nil, retry.Retryable(wire.Timeout, ctx.Err())
		}
		msgs = append(msgs, results)
	}
	return nil, &retry.Error{Code: CodeMaxIterations, Message: fmt.Sprintf("the model still asked for tools after %d iterations", h.cfg.MaxIterations)}
}

// IdempotencyKey is the key of one tool call: the run (trace id), the step (its work
// key), the tool and its arguments in canonical form. A redelivered step that makes the
// same call sends the same key.
func IdempotencyKey(run, step, tool string, args json.RawMessage) string {
	canon := args
	var v any
	if json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v) // maps marshal with sorted keys
	}
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(run), []byte(step), []byte(tool), canon} {
		sum.Write(part)
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))[:32]
}

// Error types of failed tool calls (error.type on the execute_tool span), besides an async
// tool's own error code.
const (
	errUnknownTool = "unknown_tool"
	errArguments   = "invalid_arguments"
	errPublish     = "publish_failed"
	errCall        = "call_failed"
	errStatus      = "http_status"
)

// callTool runs one tool call; a failure becomes an error result the model sees, with its
// error type ("" on success).
func (h *Handler) callTool(ctx context.Context, req handler.Request, u *router.ToolUse) (string, string) {
	t, ok := h.tools[u.Name]
	if !ok {
		return fmt.Sprintf("unknown tool %q", u.Name), errUnknownTool
	}
	args := u.Input
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	key := IdempotencyKey(req.TraceID, req.Key, u.Name, args)
	switch t.kind {
	case kindAsync:
		return h.callAsync(ctx, req, u.Name, args, key)
	case kindEvent:
		detail, err := withKey(args, key)
		if err != nil {
			return err.Error(), errArguments
		}
		if err := h.cfg.Events.Publish(ctx, events.Entry{Source: h.cfg.EventSource, DetailType: t.target, Detail: detail, TraceID: req.TraceID}); err != nil {
			return "publish failed: " + err.Error(), errPublish
		}
		return fmt.Sprintf(`{"published":%q,"idempotency_key":%q}`, t.target, key), ""
	default:
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, t.target, bytes.NewReader(args))
		if err != nil {
			return err.Error(), errCall
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Idempotency-Key", key)
		if dl, ok := ctx.Deadline(); ok {
			hr.Header.Set("X-Fleet-Deadline", dl.UTC().Format(time.RFC3339Nano))
		}
		if req.TraceParent != "" {
			hr.Header.Set("traceparent", req.TraceParent)
		}
		resp, err := h.cfg.HTTP.Do(hr)
		if err != nil {
			return "tool call failed: " + err.Error(), errCall
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 != 2 {
			return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body), errStatus
		}
		return string(body), ""
	}
}

// callAsync runs an async tool as the class, in the step's conversation. A start the model
// gave no idempotencyKey gets the call's key, so a redelivered step that starts the same
// job again gets the same job back instead of a second one.
func (h *Handler) callAsync(ctx context.Context, req handler.Request, name string, args json.RawMessage, key string) (string, string) {
	if h.isStart(name) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) == nil && obj != nil {
			if _, ok := obj[rc.ArgIdempotencyKey]; !ok {
				obj[rc.ArgIdempotencyKey], _ = json.Marshal(key)
				args, _ = json.Marshal(obj)
			}
		}
	}
	a := h.cfg.Async.Call(ctx, tools.Caller{Principal: jobs.ClassPrincipal(req.Class), Session: req.Conversation}, name, args)
	out, _ := json.Marshal(a)
	if a.Error != nil {
		return string(out), string(a.Error.Code)
	}
	return string(out), ""
}

func (h *Handler) isStart(name string) bool {
	for _, c := range h.cfg.Async.Cfg.Classes {
		if c.StartTool == name {
			return true
		}
	}
	return false
}

// withKey adds idempotency_key to an object detail (a non-object is wrapped as "input").
func withKey(args json.RawMessage, key string) (json.RawMessage, error) {
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		obj = map[string]any{"input": json.RawMessage(args)}
	}
	obj["idempotency_key"] = key
	return json.Marshal(obj)
}
