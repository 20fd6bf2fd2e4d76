package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/fleetc/fleetc/runtime/router"
)

// The streamed Responses API answer: server-sent events, each an "event: <type>" line and
// a data line whose JSON carries the same type and a sequence_number. response.created and
// response.in_progress; per output item output_item.added, then for a message
// content_part.added, output_text.delta…, output_text.done, content_part.done, and for a
// function call function_call_arguments.delta…, function_call_arguments.done; then
// output_item.done; the stream ends with response.completed or response.incomplete (no
// [DONE]), or, when it fails after it began, an error event and response.failed.

// Responses stream event types.
const (
	EventCreated        = "response.created"
	EventInProgress     = "response.in_progress"
	EventItemAdded      = "response.output_item.added"
	EventItemDone       = "response.output_item.done"
	EventPartAdded      = "response.content_part.added"
	EventPartDone       = "response.content_part.done"
	EventTextDelta      = "response.output_text.delta"
	EventTextDone       = "response.output_text.done"
	EventArgumentsDelta = "response.function_call_arguments.delta"
	EventArgumentsDone  = "response.function_call_arguments.done"
	EventCompleted      = "response.completed"
	EventIncomplete     = "response.incomplete"
	EventFailed         = "response.failed"
	EventError          = "error"
)

const (
	noLogprobs         = "[]" // a text event's logprobs when the target sent none
	outputTextPart     = "output_text"
	itemMessage        = "message"
	itemFunctionCall   = "function_call"
	messageItemPrefix  = "msg"
	functionItemPrefix = "fc"
)

// ResponsesEvent is one streamed event; the fields each type carries are set.
type ResponsesEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *Response       `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           *OutputItem     `json:"item,omitempty"`
	Part           *OutputPart     `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
	// The error event: code and message as the Responses API sends them, and the same
	// again under "error", the chat-completions shape, which the openai SDKs raise.
	Code    string     `json:"code,omitempty"`
	Message string     `json:"message,omitempty"`
	Error   *wireError `json:"error,omitempty"`
}

// streamItem is an output item being streamed.
type streamItem struct {
	out      int // its index in the response's output
	text     strings.Builder
	args     strings.Builder
	logprobs []json.RawMessage
}

// ResponsesStreamWriter writes router events as a Responses API event stream.
type ResponsesStreamWriter struct {
	w     io.Writer
	flush func()
	seq   int
	resp  *Response
	open  map[int]*streamItem // block index → item
	stop  string
	usage router.Usage
}

// NewResponsesStreamWriter writes to w (flushed after each event when it is an
// http.Flusher); resp is the response begun (NewResponse).
func NewResponsesStreamWriter(w io.Writer, resp *Response) *ResponsesStreamWriter {
	sw := &ResponsesStreamWriter{w: w, flush: func() {}, resp: resp, open: map[int]*streamItem{}}
	if f, ok := w.(http.Flusher); ok {
		sw.flush = f.Flush
	}
	return sw
}

