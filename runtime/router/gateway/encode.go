package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// The hot path's reading and writing of bodies, kept cheap: a request body is read into
// one buffer of its announced size, and an answer is encoded into a pooled buffer and
// sent with its Content-Length in one write (no chunked encoding).

// readBody reads the request body, at most maxBody bytes (one more tells it was over).
func readBody(r *http.Request) ([]byte, error) {
	size := 512
	if n := r.ContentLength; n > 0 && n <= maxBody {
		size = int(n) + 1 // room to see EOF without growing
	}
	b := make([]byte, 0, size)
	for len(b) <= maxBody {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Body.Read(b[len(b):min(cap(b), maxBody+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break // with the last bytes, or after them
		}
		if err != nil {
			return b, err
		}
	}
	if len(b) > maxBody {
		return b, fmt.Errorf("request body over %d bytes", maxBody)
	}
	return b, nil
}

// bodies are answer buffers; one over maxPooled is left to the collector rather than kept.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 64 << 10

// writeBody writes v as JSON (with a trailing newline, as json.Encoder does) after the
// headers already set, adding Content-Length when the status is not yet written.
func writeBody(w http.ResponseWriter, v any) {
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		buf.Reset()
	}
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
	if buf.Cap() <= maxPooled {
		bodies.Put(buf)
	}
}
