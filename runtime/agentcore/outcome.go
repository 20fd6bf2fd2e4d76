package agentcore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/step"
	"github.com/fleetc/fleetc/runtime/wire"
)

// keepFinished is how long a finished background step's verdict waits to be collected by a
// re-invocation (after that the idempotency record still answers a finished step).
const keepFinished = time.Hour

// job is one step started by an outcome invocation; it runs on after the call that started
// it has returned, so a step may outlive the synchronous limit.
type job struct {
	done chan struct{}
	res  step.Result
}

// wantsOutcome reports whether the caller (the fleet dispatcher) asked for the envelope: by
// its custom header (what AgentCore passes on) or by Accept.
func wantsOutcome(r *http.Request) bool {
	if r.Header.Get(wire.HeaderOutcome) != "" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == wire.OutcomeMediaType {
			return true
		}
	}
	return false
}

// invokeOutcome runs the body as a background step and answers with an envelope, always
// HTTP 200: the verdict if the step ends within the sync limit, else busy. A re-invocation of
// the same work in the same session joins the running step instead of starting another.
func (s *Server) invokeOutcome(w http.ResponseWriter, r *http.Request, body []byte, session string) {
	sum := sha256.Sum256(body)
	key := session + "/" + hex.EncodeToString(sum[:])
	s.mu.Lock()
	if s.jobs == nil {
		s.jobs = map[string]*job{}
	}
	j, running := s.jobs[key]
	if !running {
		j = &job{done: make(chan struct{})}
		s.jobs[key] = j
		id := session + "#" + strconv.FormatInt(s.seq.Add(1), 10)
		attempt, err := strconv.Atoi(r.Header.Get(wire.HeaderAttempt))
		if err != nil || attempt < 1 {
			attempt = 1
		}
		d := step.Delivery{MessageID: id, Body: body, Attempt: attempt, TraceParent: r.Header.Get("traceparent")}
		s.busy.Add(1)
		s.touch()
		s.running.Add(1)
		go func() {
			defer s.running.Done()
			defer func() { s.busy.Add(-1); s.touch() }()
			j.res = s.Worker.Process(s.background(), d)
			close(j.done)
			time.AfterFunc(keepFinished, func() { s.forget(key, j) })
		}()
	}
	s.mu.Unlock()

	limit := s.SyncLimit
	if limit <= 0 {
		limit = dispatch.DefaultSyncLimit
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-j.done:
		s.forget(key, j)
		writeOutcome(w, envelope(j.res))
	case <-t.C:
		writeOutcome(w, wire.OutcomeEnvelope{Outcome: wire.OutcomeBusy, RetryAfterSeconds: 1,
			Message: "the step is still running; ask again"})
	case <-r.Context().Done():
		// The caller left; the step runs on and its verdict waits for the next call.
	}
}

// forget drops a job once its verdict has been delivered (or has waited too long).
func (s *Server) forget(key string, j *job) {
	s.mu.Lock()
	if s.jobs[key] == j {
		delete(s.jobs, key)
	}
	s.mu.Unlock()
}

// background is the context of steps that outlive their request: it ends only when the
// server's drain budget is spent.
func (s *Server) background() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bgCtx == nil {
		s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	}
	return s.bgCtx
}

// writeOutcome answers an outcome invocation: always HTTP 200, so AgentCore passes it on
// instead of turning it into a RuntimeClientError.
func writeOutcome(w http.ResponseWriter, e wire.OutcomeEnvelope) {
	e.Format = wire.EnvelopeFormat
	w.Header().Set("Content-Type", wire.OutcomeMediaType)
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(e)
}

// envelope maps the worker's verdict to the dispatcher's envelope.
func envelope(res step.Result) wire.OutcomeEnvelope {
	e := wire.OutcomeEnvelope{}
	if res.Reason != nil {
		e.Code, e.Message = res.Reason.Code, res.Reason.Message
	}
	secs := int((res.Delay + time.Second - 1) / time.Second)
	switch res.Action {
	case queue.Delete:
		e.Outcome, e.Output, e.Duplicate = wire.OutcomeDone, res.Output, res.Duplicate
		if len(e.Output) == 0 {
			e.Output = json.RawMessage("null")
		}
	case queue.Release:
		e.Outcome, e.RetryAfterSeconds = wire.OutcomeRetry, secs
		if e.Code == wire.Busy {
			// Another invocation holds the work's lease (e.g. a session that moved).
			e.Outcome, e.RetryAfterSeconds = wire.OutcomeBusy, max(secs, 1)
		}
	case queue.DeadLetter:
		e.Outcome = wire.OutcomeDeadLetter
	default: // Leave: the lease went to another claimant, which decides
		e.Outcome, e.RetryAfterSeconds = wire.OutcomeBusy, 1
	}
	return e
}
