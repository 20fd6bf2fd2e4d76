package openai_test

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// endlessLine is an upstream that sends "data: " and then n bytes without a newline,
// from one small buffer, so what the test measures is the reader's memory, not its own.
type endlessLine struct {
	head string
	n    int
	fill [32 << 10]byte
}

func (e *endlessLine) Read(p []byte) (int, error) {
	if e.head != "" {
		k := copy(p, e.head)
		e.head = e.head[k:]
		return k, nil
	}
	if e.n == 0 {
		return 0, io.EOF
	}
	k := copy(p, e.fill[:min(len(e.fill), e.n)])
	e.n -= k
	return k, nil
}

// A huge SSE line is refused with an error naming the cap, having held at most about
// router.MaxStreamLineBytes of it: reading the line whole (a 1 GiB line took the gateway
// to 6.3 GB) allocates at least the line.
func TestHugeSSELineIsRefusedWithBoundedMemory(t *testing.T) {
	up := &endlessLine{head: `data: {"choices":[{"index":0,"delta":{"content":"`, n: 8 * router.MaxStreamLineBytes}
	for i := range up.fill {
		up.fill[i] = 'a'
	}
	s := openai.NewSSEReader(io.NopCloser(up))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := s.Recv()
	runtime.ReadMemStats(&after)
	var pe *router.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "router.MaxStreamLineBytes") {
		t.Errorf("a %d-byte line: %v", 8*router.MaxStreamLineBytes, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes for a %d-byte line (cap %d)", alloc, 8*router.MaxStreamLineBytes, router.MaxStreamLineBytes)
	if alloc > 3*router.MaxStreamLineBytes {
		t.Errorf("allocated %d bytes reading a %d-byte line; the cap is %d", alloc, 8*router.MaxStreamLineBytes, router.MaxStreamLineBytes)
	}
}

// Lines up to the cap are read as before, however they are split by the reader's buffer.
func TestLongSSELineUnderTheCapIsRead(t *testing.T) {
	text := strings.Repeat("b", router.MaxStreamLineBytes-200)
	body := `data: {"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	s := openai.NewSSEReader(io.NopCloser(strings.NewReader(body)))
	var got strings.Builder
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(ev.Text)
	}
	if got.String() != text {
		t.Errorf("read %d bytes of text, want %d", got.Len(), len(text))
	}
}

// A stream whose connection closes before data: [DONE] is cut, whatever it had sent: the
// reader raises an error (not io.EOF) after relaying what came, so no consumer can take
// it for a complete answer. Cut before the finish_reason, after it (the usage chunk
// still due), and after the usage chunk.
func TestSSEStreamCutBeforeDoneIsAnError(t *testing.T) {
	const (
		text   = `data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hel"}}]}` + "\n\n"
		finish = `data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		usage  = `data: {"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\n"
	)
	for name, body := range map[string]string{"before finish_reason": text, "after finish_reason": text + finish, "after usage": text + finish + usage} {
		s := openai.NewSSEReader(io.NopCloser(strings.NewReader(body)))
		var err error
		for err == nil {
			_, err = s.Recv()
		}
		var pe *router.ProviderError
		if !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: the stream ended with %v, want an unexpected-EOF ProviderError", name, err)
		}
	}
	// The same stream with its [DONE] is complete.
	s := openai.NewSSEReader(io.NopCloser(strings.NewReader(text + finish + usage + "data: [DONE]\n\n")))
	var kinds []router.EventKind
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("a complete stream: %v", err)
		}
		kinds = append(kinds, ev.Kind)
	}
	if n := len(kinds); n == 0 || kinds[n-1] != router.EventMetadata {
		t.Errorf("a complete stream's events %v, want the metadata event last", kinds)
	}
}

// A later event whose meta names no model (a system_fingerprint first seen mid-stream) keeps
// the model an earlier one named: no chunk after it says "model": "".
func TestSSEWriterKeepsTheModelNamedBefore(t *testing.T) {
	var b strings.Builder
	sw := openai.NewSSEWriter(&b, "c1", "", 1, false)
	for _, ev := range []router.StreamEvent{
		{Kind: router.EventMessageStart, Meta: &router.AnswerMeta{Model: "m-1"}},
		{Kind: router.EventBlockDelta, Text: "hi", Meta: &router.AnswerMeta{SystemFingerprint: "fp"}},
		{Kind: router.EventBlockDelta, Text: "!"},
	} {
		if err := sw.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(b.String(), `"model":""`) || strings.Count(b.String(), `"model":"m-1"`) != 3 || !strings.Contains(b.String(), `"system_fingerprint":"fp"`) {
		t.Errorf("chunks:\n%s", b.String())
	}
}
