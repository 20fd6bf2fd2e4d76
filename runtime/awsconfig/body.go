package awsconfig

import (
	"io"
	"net/http"
)

// closedBodySafe wraps an SDK HTTP client so a request body never exposes
// io.WriterTo to net/http.
//
// smithy closes the request body as soon as Do returns. net/http may still
// be writing it (after the response headers arrived, the transport's
// writeLoop finishes the body via WriteTo); WriteTo on the closed
// safeReadCloser returns io.EOF, and the transport then closes the
// connection under the response being read, surfacing as "use of closed
// network connection" during deserialization and a ~30 s stall behind the
// failed receive. See aws/aws-sdk-go-v2#1825 and #2737. Hiding WriterTo
// makes net/http copy through Read, which ends cleanly.
type closedBodySafe struct{ next HTTPClient }

func (c closedBodySafe) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = struct{ io.ReadCloser }{req.Body}
	}
	return c.next.Do(req)
}
