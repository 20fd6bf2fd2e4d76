package router

// Byte caps on what a provider may send back. An upstream is not trusted to be small: a
// model server behind a proxy, or the proxy itself, can answer without end.
const (
	// MaxResponseBytes bounds one answer: a non-streamed body as read from the wire, and a
	// streamed answer's assembled content (text, tool names and tool inputs).
	MaxResponseBytes = 32 << 20
	// MaxStreamLineBytes bounds one unit of a stream held in memory at once: an SSE line
	// (a chat-completions chunk) or an AWS event-stream message (a ConverseStream event).
	// A real chunk carries one delta, a few hundred bytes.
	MaxStreamLineBytes = 4 << 20
)