func (sw *ResponsesStreamWriter) write(ev *ResponsesEvent) error {
	ev.SequenceNumber = sw.seq
	sw.seq++
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(sw.w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil {
		return err
	}
	sw.flush()
	return nil
}

// snapshot is the response as it stands, for the events that carry it whole.
func (sw *ResponsesStreamWriter) snapshot() *Response {
	r := *sw.resp
	r.Output = slices.Clone(sw.resp.Output)
	return &r
}

func intp(i int) *int       { return &i }
func strp(s string) *string { return &s }

// Event writes the events one router event amounts to.
func (sw *ResponsesStreamWriter) Event(ev router.StreamEvent) error {
	if m := ev.Meta; m != nil {
		// A later event that names no model keeps the one named before.
		keep(&sw.resp.Model, m.Model)
		keep(&sw.resp.ServiceTier, m.ServiceTier)
	}
	switch ev.Kind {
	case router.EventMessageStart:
		if err := sw.write(&ResponsesEvent{Type: EventCreated, Response: sw.snapshot()}); err != nil {
			return err
		}
		return sw.write(&ResponsesEvent{Type: EventInProgress, Response: sw.snapshot()})
	case router.EventBlockStart:
		if ev.ToolUse == nil {
			return nil
		}
		return sw.addItem(ev.Index, OutputItem{Type: itemFunctionCall, Status: StatusInProgress, CallID: ev.ToolUse.ID,
			Name: ev.ToolUse.Name}, functionItemPrefix)
	case router.EventBlockDelta:
		return sw.delta(ev)
	case router.EventBlockStop:
		return sw.closeItem(ev.Index)
	case router.EventMessageStop:
		sw.stop = ev.StopReason
		return sw.closeAll()
	case router.EventMetadata:
		sw.usage = ev.Usage
	}
	return nil
}

// addItem opens an output item for block index i.
func (sw *ResponsesStreamWriter) addItem(i int, item OutputItem, prefix string) error {
	it := &streamItem{out: len(sw.resp.Output)}
	item.ID = ItemID(prefix, sw.resp.ID, it.out)
	sw.resp.Output = append(sw.resp.Output, item)
	sw.open[i] = it
	added := item
	return sw.write(&ResponsesEvent{Type: EventItemAdded, OutputIndex: intp(it.out), Item: &added})
}

func (sw *ResponsesStreamWriter) delta(ev router.StreamEvent) error {
	it := sw.open[ev.Index]
	if ev.ToolInput != "" {
		if it == nil || sw.resp.Output[it.out].Type != itemFunctionCall {
			return fmt.Errorf("tool input for block %d, which is no open tool call", ev.Index)
		}
		it.args.WriteString(ev.ToolInput)
		return sw.write(&ResponsesEvent{Type: EventArgumentsDelta, ItemID: sw.resp.Output[it.out].ID, OutputIndex: intp(it.out), Delta: strp(ev.ToolInput)})
	}
	if ev.Text == "" && len(ev.Logprobs) == 0 {
		return nil
	}
	if it == nil {
		if err := sw.addItem(ev.Index, OutputItem{Type: itemMessage, Status: StatusInProgress, Role: router.RoleAssistant, Content: []OutputPart{}}, messageItemPrefix); err != nil {
			return err
		}
		it = sw.open[ev.Index]
		part := OutputPart{Type: outputTextPart, Annotations: []any{}}
		if err := sw.write(&ResponsesEvent{Type: EventPartAdded, ItemID: sw.resp.Output[it.out].ID, OutputIndex: intp(it.out), ContentIndex: intp(0), Part: &part}); err != nil {
			return err
		}
	}
	it.text.WriteString(ev.Text)
	lp := textLogprobs(ev.Logprobs)
	if lp != nil {
		var entries []json.RawMessage
		if json.Unmarshal(lp, &entries) == nil {
			it.logprobs = append(it.logprobs, entries...)
		}
	} else {
		lp = json.RawMessage(noLogprobs)
	}
	return sw.write(&ResponsesEvent{Type: EventTextDelta, ItemID: sw.resp.Output[it.out].ID, OutputIndex: intp(it.out),
		ContentIndex: intp(0), Delta: strp(ev.Text), Logprobs: lp})
}

// closeItem ends block i's item, if one is open: its done events, with the whole text or
// arguments.
func (sw *ResponsesStreamWriter) closeItem(i int) error {
	it := sw.open[i]
	if it == nil {
		return nil
	}
	delete(sw.open, i)
	item := &sw.resp.Output[it.out]
	item.Status = StatusCompleted
	if item.Type == itemFunctionCall {
		args := it.args.String()
		if args == "" {
			args = "{}"
		}
		item.Arguments = args
		if err := sw.write(&ResponsesEvent{Type: EventArgumentsDone, ItemID: item.ID, OutputIndex: intp(it.out), Arguments: strp(args), Name: item.Name}); err != nil {
			return err
		}
	} else {
		lp := json.RawMessage(noLogprobs)
		if len(it.logprobs) > 0 {
			lp, _ = json.Marshal(it.logprobs)
		}
		part := OutputPart{Type: outputTextPart, Text: it.text.String(), Annotations: []any{}, Logprobs: lp}
		item.Content = []OutputPart{part}
		if err := sw.write(&ResponsesEvent{Type: EventTextDone, ItemID: item.ID, OutputIndex: intp(it.out), ContentIndex: intp(0), Text: strp(part.Text), Logprobs: lp}); err != nil {
			return err
		}
		if err := sw.write(&ResponsesEvent{Type: EventPartDone, ItemID: item.ID, OutputIndex: intp(it.out), ContentIndex: intp(0), Part: &part}); err != nil {
			return err
		}
	}
	done := *item
	return sw.write(&ResponsesEvent{Type: EventItemDone, OutputIndex: intp(it.out), Item: &done})
}

// closeAll ends the open items in block order.
func (sw *ResponsesStreamWriter) closeAll() error {
	blocks := make([]int, 0, len(sw.open))
	for i := range sw.open {
		blocks = append(blocks, i)
	}
	slices.Sort(blocks)
	for _, i := range blocks {
		if err := sw.closeItem(i); err != nil {
			return err
		}
	}
	return nil
}

// Done ends a complete stream: response.completed, or response.incomplete when the
// answer stopped at its token limit or a content filter.
func (sw *ResponsesStreamWriter) Done() error {
	if err := sw.closeAll(); err != nil {
		return err
	}
	sw.resp.Status, sw.resp.IncompleteDetails = outcome(sw.stop)
	sw.resp.Usage = responsesUsage(sw.usage)
	typ := EventCompleted
	if sw.resp.Status == StatusIncomplete {
		typ = EventIncomplete
	}
	return sw.write(&ResponsesEvent{Type: typ, Response: sw.snapshot()})
}

// Error ends a stream that failed after it began: an error event, then response.failed.
func (sw *ResponsesStreamWriter) Error(typ, code, msg string) error {
	if err := sw.write(&ResponsesEvent{Type: EventError, Code: code, Message: msg, Error: &wireError{Type: typ, Code: code, Message: msg}}); err != nil {
		return err
	}
	sw.resp.Status, sw.resp.Error = StatusFailed, &ResponseError{Code: code, Message: msg}
	return sw.write(&ResponsesEvent{Type: EventFailed, Response: sw.snapshot()})
}
