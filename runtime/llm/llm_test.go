package llm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/fleetc/fleetc/runtime/events"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/tools"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

type chatFunc func(ctx context.Context, policy string, req *router.Request) (*router.Response, error)

func (f chatFunc) Chat(ctx context.Context, policy string, req *router.Request) (*router.Response, error) {
	return f(ctx, policy, req)
}

type pubs struct {
	mu sync.Mutex
	e  []events.Entry
}

func (p *pubs) Publish(_ context.Context, e events.Entry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.e = append(p.e, e)
	return nil
}

func toolUse(name, args string) *router.Response {
	return &router.Response{StopReason: router.StopToolUse, Message: router.Message{Role: router.RoleAssistant,
		Content: []router.Block{{ToolUse: &router.ToolUse{ID: "t1", Name: name, Input: json.RawMessage(args)}}}}}
}

func TestIterationCapDeadLetters(t *testing.T) {
	calls := 0
	h, err := New(Config{Policy: "p", MaxIterations: 3, Tools: []string{"event:work.requested"}, Events: &pubs{}}, chatFunc(func(context.Context, string, *router.Request) (*router.Response, error) {
		calls++
		return toolUse("emit_work_requested", `{"n":1}`), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(context.Background(), handler.Request{Key: "k", TraceID: "run", Input: json.RawMessage(`"go"`)})
	var re *retry.Error
	if !errors.As(err, &re) || re.Code != CodeMaxIterations || re.Retryable || calls != 3 {
		t.Fatalf("err %v after %d calls: want a final LLMMaxIterations after 3", err, calls)
	}
	if d := (retry.Policy{MaxAttempts: 4}).Decide(err, 1); !d.DeadLetter {
		t.Fatal("a step past the iteration cap must be dead-lettered")
	}
}

func TestEventToolCarriesIdempotencyKey(t *testing.T) {
	p := &pubs{}
	n := 0
	h, err := New(Config{Policy: "p", EventSource: "fleet.workers", Tools: []string{"event:cdk.synth.requested"}, Events: p},
		chatFunc(func(_ context.Context, _ string, req *router.Request) (*router.Response, error) {
			n++
			if n == 1 {
				return toolUse("emit_cdk_synth_requested", `{"stack":"a","region":"x"}`), nil
			}
			res := req.Messages[len(req.Messages)-1].Content[0].ToolResult
			return &router.Response{Model: "m", StopReason: router.StopEndTurn, Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "queued: " + res.Content}}}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Handle(context.Background(), handler.Request{Key: "step-1", TraceID: "run-1", Input: json.RawMessage(`{"q":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	key := IdempotencyKey("run-1", "step-1", "emit_cdk_synth_requested", json.RawMessage(`{"region":"x","stack":"a"}`))
	if len(p.e) != 1 || p.e[0].DetailType != "cdk.synth.requested" || p.e[0].Source != "fleet.workers" || !strings.Contains(string(p.e[0].Detail), key) {
		t.Fatalf("published %+v, want one event carrying %s", p.e, key)
	}
	var res Result
	json.Unmarshal(out, &res)
	if res.Iterations != 2 || !strings.Contains(res.Text, key) {
		t.Fatalf("result %s", out)
	}
}

func TestIdempotencyKeyIsCanonical(t *testing.T) {
	a := IdempotencyKey("r", "s", "t", json.RawMessage(`{"a":1,"b":[1,2]}`))
	b := IdempotencyKey("r", "s", "t", json.RawMessage(`{ "b":[1,2], "a":1 }`))
	if a != b {
		t.Fatal("argument order changed the key")
	}
	for _, other := range []string{IdempotencyKey("r2", "s", "t", json.RawMessage(`{"a":1,"b":[1,2]}`)), IdempotencyKey("r", "s2", "t", json.RawMessage(`{"a":1,"b":[1,2]}`)),
		IdempotencyKey("r", "s", "t2", json.RawMessage(`{"a":1,"b":[1,2]}`)), IdempotencyKey("r", "s", "t", json.RawMessage(`{"a":2,"b":[1,2]}`))} {
		if other == a {
			t.Fatal("run, step, tool and args must each change the key")
		}
	}
}

func TestBadToolsAreStartupErrors(t *testing.T) {
	for _, tools := range [][]string{{"ftp://x"}, {"event:a.b"}, {"https://h/a", "https://g/a"}} {
		if _, err := New(Config{Policy: "p", Tools: tools}, nil); err == nil {
			t.Errorf("tools %v: want a startup error", tools)
		}
	}
}

// async:<class> offers the class's start and status tools and one list_my_jobs, with the
// definitions `fleetc tools` prints; a class that is not async, a missing tools config or a
// renamed async entry is refused at start.
func TestAsyncToolsOffered(t *testing.T) {
	raw, err := os.ReadFile("../../compiler/testdata/golden/async-tools/tools/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.ParseTools("tools.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := tools.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defs, _ := cfg.Definitions()
	var offered []router.Tool
	_, err = New(Config{Policy: "fast", Tools: []string{"async:cdk-synth", "async:cdk-synth"}, Async: svc}, chatFunc(func(_ context.Context, _ string, req *router.Request) (*router.Response, error) {
		offered = req.Tools
		return &router.Response{StopReason: router.StopEndTurn, Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "done"}}}}, nil
	}))
	if err == nil {
		t.Fatal("the same async class twice was accepted")
	}
	h, err := New(Config{Policy: "fast", Tools: []string{"async:cdk-synth"}, Async: svc}, chatFunc(func(_ context.Context, _ string, req *router.Request) (*router.Response, error) {
		offered = req.Tools
		return &router.Response{StopReason: router.StopEndTurn, Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "done"}}}}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), handler.Request{Class: "researcher", Input: json.RawMessage(`"go"`)}); err != nil {
		t.Fatal(err)
	}
	if len(offered) != len(defs) {
		t.Fatalf("offered %d tools, want %d", len(offered), len(defs))
	}
	for i, d := range defs {
		want, _ := json.Marshal(d.InputSchema)
		if offered[i].Name != d.Name || offered[i].Description != d.Description || string(offered[i].Schema) != string(want) {
			t.Errorf("tool %d: %s %s, want %s %s", i, offered[i].Name, offered[i].Schema, d.Name, want)
		}
	}
	for _, bad := range []Config{
		{Policy: "fast", Tools: []string{"async:nope"}, Async: svc},
		{Policy: "fast", Tools: []string{"async:cdk-synth"}},
		{Policy: "fast", Tools: []string{"x=async:cdk-synth"}, Async: svc},
	} {
		if _, err := New(bad, nil); err == nil {
			t.Errorf("tools %v (config %v) accepted", bad.Tools, bad.Async != nil)
		}
	}
}
