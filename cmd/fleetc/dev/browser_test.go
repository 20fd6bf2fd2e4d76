package dev

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// attackerPage is another site's page: it posts to the live API the ways a page can without
// a CORS preflight (no-cors fetches, text/plain and bodyless, then a text/plain form).
const attackerPage = `<!doctype html><body><script>
const t = %q;
Promise.allSettled([
  fetch(t, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"paused":true}' }),
  fetch(t, { method: "POST", mode: "no-cors" }),
]).then(() => {
  const f = document.createElement("form");
  f.method = "POST"; f.action = t; f.enctype = "text/plain";
  const i = document.createElement("input");
  i.name = '{"paused":true,"x":"'; i.value = '"}';
  f.appendChild(i); document.body.appendChild(f);
  document.title = "sent";
  f.submit();
});
</script></body>`

// TestLivePageInChromium: in headless Chromium, a page on another site cannot pause a
// worker through the live API (three requests a browser really sends cross-site), while
// the live page's own post() does.
func TestLivePageInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: chromium (bash tools/install.sh chromium)", verifytest.ErrToolMissing))
		return
	}
	var log bytes.Buffer
	p := &proc{class: "c", state: StateStopped}
	paused := func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.paused }
	d := &Fleet{ir: &ir.Fleet{Name: "browser"}, obs: &observer{}, done: make(chan struct{}),
		sup: &supervisor{out: &prefixer{w: &log}, procs: map[string]*proc{"c": p}, led: &ledger{}}}
	var current atomic.Pointer[Fleet]
	current.Store(d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, addr, err := serve(ctx, 0, &current)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pauseURL := "http://" + addr + "/api/classes/c/pause"
	hits := make(chan struct{}, 8)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, fmt.Sprintf(attackerPage, pauseURL))
		hits <- struct{}{}
	}))
	defer attacker.Close()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir())}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, time.Minute)
	defer cancelT()

	// The attacker's page on localhost:<its port>: another site than 127.0.0.1:<dev's port>.
	if _, err := chromedp.Run(bctx, chromedp.Navigate(strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1))); err != nil {
		t.Fatal(err)
	}
	<-hits
	time.Sleep(2 * time.Second) // the fetches and the form post run after the page loaded
	if paused() || log.Len() != 0 {
		t.Fatalf("another site's page paused the worker: paused=%v, log %q", paused(), log.String())
	}

	if _, err := chromedp.Run(bctx, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`post("/api/classes/c/pause", { paused: true }).then((j) => JSON.stringify(j))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"paused":true}` || !paused() {
		t.Errorf("the page's own post(): %s, paused=%v", got, paused())
	}
}
