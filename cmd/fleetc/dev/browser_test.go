package dev

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
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

	bctx := chromium(t, bin)

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

// chromium is a headless Chromium for the test, closed at its end.
func chromium(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir())}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	bctx, cancelT := context.WithTimeout(bctx, time.Minute)
	t.Cleanup(cancelT)
	return bctx
}

// TestActivityInChromium: on the live page of the recorded session, in headless Chromium,
// the activity lists every entry; clicking the researcher's step shows its input and result;
// clicking a trace id keeps that conversation only, from the bus to its dead letter and
// ERROR_CODE; typing the other trace id keeps the other one, with its claim checks.
func TestActivityInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: chromium (bash tools/install.sh chromium)", verifytest.ErrToolMissing))
		return
	}
	d, _ := recordedSession(t)
	base := serveSession(t, d)
	bctx := chromium(t, bin)
	rows := func(sel string) []string {
		t.Helper()
		got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+"`"+sel+"`"+`)].map((r) => r.innerText.replace(/\s+/g, " ").trim())`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// waitRows waits until the activity shows n entries, each with the text each (it
	// refreshes every 2 s).
	waitRows := func(n int, each string) []string {
		t.Helper()
		var got []string
		for range 50 {
			got = rows("#activity tr.entry")
			if len(got) == n && !slices.ContainsFunc(got, func(r string) bool { return !strings.Contains(r, each) }) {
				return got
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the activity shows %q, want %d rows, each with %q", got, n, each)
		return nil
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	all := waitRows(8, "")

	stepRow := `#activity tr.entry[data-k*="|step|researcher|"] td:first-child`
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(stepRow))); err != nil {
		t.Fatalf("no researcher step row in %q: %v", all, err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#activity tr.payloads`))); err != nil {
		t.Fatal(err)
	}
	input, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#activity tr.payloads .payload[data-kind="input"] pre`)))
	if err != nil {
		t.Fatal(err)
	}
	result, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#activity tr.payloads .payload[data-kind="result"] pre`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(input, `"question": "why"`) || !strings.Contains(result, `"stand_in": true`) {
		t.Errorf("the step's input:\n%s\nresult:\n%s", input, result)
	}

	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#activity a[data-trace="`+traceC2+`"]`))); err != nil {
		t.Fatal(err)
	}
	c2 := waitRows(4, traceC2[:12])
	if !strings.Contains(c2[0], "bus") || !strings.Contains(c2[3], "dead-lettered ModelPolicyNotAllowed") {
		t.Errorf("trace %s: %q", traceC2, c2)
	}

	if err := chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS(`#tracefilter`), traceC1)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("tracefilter").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	c1 := waitRows(4, traceC1[:12])
	if !strings.Contains(c1[3], "agent.step.completed") {
		t.Errorf("trace %s: %q", traceC1, c1)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#activity tr.entry[data-k*="agent.step.completed"] td:first-child`)),
		chromedp.WaitVisible(chromedp.CSS(`#activity tr.payloads`))); err != nil {
		t.Fatal(err)
	}
	if got := rows(`#activity tr.payloads small`); len(got) != 1 || !strings.Contains(got[0], "claim check result_ref: s3://research-fleet-claims/out/researcher/x.json") {
		t.Errorf("the completion's payload header: %q", got)
	}
}
