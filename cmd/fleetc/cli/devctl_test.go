package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestDevActions: each `fleetc dev ACTION` sends exactly the request the live page's button
// sends (docs/dev.md's endpoint table) and says what happened. The server is an httptest
// stand-in for the dev session's API that records the request and answers as dev does; the
// real session runs these commands in TestDevResearchFleet and TestDevMinimal.
func TestDevActions(t *testing.T) {
	type request struct{ method, path, body string }
	var got request
	answer, status := "{}", http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = request{r.Method, r.URL.EscapedPath(), string(b)}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)

	for _, tc := range []struct {
		args   []string
		answer string
		want   request
		out    string
	}{
		{[]string{"kill", "coder"}, `{"killed": 4242}`, request{"POST", "/api/classes/coder/kill", ""}, "killed coder's worker (pid 4242); it restarts in 2s"},
		{[]string{"pause", "coder"}, `{"paused": true}`, request{"POST", "/api/classes/coder/pause", `{"paused":true}`}, "paused coder"},
		{[]string{"resume", "coder"}, `{"paused": false}`, request{"POST", "/api/classes/coder/pause", `{"paused":false}`}, "resumed coder"},
		{[]string{"fail", "coder", "--for", "30s"}, `{}`, request{"POST", "/api/classes/coder/fault", `{"kind":"fail","seconds":30}`}, "coder's handler fails (exit 75, retryable) for 30s"},
		{[]string{"slow", "coder", "--for", "1m", "--delay", "1.5s"}, `{}`, request{"POST", "/api/classes/coder/fault", `{"delay_seconds":1.5,"kind":"slow","seconds":60}`}, "sleeps 1.5s before each step for 1m0s"},
		{[]string{"throttle", "--for", "20s"}, `{}`, request{"POST", "/api/faults/model-429", `{"seconds":20}`}, "429 ThrottlingException for 20s"},
		{[]string{"redrive", "a/b"}, `{"moved": 3, "failed_again": 1, "left": 2}`, request{"POST", "/api/classes/a%2Fb/redrive", ""}, "a/b's DLQ: moved 3 back to its queue, 1 failed again, 2 left"},
		{[]string{"start", "conversation"}, `{"execution_arn": "arn:x", "trace_id": "t1"}`, request{"POST", "/api/workflows/conversation/executions", ""}, "started conversation: arn:x (trace id t1)"},
		{[]string{"start", "conversation", "--input", `{"trace_id":"t2"}`}, `{"execution_arn": "arn:y", "trace_id": "t2"}`, request{"POST", "/api/workflows/conversation/executions", `{"input":{"trace_id":"t2"}}`}, "arn:y"},
	} {
		got, answer, status = request{}, tc.answer, http.StatusOK
		code, stdout, stderr := run(t, append(append([]string{"dev"}, tc.args...), "--port", port)...)
		if code != exitOK || !strings.Contains(stdout, tc.out) {
			t.Errorf("fleetc dev %v: exit %d, stdout %q, stderr %q; want %q", tc.args, code, stdout, stderr, tc.out)
		}
		if got != tc.want {
			t.Errorf("fleetc dev %v sent %+v, want %+v", tc.args, got, tc.want)
		}
	}

	// The session's refusal is the command's error, and exit 1.
	answer, status = `{"error": "no class \"nope\""}`, http.StatusBadRequest
	if code, _, stderr := run(t, "dev", "kill", "nope", "--port", port); code != exitInvalid || !strings.Contains(stderr, `no class "nope"`) {
		t.Errorf("refused kill: exit %d, %q", code, stderr)
	}

	// Usage errors send nothing.
	for _, args := range [][]string{{"fail", "coder"}, {"throttle", "x", "--for", "1s"}, {"kill"}, {"start", "w", "--input", "{"}} {
		got = request{}
		if code, _, stderr := run(t, append(append([]string{"dev"}, args...), "--port", port)...); code != exitUsage || stderr == "" || got != (request{}) {
			t.Errorf("fleetc dev %v: exit %d, %q, sent %+v; want a usage error and no request", args, code, stderr, got)
		}
	}

	// No session: say how to start one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	if code, _, stderr := run(t, "dev", "kill", "coder", "--port", closed); code != exitInvalid || !strings.Contains(stderr, "no fleetc dev session answers") {
		t.Errorf("no session: exit %d, %q", code, stderr)
	}
}
