package bedrock

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock/converse"
)

// ContentTypeEventStream is ConverseStream's response media type.
const ContentTypeEventStream = "application/vnd.amazon.eventstream"

// EventWriter writes router events as ConverseStream's answer: AWS event-stream messages
// (:message-type event, :event-type messageStart … metadata, a JSON payload each).
type EventWriter struct {
	w     io.Writer
	flush func()
	enc   *eventstream.Encoder
}

// NewEventWriter writes to w (flushed after each message when it is an http.Flusher).
func NewEventWriter(w io.Writer) *EventWriter {
	ew := &EventWriter{w: w, flush: func() {}, enc: eventstream.NewEncoder()}
	if f, ok := w.(http.Flusher); ok {
		ew.flush = f.Flush
	}
	return ew
}

func (ew *EventWriter) message(msgType, typeHeader, name string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	var h eventstream.Headers
	h.Set(":message-type", eventstream.StringValue(msgType))
	h.Set(typeHeader, eventstream.StringValue(name))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	if err := ew.enc.Encode(ew.w, eventstream.Message{Headers: h, Payload: b}); err != nil {
		return err
	}
	ew.flush()
	return nil
}

// Event writes one event; latencyMs goes into the metadata event.
func (ew *EventWriter) Event(ev router.StreamEvent, latencyMs int64) error {
	e := func(name string, payload any) error { return ew.message("event", ":event-type", name, payload) }
	switch ev.Kind {
	case router.EventMessageStart:
		return e("messageStart", map[string]string{"role": router.RoleAssistant})
	case router.EventBlockStart:
		if ev.ToolUse == nil {
			return nil
		}
		return e("contentBlockStart", map[string]any{"contentBlockIndex": ev.Index,
			"start": map[string]any{"toolUse": map[string]string{"toolUseId": ev.ToolUse.ID, "name": ev.ToolUse.Name}}})
	case router.EventBlockDelta:
		delta := map[string]any{"text": ev.Text}
		if ev.ToolInput != "" {
			delta = map[string]any{"toolUse": map[string]string{"input": ev.ToolInput}}
		}
		return e("contentBlockDelta", map[string]any{"contentBlockIndex": ev.Index, "delta": delta})
	case router.EventBlockStop:
		return e("contentBlockStop", map[string]any{"contentBlockIndex": ev.Index})
	case router.EventMessageStop:
		return e("messageStop", map[string]any{"stopReason": ev.StopReason})
	case router.EventMetadata:
		return e("metadata", map[string]any{"usage": usageFrom(ev.Usage), "metrics": map[string]int64{"latencyMs": latencyMs}})
	}
	return nil
}

// Exception ends a stream that failed after it began, as ConverseStream does: an
// exception message (exceptionType e.g. modelStreamErrorException, internalServerException).
func (ew *EventWriter) Exception(exceptionType, msg string) error {
	return ew.message("exception", ":exception-type", exceptionType, map[string]string{"message": msg})
}

// EventReader reads ConverseStream's answer (AWS event-stream framing) as router events;
// an exception message becomes a *router.ProviderError with its :exception-type.
type EventReader struct {
	body   io.ReadCloser
	in     *bufio.Reader // body, so each message's length can be read before it is decoded
	dec    *eventstream.Decoder
	buf    []byte
	forced bool // a response_format's forced tool: its input is relayed as text
	json   int  // the forced tool's block index + 1 (0: not started)
}

// NewEventReader reads body.
func NewEventReader(body io.ReadCloser) *EventReader {
	return &EventReader{body: body, in: bufio.NewReader(body), dec: eventstream.NewDecoder()}
}

// Close closes the body.
func (r *EventReader) Close() error { return r.body.Close() }

