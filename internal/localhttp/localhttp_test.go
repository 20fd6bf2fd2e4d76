package localhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/internal/localhttp/localhttptest"
)

// TestGuardRefusesWhatAnotherSiteCanSend: through a real listener, every request a page on
// another site (or a rebound DNS name) can send is refused before the handler runs; the
// server's own JSON POST, a loopback GET and the other loopback names are served.
func TestGuardRefusesWhatAnotherSiteCanSend(t *testing.T) {
	var ran atomic.Int32
	srv := httptest.NewServer(localhttp.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })))
	defer srv.Close()
	localhttptest.Refused(t, srv.URL+"/act", `{"x":1}`, nil)
	localhttptest.ReadRefused(t, srv.URL+"/read", nil)
	if n := ran.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for refused requests", n)
	}
	if code, body := localhttptest.SameOrigin(t, srv.URL+"/act", `{"x":1}`, nil); code != http.StatusOK {
		t.Errorf("same-origin JSON POST: %d %s", code, body)
	}
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"GET", nil},
		{"localhost Host, JSON with charset, no Origin (a non-browser client)", map[string]string{"Host": "localhost:" + port, "Content-Type": "application/json; charset=utf-8"}},
		{"[::1] Host", map[string]string{"Host": "[::1]:" + port, "Content-Type": "application/json", "Origin": "http://[::1]:" + port}},
		{"typed URL (Sec-Fetch-Site none)", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "none"}},
	} {
		method := http.MethodPost
		if c.header == nil {
			method = http.MethodGet
		}
		if code, body := localhttptest.Send(t, method, srv.URL+"/act", c.header, nil, `{}`); code != http.StatusOK {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
	}
	if n := ran.Load(); n != 5 {
		t.Errorf("the handler ran %d times, want 5", n)
	}
}

// TestRefusalNamesItsReason: the answer says which rule refused the request.
func TestRefusalNamesItsReason(t *testing.T) {
	for _, c := range []struct {
		host, origin, ct string
		want             localhttp.Reason
		status           int
	}{
		{"evil.example:80", "", "application/json", localhttp.ForeignHost, 403},
		{"", "", "application/json", localhttp.ForeignHost, 403},
		{"127.0.0.1:80", "null", "application/json", localhttp.CrossOrigin, 403},
		{"127.0.0.1:80", "http://127.0.0.1:81", "application/json", localhttp.CrossOrigin, 403},
		{"127.0.0.1:80", "", "application/jsonx", localhttp.NotJSON, 415},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
		r.Host = c.host
		r.Header.Set("Content-Type", c.ct)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		ref := localhttp.Check(r)
		if ref == nil || ref.Reason != c.want || ref.Status != c.status {
			t.Errorf("%+v: %+v", c, ref)
		}
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	for _, bad := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "10.1.2.3:8080", "localhost.attacker.example:80", "127.0.0.1"} {
		if err := localhttp.CheckListenAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, ok := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.2:8080"} {
		if err := localhttp.CheckListenAddr(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	ln, err := localhttp.Listen(localhttp.DefaultHost + ":0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// BenchmarkCheck is the guard's cost on an accepted same-origin JSON POST.
func BenchmarkCheck(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8765/api/classes/c/pause", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", "http://127.0.0.1:8765")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	b.ReportAllocs()
	for b.Loop() {
		if localhttp.Check(r) != nil {
			b.Fatal("refused")
		}
	}
}
