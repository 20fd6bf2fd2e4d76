package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
)

// TestDevStatus: `fleetc dev status` reads the session's GET /api/fleet and prints its
// classes and ledger; --wait rides out dev's 503 while it applies, and --done waits for the
// verdicts and for the observer to balance the ledger. The server is an httptest stand-in for
// the dev session's API that answers the sequence a session goes through (503 while applying,
// then snapshots as dev.Snapshot encodes them); docs/dev.md runs the command against a real
// session (TestDevDoc).
func TestDevStatus(t *testing.T) {
	var mu sync.Mutex
	var answers []func(w http.ResponseWriter) // one per request; the last repeats
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		a := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		a(w)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	applying := func(w http.ResponseWriter) {
		http.Error(w, "the fleet is being (re)applied", http.StatusServiceUnavailable)
	}
	snap := func(completed, dead, submitted int) func(w http.ResponseWriter) {
		s := dev.Snapshot{Fleet: "hello", Endpoint: "http://127.0.0.1:4566", Classes: []dev.ClassView{{Name: "greeter",
			Worker: dev.WorkerView{State: dev.StateRunning}, Completed: completed, DeadLettered: dead, Submitted: submitted}}}
		s.Classes[0].Queue.Visible = max(0, submitted-completed-dead)
		s.Ledger = dev.LedgerView{Submitted: submitted, Completed: completed, DeadLettered: dead, Pending: submitted - completed - dead}
		return func(w http.ResponseWriter) { _ = json.NewEncoder(w).Encode(s) }
	}
	set := func(a ...func(http.ResponseWriter)) {
		mu.Lock()
		defer mu.Unlock()
		answers, paths = a, nil
	}

	// Up: applying, then up with nothing sent.
	set(applying, applying, snap(0, 0, 0))
	code, stdout, stderr := run(t, "dev", "status", "--wait", "1m", "--port", port)
	want := "fleet hello is up on http://127.0.0.1:" + port + " (emulator http://127.0.0.1:4566)\n" +
		"  greeter: worker running, queue 0 (0 in flight), DLQ 0, 0 completed, 0 dead-lettered\n" +
		"ledger: 0 submitted = 0 completed + 0 dead-lettered\n"
	if code != exitOK || stdout != want || stderr != "" {
		t.Errorf("status --wait: exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
	}
	if len(paths) != 3 || paths[2] != "GET /api/fleet" {
		t.Errorf("status --wait asked %v; want GET /api/fleet three times", paths)
	}

	// --done 1: the event is pending, then its verdict comes before the observer saw it
	// (pending -1), then both: the step is done.
	set(snap(0, 0, 1), snap(1, 0, 0), snap(1, 0, 1))
	code, stdout, _ = run(t, "dev", "status", "--wait", "1m", "--done", "1", "--port", port)
	if code != exitOK || !strings.HasSuffix(stdout, "ledger: 1 submitted = 1 completed + 0 dead-lettered\n") || len(paths) != 3 {
		t.Errorf("status --done 1: exit %d after %d requests, %q; want the third answer", code, len(paths), stdout)
	}

	// Without --wait it answers at once: not done is exit 1, with the status and the reason.
	set(snap(0, 0, 1))
	code, stdout, stderr = run(t, "dev", "status", "--done", "1", "--port", port)
	if code != exitInvalid || !strings.Contains(stdout, "ledger: 1 submitted = 0 completed + 0 dead-lettered + 1 pending\n") ||
		!strings.Contains(stdout, "queue 1 (0 in flight)") || stderr != "fleetc dev status: 0 of 1 units of work ended, 1 pending\n" {
		t.Errorf("status --done 1, pending: exit %d, %q, %q", code, stdout, stderr)
	}
	set(applying)
	if code, _, stderr := run(t, "dev", "status", "--port", port); code != exitInvalid || !strings.Contains(stderr, "not up: 503 Service Unavailable: the fleet is being (re)applied") {
		t.Errorf("status while applying: exit %d, %q", code, stderr)
	}

	// A dead letter is an end too: --done counts it, and the ledger says so.
	set(snap(0, 1, 1))
	if code, stdout, _ := run(t, "dev", "status", "--done", "1", "--port", port); code != exitOK || !strings.Contains(stdout, "ledger: 1 submitted = 0 completed + 1 dead-lettered\n") {
		t.Errorf("status, dead-lettered: exit %d, %q", code, stdout)
	}

	// No session; usage errors.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	if code, _, stderr := run(t, "dev", "status", "--port", closed); code != exitInvalid || !strings.Contains(stderr, "no fleetc dev session answers") {
		t.Errorf("no session: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{{"x"}, {"--done", "-1"}, {"--wait", "-1s"}} {
		if code, _, stderr := run(t, append([]string{"dev", "status", "--port", closed}, args...)...); code != exitUsage || stderr == "" {
			t.Errorf("status %v: exit %d, %q; want a usage error", args, code, stderr)
		}
	}
}