// Recv returns the next event; io.EOF after the last.
func (r *EventReader) Recv() (router.StreamEvent, error) {
	for {
		if err := r.checkLength(); err != nil {
			return router.StreamEvent{}, err
		}
		msg, err := r.dec.Decode(r.in, r.buf[:0])
		if err != nil {
			if errors.Is(err, io.EOF) {
				return router.StreamEvent{}, io.EOF
			}
			return router.StreamEvent{}, &router.ProviderError{Err: fmt.Errorf("ConverseStream: %w", err)}
		}
		r.buf = msg.Payload[:0]
		header := func(name string) string {
			if v := msg.Headers.Get(name); v != nil {
				return v.String()
			}
			return ""
		}
		switch header(":message-type") {
		case "exception", "error":
			code := header(":exception-type")
			if code == "" {
				code = header(":error-code")
			}
			var body struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(msg.Payload, &body)
			if body.Message == "" {
				body.Message = header(":error-message")
			}
			pe := &router.ProviderError{Code: upperFirst(code), Message: body.Message}
			classifyCode(pe)
			return router.StreamEvent{}, pe
		}
		ev, keep, err := r.event(header(":event-type"), msg.Payload)
		if err != nil {
			return router.StreamEvent{}, err
		}
		if keep {
			return ev, nil
		}
	}
}

// checkLength refuses a message whose prelude announces more than
// router.MaxStreamLineBytes: the SDK's decoder buffers a whole message, up to the 4 GiB its
// 32-bit length allows. The prelude's first field is the message's total length.
func (r *EventReader) checkLength() error {
	prelude, err := r.in.Peek(4)
	if err != nil {
		return nil // end of stream or a short read: Decode says which
	}
	if n := binary.BigEndian.Uint32(prelude); n > router.MaxStreamLineBytes {
		return &router.ProviderError{Status: 502, Code: "UnexpectedOutput",
			Message: fmt.Sprintf("ConverseStream: a %d-byte message, over %d (router.MaxStreamLineBytes)", n, router.MaxStreamLineBytes)}
	}
	return nil
}

// upperFirst turns an event-stream exception type (modelStreamErrorException) into the
// error code the JSON API uses (ModelStreamErrorException).
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// streamEvent is the union of ConverseStream event payloads.
type streamEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
	} `json:"delta"`
	StopReason string          `json:"stopReason"`
	Usage      *converse.Usage `json:"usage"`
}

func (r *EventReader) event(typ string, payload []byte) (router.StreamEvent, bool, error) {
	var p streamEvent
	if err := json.Unmarshal(payload, &p); err != nil {
		return router.StreamEvent{}, false, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: typ + " event: " + err.Error()}
	}
	i := p.ContentBlockIndex
	switch typ {
	case "messageStart":
		return router.StreamEvent{Kind: router.EventMessageStart}, true, nil
	case "contentBlockStart":
		if p.Start == nil || p.Start.ToolUse == nil {
			return router.StreamEvent{}, false, nil
		}
		if r.forced && p.Start.ToolUse.Name == jsonTool {
			r.json = i + 1
			return router.StreamEvent{}, false, nil
		}
		return router.StreamEvent{Kind: router.EventBlockStart, Index: i, ToolUse: &router.ToolUse{ID: p.Start.ToolUse.ToolUseID, Name: p.Start.ToolUse.Name}}, true, nil
	case "contentBlockDelta":
		switch {
		case p.Delta == nil:
		case p.Delta.Text != nil:
			return router.StreamEvent{Kind: router.EventBlockDelta, Index: i, Text: *p.Delta.Text}, true, nil
		case p.Delta.ToolUse != nil && r.json == i+1:
			return router.StreamEvent{Kind: router.EventBlockDelta, Index: i, Text: p.Delta.ToolUse.Input}, true, nil
		case p.Delta.ToolUse != nil:
			return router.StreamEvent{Kind: router.EventBlockDelta, Index: i, ToolInput: p.Delta.ToolUse.Input}, true, nil
		}
		return router.StreamEvent{}, false, nil
	case "contentBlockStop":
		return router.StreamEvent{Kind: router.EventBlockStop, Index: i}, true, nil
	case "messageStop":
		stop := p.StopReason
		if r.json > 0 {
			stop = router.StopEndTurn
		}
		return router.StreamEvent{Kind: router.EventMessageStop, StopReason: stop}, true, nil
	case "metadata":
		var u router.Usage
		if p.Usage != nil {
			u = router.Usage{InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens, CacheReadTokens: p.Usage.CacheReadInputTokens}
		}
		return router.StreamEvent{Kind: router.EventMetadata, Usage: u}, true, nil
	}
	return router.StreamEvent{}, false, nil // an event type added later: skipped
}
