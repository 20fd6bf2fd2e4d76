package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/wire"
)

// EventKind is a streamed answer's event type: Converse's stream vocabulary, which both
// wire formats map onto (an OpenAI SSE chunk becomes one or more events).
type EventKind int

const (
	EventMessageStart EventKind = iota + 1 // the assistant turn begins
	EventBlockStart                        // a tool-use block begins (ToolUse carries ID and Name)
	EventBlockDelta                        // Text, or ToolInput (a piece of the JSON arguments)
	EventBlockStop                         // the block at Index is complete
	EventMessageStop                       // StopReason
	EventMetadata                          // Usage, the last event
)

// StreamEvent is one event of a streamed answer.
type StreamEvent struct {
	Kind       EventKind
	Index      int // content block index
	ToolUse    *ToolUse
	Text       string
	ToolInput  string
	StopReason string
	Usage      Usage
	// Logprobs, on an EventBlockDelta with Text, is an OpenAI-compatible target's logprobs
	// object for that piece of text.
	Logprobs json.RawMessage
	// Meta says who answers: on EventMessageStart always (the router fills Policy,
	// Deployment and, when the provider's wire names no model, Model), and on
	// EventMetadata when the stream's last chunks said more than its first.
	Meta *AnswerMeta
}

// AnswerMeta is what a streamed answer says of itself, besides its content.
type AnswerMeta struct {
	Model                          string // the model that answers, as its provider names it
	Policy, Deployment             string // set by the router
	SystemFingerprint, ServiceTier string // an OpenAI-compatible target's fields of those names
}

// Stream is a provider's streamed answer. Recv returns io.EOF after the last event; any
// other error ends the stream (a *ProviderError when the provider sent one).
type Stream interface {
	Recv() (StreamEvent, error)
	Close() error
}

// StreamProvider is a Provider that can stream. ChatStream returns once the answer has
// begun (status and headers): an error answer is an error here, not an event.
type StreamProvider interface {
	ChatStream(ctx context.Context, model string, req *Request) (Stream, error)
}

// CodeMidStream is the step error when a stream failed after its first event reached the
// caller: nothing can be retried or fallen back to without the caller seeing it twice.
const CodeMidStream = wire.ModelStreamInterrupted

// ChatStream routes req like Chat, sending the answer to emit as it arrives. Retries and
// fallbacks happen only before the first event is emitted; a failure after that ends the
// call with CodeMidStream (retryable by the queue: the step runs again). The returned
// Response is the assembled answer (usage included) for accounting; emit's own error
// (the caller went away) ends the call too.
func (r *Router) ChatStream(ctx context.Context, policy string, req *Request, emit func(StreamEvent) error) (*Response, error) {
	st := &streamState{emit: emit}
	return r.chat(ctx, policy, req, st)
}

// streamState follows one streamed call across attempts.
type streamState struct {
	emit      func(StreamEvent) error
	committed bool // an event reached the caller: no more retries or fallbacks
}

// assembler builds the Response a stream amounts to. Each block's text and tool input
// grow in a strings.Builder (amortised appends: linear in the answer, where += copied the
// whole text per delta), and the content held is counted against MaxResponseBytes.
type assembler struct {
	resp   Response
	blocks map[int]*Block
	order  []int
	text   map[int]*strings.Builder
	input  map[int]*strings.Builder
	size   int  // bytes of content held: text, tool ids, names and inputs, blockCost a block
	ended  bool // the metadata event came: the stream is complete
}

// blockCost is what a block counts against MaxResponseBytes besides its content, so a
// stream of empty blocks cannot grow without bound either.
const blockCost = 64

// add takes one event into the answer; past MaxResponseBytes it refuses it.
func (a *assembler) add(ev StreamEvent) error {
	if a.blocks == nil {
		a.blocks, a.text, a.input = map[int]*Block{}, map[int]*strings.Builder{}, map[int]*strings.Builder{}
		a.resp.Message.Role = RoleAssistant
	}
	a.size += len(ev.Text) + len(ev.ToolInput)
	if ev.ToolUse != nil {
		a.size += len(ev.ToolUse.ID) + len(ev.ToolUse.Name)
	}
	block := func() *Block {
		b := a.blocks[ev.Index]
		if b == nil {
			b = &Block{}
			a.blocks[ev.Index] = b
			a.size += blockCost
			a.order = append(a.order, ev.Index)
		}
		return b
	}
	builder := func(m map[int]*strings.Builder) *strings.Builder {
		sb := m[ev.Index]
		if sb == nil {
			sb = &strings.Builder{}
			m[ev.Index] = sb
		}
		return sb
	}
	switch ev.Kind {
	case EventBlockStart:
		if ev.ToolUse != nil {
			tu := *ev.ToolUse
			block().ToolUse = &tu
			builder(a.input)
		}
	case EventBlockDelta:
		block()
		if ev.ToolInput != "" {
			builder(a.input).WriteString(ev.ToolInput)
		} else {
			builder(a.text).WriteString(ev.Text)
		}
	case EventMessageStop:
		a.resp.StopReason = ev.StopReason
	case EventMetadata:
		a.resp.Usage = ev.Usage
		a.ended = true
	}
	if a.size > MaxResponseBytes {
		return &ProviderError{Status: 502, Code: "UnexpectedOutput",
			Message: fmt.Sprintf("the streamed answer is over %d bytes (router.MaxResponseBytes)", MaxResponseBytes)}
	}
	return nil
}

