package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/fleetc/fleetc/runtime/router"
)

// The streamed chat completion (stream: true): server-sent events, one chunk per data:
// line, then data: [DONE]; with stream_options.include_usage a last chunk with empty
// choices carries the usage. An error after the stream began is a data: {"error": …}
// chunk, which the openai SDKs and the AI SDK raise as an error.

// Chunk is one chat.completion.chunk.
type Chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
	ServiceTier       string        `json:"service_tier,omitempty"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *WireUsage    `json:"usage,omitempty"`
	Error             *wireError    `json:"error,omitempty"`
}

// ChunkChoice is a chunk's choice.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        ChunkDelta      `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

// ChunkDelta is the part of the message a chunk adds.
type ChunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []ChunkToolCall `json:"tool_calls,omitempty"`
}

// ChunkToolCall is a piece of a tool call: id, type and name in its first piece.
type ChunkToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// SSEReader turns a chat-completions event stream into router events.
type SSEReader struct {
	body     io.ReadCloser
	r        *bufio.Reader
	line     []byte // the line being read, reused
	queue    []router.StreamEvent
	started  bool
	stopped  bool
	usage    bool
	text     int         // open text block, -1 = none
	tools    map[int]int // tool call index → block index
	next     int
	finished bool
	// meta is what the chunks said of the answer so far; told is what the events did.
	meta, told router.AnswerMeta
}

// NewSSEReader reads body.
func NewSSEReader(body io.ReadCloser) *SSEReader {
	return &SSEReader{body: body, r: bufio.NewReaderSize(body, 64<<10), text: -1, tools: map[int]int{}}
}

// Close closes the body.
func (s *SSEReader) Close() error { return s.body.Close() }

// Recv returns the next event; io.EOF after the last.
func (s *SSEReader) Recv() (router.StreamEvent, error) {
	for len(s.queue) == 0 {
		if s.finished {
			return router.StreamEvent{}, io.EOF
		}
		line, err := s.readLine()
		if err != nil {
			// The stream ends with data: [DONE] and nothing else: a connection closed
			// before it (even after the finish_reason, when the usage chunk may still be
			// due) is a cut answer, never a complete one.
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: the connection closed before data: [DONE]", io.ErrUnexpectedEOF)
			}
			return router.StreamEvent{}, &router.ProviderError{Err: fmt.Errorf("chat completion stream: %w", err)}
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue // comments, event:, id:, blank separators
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			s.done()
			continue
		}
		var c Chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return router.StreamEvent{}, &router.ProviderError{Status: 502, Code: "UnexpectedOutput", Message: "stream chunk: " + err.Error()}
		}
		if c.Error != nil {
			code, _ := c.Error.Code.(string)
			return router.StreamEvent{}, &router.ProviderError{Status: http.StatusInternalServerError, Code: code, Message: c.Error.Message}
		}
		s.chunk(&c)
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

// readLine reads up to and including the next newline, holding at most
// router.MaxStreamLineBytes: a longer line is refused before it is buffered whole.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(s.line)+len(frag) > router.MaxStreamLineBytes {
			return nil, &router.ProviderError{Status: 502, Code: "UnexpectedOutput",
				Message: fmt.Sprintf("chat completion stream: a line over %d bytes (router.MaxStreamLineBytes)", router.MaxStreamLineBytes)}
		}
		if need := len(s.line) + len(frag); need > cap(s.line) { // double (append grows big slices by 1.25x)
			s.line = slices.Grow(s.line, min(max(need, 2*cap(s.line)), router.MaxStreamLineBytes)-len(s.line))
		}
		s.line = append(s.line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return s.line, err
		}
	}
}

func (s *SSEReader) emit(ev router.StreamEvent) { s.queue = append(s.queue, ev) }

func (s *SSEReader) done() {
	if s.stopped && !s.usage {
		s.emit(router.StreamEvent{Kind: router.EventMetadata, Meta: s.news()})
		s.usage = true
	}
	s.finished = true
}

// observe keeps what a chunk says of the answer (later chunks may say more).
func (s *SSEReader) observe(c *Chunk) {
	if c.Model != "" {
		s.meta.Model = c.Model
	}
	if c.SystemFingerprint != "" {
		s.meta.SystemFingerprint = c.SystemFingerprint
	}
	if c.ServiceTier != "" {
		s.meta.ServiceTier = c.ServiceTier
	}
}

// news is what the chunks said of the answer since the events last told it; nil if nothing.
func (s *SSEReader) news() *router.AnswerMeta {
	if s.meta == s.told {
		return nil
	}
	s.told = s.meta
	m := s.meta
	return &m
}

func (s *SSEReader) closeBlocks() {
	open := []int{}
	if s.text >= 0 {
		open = append(open, s.text)
	}
	for _, b := range s.tools {
		open = append(open, b)
	}
	slices.Sort(open)
	for _, b := range open {
		s.emit(router.StreamEvent{Kind: router.EventBlockStop, Index: b})
	}
	s.text, s.tools = -1, map[int]int{}
}

