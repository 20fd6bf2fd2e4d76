package bedrock_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/fleetc/fleetc/runtime/router"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// Every ConverseStream answer is read whole. Smithy closes the request body it built as
// soon as the HTTP client returns; when that raced the transport finishing the request,
// the transport closed the connection under the streamed answer ("use of closed network
// connection" mid-stream): 3 to 7 of 600 streams against this local fake, so 3,000 streams
// (about 1.5 s) all failed to survive it only by a chance of about e^-20.
func TestConverseStreamsAreReadWhole(t *testing.T) {
	up := rt.Bedrock(t, rt.Always(rt.Reply{Text: "hello from bedrock"}))
	p := rt.BedrockProvider(up)
	req := &router.Request{Messages: []router.Message{{Role: router.RoleUser, Content: []router.Block{{Text: "x"}}}}}
	const streams = 3000
	fails := 0
	var first error
	for range streams {
		s, err := p.ChatStream(context.Background(), "m", req)
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				fails++
				if first == nil {
					first = err
				}
				break
			}
		}
		s.Close()
	}
	if fails > 0 {
		t.Errorf("%d of %d streams failed mid-answer, first: %v", fails, streams, first)
	}
}