func (a *assembler) response(model string) *Response {
	resp := a.resp
	resp.Model = model
	resp.Message.Role = RoleAssistant
	for _, i := range a.order {
		b := *a.blocks[i]
		if t := a.text[i]; t != nil {
			b.Text = t.String()
		}
		if b.ToolUse != nil {
			in := a.input[i].String()
			if in == "" {
				in = "{}"
			}
			b.ToolUse.Input = []byte(in)
		}
		resp.Message.Content = append(resp.Message.Content, b)
	}
	return &resp
}

// replay turns a whole answer into the events a stream of it would have had, for a
// provider that cannot stream. The answer's logprobs cover its whole text, so they ride
// on the first text delta only: a client concatenating the deltas' logprobs gets them once.
func replay(resp *Response) []StreamEvent {
	evs := []StreamEvent{{Kind: EventMessageStart, Meta: &AnswerMeta{Model: resp.Model, SystemFingerprint: resp.SystemFingerprint, ServiceTier: resp.ServiceTier}}}
	logprobs := resp.Logprobs
	for i, b := range resp.Message.Content {
		switch {
		case b.ToolUse != nil:
			evs = append(evs, StreamEvent{Kind: EventBlockStart, Index: i, ToolUse: &ToolUse{ID: b.ToolUse.ID, Name: b.ToolUse.Name}},
				StreamEvent{Kind: EventBlockDelta, Index: i, ToolInput: string(b.ToolUse.Input)})
		default:
			evs = append(evs, StreamEvent{Kind: EventBlockDelta, Index: i, Text: b.Text, Logprobs: logprobs})
			logprobs = nil
		}
		evs = append(evs, StreamEvent{Kind: EventBlockStop, Index: i})
	}
	return append(evs, StreamEvent{Kind: EventMessageStop, StopReason: resp.StopReason}, StreamEvent{Kind: EventMetadata, Usage: resp.Usage})
}

// stream is one streamed attempt: it opens the provider's stream and relays its events;
// the first event commits the call.
func (st *streamState) stream(ctx context.Context, policy string, d *deployment, req *Request) (*Response, error) {
	sp, ok := d.Provider.(StreamProvider)
	if !ok {
		resp, err := d.Provider.Chat(ctx, d.Model, req)
		if err != nil {
			return nil, err
		}
		for _, ev := range replay(resp) {
			st.stamp(&ev, policy, d)
			st.committed = true
			if err := st.emit(ev); err != nil {
				return nil, &callerGone{err}
			}
		}
		return resp, nil
	}
	s, err := sp.ChatStream(ctx, d.Model, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var a assembler
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			// Complete means the stop event and then the metadata (usage), the last event
			// in both wire formats: a stream cut before either is an error, not an answer.
			if a.resp.StopReason == "" || !a.ended {
				return nil, &ProviderError{Err: fmt.Errorf("%s: the stream ended before its stop and metadata events", d.Name)}
			}
			return a.response(d.Model), nil
		}
		if err != nil {
			return nil, err
		}
		if err := a.add(ev); err != nil {
			return nil, err
		}
		st.stamp(&ev, policy, d)
		st.committed = true
		if err := st.emit(ev); err != nil {
			return nil, &callerGone{err}
		}
	}
}

// stamp names the policy and deployment on the event that starts the answer (and the
// deployment's model id when the provider's wire named none), so the caller can say who
// answered before it sends its first byte.
func (st *streamState) stamp(ev *StreamEvent, policy string, d *deployment) {
	if ev.Kind != EventMessageStart {
		return
	}
	m := AnswerMeta{}
	if ev.Meta != nil {
		m = *ev.Meta
	}
	m.Policy, m.Deployment = policy, d.Name
	if m.Model == "" {
		m.Model = d.Model
	}
	ev.Meta = &m
}

// callerGone is emit's failure: the client stopped reading.
type callerGone struct{ err error }

func (e *callerGone) Error() string { return "the caller stopped reading the stream: " + e.err.Error() }
func (e *callerGone) Unwrap() error { return e.err }

// midStreamError is the final error of a stream that failed after it was committed.
func midStreamError(err error, policy string, started time.Time) *retry.Error {
	return &retry.Error{Code: CodeMidStream, Retryable: true, Err: err,
		Message: fmt.Sprintf("policy %s: the stream failed %v after it began: %v", policy, time.Since(started).Round(time.Millisecond), err)}
}
