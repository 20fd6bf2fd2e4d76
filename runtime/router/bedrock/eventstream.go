package bedrock

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/fleetc/fleetc/runtime/router"
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
