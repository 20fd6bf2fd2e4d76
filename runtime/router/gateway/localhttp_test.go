package gateway_test

import (
	"net/http"
	"testing"

	"github.com/fleetc/fleetc/internal/localhttp/localhttptest"
	rt "github.com/fleetc/fleetc/runtime/router/routertest"
)

// TestGatewayRefusesOtherSites: the gateway takes none of the requests another site's page
// (or a rebound DNS name) can send, on both wire formats, even one carrying the token; the
// upstream model sees none of them, and the same request as a handler sends it is served.
func TestGatewayRefusesOtherSites(t *testing.T) {
	gw, srv, _ := upstream(t, "openai", rt.Always(rt.Reply{Text: "hi"}), false)
	token := http.Header{"Authorization": {"Bearer " + gw.Token()}}
	localhttptest.Refused(t, gw.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, token)
	localhttptest.Refused(t, gw.URL()+"/model/m/converse", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, token)
	if n := srv.Calls(); n != 0 {
		t.Fatalf("upstream got %d calls from refused requests", n)
	}
	if code, body := localhttptest.SameOrigin(t, gw.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, token); code != http.StatusOK {
		t.Errorf("same-origin call: %d %s", code, body)
	}
}