func (s *SSEReader) chunk(c *Chunk) {
	s.observe(c)
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if !s.started {
			s.started = true
			m := s.meta
			s.told = m
			s.emit(router.StreamEvent{Kind: router.EventMessageStart, Meta: &m})
		}
		if d := ch.Delta.Content; d != nil && *d != "" {
			if s.text < 0 {
				s.text = s.next
				s.next++
			}
			s.emit(router.StreamEvent{Kind: router.EventBlockDelta, Index: s.text, Text: *d, Logprobs: logprobs(ch.Logprobs)})
		}
		for _, tc := range ch.Delta.ToolCalls {
			b, ok := s.tools[tc.Index]
			if !ok {
				if s.text >= 0 {
					s.emit(router.StreamEvent{Kind: router.EventBlockStop, Index: s.text})
					s.text = -1
				}
				b = s.next
				s.next++
				s.tools[tc.Index] = b
				s.emit(router.StreamEvent{Kind: router.EventBlockStart, Index: b, ToolUse: &router.ToolUse{ID: tc.ID, Name: tc.Function.Name}})
			}
			if tc.Function.Arguments != "" {
				s.emit(router.StreamEvent{Kind: router.EventBlockDelta, Index: b, ToolInput: tc.Function.Arguments})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" && !s.stopped {
			s.closeBlocks()
			s.stopped = true
			s.emit(router.StreamEvent{Kind: router.EventMessageStop, StopReason: stopReason(*ch.FinishReason)})
		}
	}
	if c.Usage != nil && !s.usage {
		s.usage = true
		s.emit(router.StreamEvent{Kind: router.EventMetadata, Usage: c.Usage.toRouter(), Meta: s.news()})
	}
}

// SSEWriter writes router events as a chat-completions event stream.
type SSEWriter struct {
	w            io.Writer
	flush        func()
	base         Chunk
	includeUsage bool
	toolIndex    map[int]int // block index → tool call index
}

// NewSSEWriter writes to w (flushed after each chunk when it is an http.Flusher).
func NewSSEWriter(w io.Writer, id, model string, created int64, includeUsage bool) *SSEWriter {
	sw := &SSEWriter{w: w, flush: func() {}, includeUsage: includeUsage, toolIndex: map[int]int{},
		base: Chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}}
	if f, ok := w.(http.Flusher); ok {
		sw.flush = f.Flush
	}
	return sw
}

func (sw *SSEWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(sw.w, "data: %s\n\n", b); err != nil {
		return err
	}
	sw.flush()
	return nil
}

func (sw *SSEWriter) delta(d ChunkDelta, finish *string) error {
	c := sw.base
	c.Choices = []ChunkChoice{{Delta: d, FinishReason: finish}}
	return sw.write(&c)
}

// Event writes one event.
func (sw *SSEWriter) Event(ev router.StreamEvent) error {
	if m := ev.Meta; m != nil { // this chunk and the next name the answer as the target did
		// A later event that leaves a field out keeps what an earlier one named.
		keep(&sw.base.Model, m.Model)
		keep(&sw.base.SystemFingerprint, m.SystemFingerprint)
		keep(&sw.base.ServiceTier, m.ServiceTier)
	}
	switch ev.Kind {
	case router.EventMessageStart:
		empty := ""
		return sw.delta(ChunkDelta{Role: router.RoleAssistant, Content: &empty}, nil)
	case router.EventBlockStart:
		if ev.ToolUse == nil {
			return nil
		}
		k := len(sw.toolIndex)
		sw.toolIndex[ev.Index] = k
		tc := ChunkToolCall{Index: k, ID: ev.ToolUse.ID, Type: "function"}
		tc.Function.Name = ev.ToolUse.Name
		return sw.delta(ChunkDelta{ToolCalls: []ChunkToolCall{tc}}, nil)
	case router.EventBlockDelta:
		if ev.ToolInput != "" {
			tc := ChunkToolCall{Index: sw.toolIndex[ev.Index]}
			tc.Function.Arguments = ev.ToolInput
			return sw.delta(ChunkDelta{ToolCalls: []ChunkToolCall{tc}}, nil)
		}
		if ev.Text == "" {
			return nil
		}
		t := ev.Text
		c := sw.base
		c.Choices = []ChunkChoice{{Delta: ChunkDelta{Content: &t}, Logprobs: ev.Logprobs}}
		return sw.write(&c)
	case router.EventMessageStop:
		f := finishReason(ev.StopReason)
		return sw.delta(ChunkDelta{}, &f)
	case router.EventMetadata:
		if !sw.includeUsage {
			return nil
		}
		c := sw.base
		c.Choices = []ChunkChoice{}
		c.Usage = usageFrom(ev.Usage)
		return sw.write(&c)
	}
	return nil
}

// Done ends a complete stream.
func (sw *SSEWriter) Done() error {
	if _, err := io.WriteString(sw.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	sw.flush()
	return nil
}

// Error ends a stream that failed after it began, as OpenAI does: an error chunk.
func (sw *SSEWriter) Error(typ, code, msg string) error {
	return sw.write(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}

// keep sets *dst to v unless v is empty.
func keep(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}
