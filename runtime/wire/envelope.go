// Package wire is the vocabulary fleet-worker's modes share on the wire: the message
// envelopes a step arrives in, the outcome envelope the AgentCore runtime answers the
// dispatcher with, and the reason codes of every verdict. It imports only the standard
// library, so a mode that only moves bytes (the dispatcher) need not link the worker.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Kinds of message body the worker accepts.
const (
	KindEventBridge = "eventbridge" // EventBridge envelope (rule target = queue)
	KindSFN         = "sfn"         // Step Functions .waitForTaskToken task
	// KindSFNInvoke is a Step Functions task invoked synchronously (lambda:invoke in Express
	// executions): the task shape without a TaskToken; the result is the invocation's answer.
	KindSFNInvoke = "sfn-invoke"
	KindRaw       = "raw" // a bare detail object (direct producers, AgentCore)
)

// Envelope is a parsed message body.
type Envelope struct {
	Kind        string
	EventID     string // EventBridge id
	TaskToken   string // SFN
	ExecutionID string // SFN
	State       string // SFN
	EnteredTime string // SFN: $$.State.EnteredTime, distinguishes loop iterations
	TraceID     string
	Detail      json.RawMessage // the step input
	// Deadline of the run, when the producer gave one: SFN bodies may carry
	// "deadline" (RFC 3339) or "entered_time" + "timeout_seconds" (the
	// task's TimeoutSeconds); any detail may carry "deadline".
	Deadline time.Time
	// Expires is when the consumed event's ttl_seconds (the seed's envelope) runs out: its
	// time (EventBridge) or the task's entered_time (Step Functions) plus the TTL; a bare
	// detail has no time of its own and counts from when the queue accepted it (CountFrom).
	// Zero when the detail carries no ttl_seconds or there is no time to count from.
	Expires time.Time
	// ttl is detail.ttl_seconds, nil when absent.
	ttl *time.Duration
	// ModelPolicy is detail.model_policy: the routing policy the event asks for ("" = the
	// class's default).
	ModelPolicy string
}

// HeaderTraceID carries the conversation's trace id on the worker's request to its handler,
// and on a handler's call to the async tools, so a job joins the conversation that started it.
const HeaderTraceID = "X-Fleet-Trace-Id"

// Detail fields of the seed's envelope the worker acts on.
const (
	FieldTTLSeconds  = "ttl_seconds"
	FieldModelPolicy = "model_policy"
	// FieldConversationID names the conversation a step belongs to (the seed's envelope);
	// without it the business trace id stands for the conversation.
	FieldConversationID = "conversation_id"
)

// ConversationID is detail.conversation_id, else the trace id.
func (e *Envelope) ConversationID() string {
	if c := DetailField(e.Detail, FieldConversationID); c != "" {
		return c
	}
	return e.TraceID
}

// FallbackKey is the idempotency key when the config names no fields:
// the EventBridge event id, or execution id + "/" + state for SFN, plus
// "/" + entered time when given: a workflow that loops back to a state
// does new work on each pass, while the state's own retries (same entered
// time, new retry count) are the same work and share the key.
func (e *Envelope) FallbackKey() string {
	switch e.Kind {
	case KindEventBridge:
		return e.EventID
	case KindSFN, KindSFNInvoke:
		if e.ExecutionID != "" && e.State != "" {
			if e.EnteredTime != "" {
				return e.ExecutionID + "/" + e.State + "/" + e.EnteredTime
			}
			return e.ExecutionID + "/" + e.State
		}
	}
	return ""
}

// ParseEnvelope recognises the two contract shapes and bare detail objects.
func ParseEnvelope(body []byte) (*Envelope, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if top == nil {
		return nil, errors.New("body is null")
	}
	e := &Envelope{}
	var sent time.Time // when the work was sent, for ttl_seconds
	var err error
	_, hasDetailType := top["detail-type"]
	invoked := !hasDetailType && top["execution_id"] != nil && top["state"] != nil && top["detail"] != nil
	switch {
	case top["TaskToken"] != nil || invoked:
		sent, err = e.fromSFN(top)
	case hasDetailType && top["detail"] != nil:
		sent, err = e.fromEventBridge(top)
	default:
		e.Kind = KindRaw
		e.Detail = body
	}
	if err != nil {
		return nil, err
	}
	if err := e.readDetail(sent); err != nil {
		return nil, err
	}
	return e, nil
}

