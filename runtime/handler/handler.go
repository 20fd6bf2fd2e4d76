// Package handler runs one step: the class's own code behind exec or http,
// or the llm handler (runtime/llm) through the model router.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fleetc/fleetc/runtime/config"
)

// Request is one step's input and context.
type Request struct {
	Class   string // agent class
	Key     string // idempotency key of the work (stable across deliveries)
	TraceID string // detail.trace_id
	// Conversation is the conversation the step belongs to (detail.conversation_id, else
	// the trace id): the session of the async tool calls an llm step makes.
	Conversation string
	TraceParent  string          // W3C traceparent, when the producer set one
	Attempt      int             // 1-based delivery attempt
	Deadline     time.Time       // the step's own deadline (also on ctx)
	Input        json.RawMessage // the event detail (claim check already resolved)
	// ModelPolicy is the policy the event picked (detail.model_policy, one of the class's
	// allowed policies); "" = the class's default.
	ModelPolicy string
}

// Handler runs a step. Errors should be *retry.Error so the queue knows
// whether to retry; anything else is treated as retryable.
type Handler interface {
	Handle(ctx context.Context, req Request) (json.RawMessage, error)
}

// Func adapts a function to Handler.
type Func func(ctx context.Context, req Request) (json.RawMessage, error)

// Handle calls f.
func (f Func) Handle(ctx context.Context, req Request) (json.RawMessage, error) { return f(ctx, req) }

// LLMFactory builds the llm handler (system prompt, tools, max tokens) on top
// of the model router configured by models. fleet-worker wires runtime/llm in
// (runtime/worker.Build); this package does not depend on it.
type LLMFactory func(h config.Handler, models config.Models) (Handler, error)

// Options tune New.
type Options struct {
	LLM    LLMFactory // nil: an llm config is a startup error
	Stderr StderrFunc // each line an exec handler writes to stderr (nil: kept for errors only)
}

// ErrNoLLM is returned for an llm handler when no LLMFactory is wired in.
var ErrNoLLM = errors.New("handler type llm: no model router in this build")

// New builds the handler a config names.
func New(c *config.Config, opts Options) (Handler, error) {
	switch c.Handler.Type {
	case config.HandlerExec:
		h, err := NewExec(c.Handler.Command)
		if err != nil {
			return nil, err
		}
		h.InheritEnv = c.Handler.InheritEnv
		h.Stderr = opts.Stderr
		return h, nil
	case config.HandlerHTTP:
		return NewHTTP(c.Handler.URL, nil)
	case config.HandlerLLM:
		if opts.LLM == nil {
			return nil, ErrNoLLM
		}
		return opts.LLM(c.Handler, c.Models)
	default:
		return nil, fmt.Errorf("unknown handler type %q", c.Handler.Type)
	}
}

// failure is the optional error object a handler may return to classify itself (exec: on
// stdout at any exit code; http: as the body at any status). With a 2xx or exit 0 it
// decides everything; with an error status the status still decides retryability.
type failure struct {
	Error *struct {
		Code              string `json:"code"`
		Message           string `json:"message"`
		Retryable         *bool  `json:"retryable"`
		RetryAfterSeconds int    `json:"retry_after_seconds"`
	} `json:"error"`
}
