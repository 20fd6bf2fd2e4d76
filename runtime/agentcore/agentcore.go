// Package agentcore serves the Bedrock AgentCore Runtime HTTP contract:
// POST /invocations runs one step synchronously, GET /ping reports health
// ("Healthy", or "HealthyBusy" while steps run), on port 8080.
//
// An invocation body is any message shape the worker accepts (EventBridge
// envelope, Step Functions task, or a bare detail object). Idempotency is
// the same as on the queue: a repeated invocation of finished work is
// answered from the stored result.
package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/wire"
)

// SessionHeader carries the AgentCore runtime session id.
const SessionHeader = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"

// Server is the AgentCore HTTP contract around a worker.
type Server struct {
	Worker step.Worker
	Log    *slog.Logger
	// SyncLimit bounds how long an outcome invocation (the fleet dispatcher's) waits for its
	// step before answering busy; 0 = dispatch.DefaultSyncLimit.
	SyncLimit time.Duration

	mu       sync.Mutex
	jobs     map[string]*job // outcome invocations' steps, by session and body
	bgCtx    context.Context
	bgCancel context.CancelFunc
	running  sync.WaitGroup // background steps

	busy       atomic.Int64
	lastUpdate atomic.Int64 // unix seconds of the last status change
	seq        atomic.Int64
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", s.ping)
	mux.HandleFunc("POST /invocations", s.invoke)
	return mux
}

func (s *Server) touch() { s.lastUpdate.Store(time.Now().Unix()) }

func (s *Server) ping(w http.ResponseWriter, _ *http.Request) {
	status := "Healthy"
	if s.busy.Load() > 0 {
		status = "HealthyBusy"
	}
	last := s.lastUpdate.Load()
	if last == 0 {
		last = time.Now().Unix()
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "time_of_last_update": last})
}

type errorBody struct {
	Error struct {
		Code      wire.Code `json:"code"`
		Message   string    `json:"message"`
		Retryable bool      `json:"retryable"`
	} `json:"error"`
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, wire.AgentCoreMaxPayload+1))
	if err != nil || len(body) > wire.AgentCoreMaxPayload {
		writeErr(w, http.StatusRequestEntityTooLarge, wire.PayloadTooLarge, "request above 100 MB or unreadable", false)
		return
	}
	if wantsOutcome(r) {
		s.invokeOutcome(w, r, body, r.Header.Get(SessionHeader))
		return
	}
	s.busy.Add(1)
	s.touch()
	defer func() { s.busy.Add(-1); s.touch() }()
	id := r.Header.Get(SessionHeader)
	if id == "" {
		id = "invocation"
	}
	id = id + "#" + strconv.FormatInt(s.seq.Add(1), 10)
	res := s.Worker.Process(r.Context(), step.Delivery{MessageID: id, Body: body, Attempt: 1, TraceParent: r.Header.Get("traceparent")})
	switch res.Action {
	case queue.Delete:
		out := res.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		w.Header().Set("Content-Type", "application/json")
		if res.Duplicate {
			w.Header().Set("X-Fleet-Duplicate", "true")
		}
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	case queue.Release:
		secs := int((res.Delay + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		code, msg := wire.Retry, "try again later"
		if res.Reason != nil {
			code, msg = res.Reason.Code, res.Reason.Message
		}
		writeErr(w, http.StatusServiceUnavailable, code, msg, true)
	case queue.DeadLetter:
		code, msg := wire.Failed, ""
		if res.Reason != nil {
			code, msg = res.Reason.Code, res.Reason.Message
		}
		writeErr(w, http.StatusUnprocessableEntity, code, msg, false)
	default:
		writeErr(w, http.StatusConflict, wire.LeaseLost, "another invocation owns this work", true)
	}
}

func writeErr(w http.ResponseWriter, status int, code wire.Code, msg string, retryable bool) {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Retryable = code, msg, retryable
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve runs the server on ln until ctx ends, then lets running
// invocations finish within drain.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(sctx)
	// Background steps (outcome invocations) get the rest of the drain budget, then are
	// cancelled; their records' leases let a later invocation take them over.
	bgDone := make(chan struct{})
	go func() { s.running.Wait(); close(bgDone) }()
	select {
	case <-bgDone:
	case <-sctx.Done():
		s.background()
		s.bgCancel()
		<-bgDone
	}
	if err != nil {
		return fmt.Errorf("agentcore: drain: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Run listens on addr (":8080" in AgentCore) and serves until ctx ends.
// Steps renew their own idempotency lease (no queue heartbeat here).
func Run(ctx context.Context, h step.Host, addr string, drain time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.Worker.RenewItself()
	s := &Server{Worker: h.Worker, Log: h.Log}
	if ac := h.Cfg.AgentCore; ac != nil {
		s.SyncLimit = ac.SyncLimit()
	}
	h.Log.Info("agentcore listening", "addr", ln.Addr().String())
	return s.Serve(ctx, ln, drain)
}