// str is top[k] when it is a JSON string, else "".
func str(m map[string]json.RawMessage, k string) string {
	var s string
	if raw, ok := m[k]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// fromSFN reads a Step Functions task (with a TaskToken) or direct invocation; it returns
// when the state was entered, for ttl_seconds.
func (e *Envelope) fromSFN(top map[string]json.RawMessage) (sent time.Time, err error) {
	e.Kind = KindSFNInvoke
	if top["TaskToken"] != nil {
		e.Kind = KindSFN
		e.TaskToken = str(top, "TaskToken")
		if e.TaskToken == "" {
			return sent, errors.New("TaskToken is not a non-empty string")
		}
	}
	e.ExecutionID = str(top, "execution_id")
	e.State = str(top, "state")
	e.EnteredTime = str(top, "entered_time")
	if e.EnteredTime != "" {
		if t, err := time.Parse(time.RFC3339Nano, e.EnteredTime); err == nil {
			sent = t
		}
	}
	e.TraceID = str(top, "trace_id")
	if d, ok := top["detail"]; ok {
		e.Detail = d
	} else {
		// The seed's ASL puts fields at the top level beside TaskToken.
		rest := map[string]json.RawMessage{}
		for k, v := range top {
			switch k {
			case "TaskToken", "execution_id", "state", "deadline", "entered_time", "timeout_seconds":
			default:
				rest[k] = v
			}
		}
		e.Detail, _ = json.Marshal(rest)
	}
	if s := str(top, "deadline"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return sent, fmt.Errorf("deadline: %w", err)
		}
		e.Deadline = t
	} else if s := str(top, "entered_time"); s != "" {
		var secs int64
		if raw, ok := top["timeout_seconds"]; ok {
			if err := json.Unmarshal(raw, &secs); err != nil {
				return sent, fmt.Errorf("timeout_seconds: %w", err)
			}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return sent, fmt.Errorf("entered_time: %w", err)
		}
		if secs > 0 {
			e.Deadline = t.Add(time.Duration(secs) * time.Second)
		}
	}
	return sent, nil
}

// fromEventBridge reads an EventBridge event; it returns the event's time, for ttl_seconds.
func (e *Envelope) fromEventBridge(top map[string]json.RawMessage) (sent time.Time, err error) {
	e.Kind = KindEventBridge
	e.EventID = str(top, "id")
	e.Detail = top["detail"]
	if s := str(top, "time"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return sent, fmt.Errorf("time: %w", err)
		}
		sent = t
	}
	return sent, nil
}

// readDetail reads what every shape carries in its detail: the trace id (when the envelope
// had none), model_policy, ttl_seconds (counted from sent) and a deadline.
func (e *Envelope) readDetail(sent time.Time) error {
	var detail map[string]json.RawMessage
	if err := json.Unmarshal(e.Detail, &detail); err != nil || detail == nil {
		return errors.New("detail is not a JSON object")
	}
	if e.TraceID == "" {
		e.TraceID = str(detail, "trace_id")
	}
	if raw, ok := detail[FieldModelPolicy]; ok {
		if err := json.Unmarshal(raw, &e.ModelPolicy); err != nil || e.ModelPolicy == "" {
			return errors.New("detail.model_policy is not a non-empty string")
		}
	}
	if raw, ok := detail[FieldTTLSeconds]; ok {
		var ttl int64
		if err := json.Unmarshal(raw, &ttl); err != nil || ttl < 0 {
			return errors.New("detail.ttl_seconds is not a non-negative whole number")
		}
		d := time.Duration(ttl) * time.Second
		e.ttl = &d
		e.CountFrom(sent)
	}
	if e.Deadline.IsZero() {
		if s := str(detail, "deadline"); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return fmt.Errorf("detail.deadline: %w", err)
			}
			e.Deadline = t
		}
	}
	return nil
}

// CountFrom starts the ttl_seconds clock at sent when the body gave none: a bare detail
// counts from its queue's SentTimestamp. A zero sent, or a clock already started, is
// left alone.
func (e *Envelope) CountFrom(sent time.Time) {
	if e.ttl != nil && e.Expires.IsZero() && !sent.IsZero() {
		e.Expires = sent.Add(*e.ttl)
	}
}

// DetailField returns detail[field] as a string ("" when absent); numbers
// and other scalars are returned in their JSON form.
func DetailField(detail json.RawMessage, field string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(detail, &m) != nil {
		return ""
	}
	raw, ok := m[field]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
