package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBodyBoundAndExactLength: a body one byte over the 16 MiB bound is refused (400, the
// upstream never called), sent with its length or chunked (no length to size the buffer
// by); an answer too long for the server to size by itself (its 2 KiB buffer) carries its
// exact Content-Length, not chunked encoding.
func TestBodyBoundAndExactLength(t *testing.T) {
	h := &held{text: strings.Repeat("answer ", 1000), release: make(chan struct{})}
	close(h.release)
	gw := heldGateway(t, h, 4, 0)
	prefix := `{"messages":[{"role":"user","content":"`
	big := prefix + strings.Repeat("x", 16<<20-len(prefix)-4) + `"}]}` + " "
	for _, chunked := range []bool{false, true} {
		var rd io.Reader = strings.NewReader(big)
		if chunked {
			rd = io.MultiReader(rd) // hides the length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/v1/chat/completions", rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gw.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !bytes.Contains(msg, []byte("request body over 16777216 bytes")) {
			t.Errorf("chunked %v: %d %.200s, want 400 request body over 16777216 bytes", chunked, resp.StatusCode, msg)
		}
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("upstream called %d times for refused bodies", n)
	}
	resp, err := post(gw, "/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(got)) || resp.TransferEncoding != nil {
		t.Errorf("answer: %d, Content-Length %d for %d bytes, transfer encoding %v", resp.StatusCode, resp.ContentLength, len(got), resp.TransferEncoding)
	}
}
