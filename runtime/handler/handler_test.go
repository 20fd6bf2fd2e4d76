package handler

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/retry"
)

func sh(t *testing.T, script string) *Exec {
	t.Helper()
	h, err := NewExec([]string{"/bin/sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func req() Request {
	return Request{Class: "c", Key: "k1", TraceID: "t1", Attempt: 2, Input: json.RawMessage(`{"x":1}`)}
}

func asRetry(t *testing.T, err error) *retry.Error {
	t.Helper()
	var e *retry.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *retry.Error", err, err)
	}
	return e
}

func TestExecEchoAndEnv(t *testing.T) {
	h := sh(t, `read in; printf '{"in":%s,"key":"%s","attempt":%s}' "$in" "$FLEET_IDEMPOTENCY_KEY" "$FLEET_ATTEMPT"`)
	out, err := h.Handle(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"in":{"x":1},"key":"k1","attempt":2}` {
		t.Errorf("out = %s", out)
	}
}

func TestExecExitCodes(t *testing.T) {
	cases := []struct {
		script    string
		code      string
		retryable bool
		throttle  bool // the handler named its retry-after
	}{
		{"exit 75", "Exit75", true, false},
		{"exit 69", "Exit69", true, false},
		{"exit 65", "Exit65", false, false},
		{"exit 1", "Exit1", true, false},
		{"kill -9 $$", "Crashed", true, false},
		{`echo '{"error":{"code":"Refused","message":"policy","retryable":false}}'; exit 1`, "Refused", false, false},
		{`echo '{"error":{"code":"Busy","retry_after_seconds":3}}'; exit 1`, "Busy", true, true},
		{`echo '{"error":{"code":"Refused","retryable":false,"retry_after_seconds":3}}'; exit 1`, "Refused", false, false},
		// The failure object decides at exit 0 too: never delivered as a result.
		{`echo '{"error":{"code":"Refused","message":"policy","retryable":false}}'`, "Refused", false, false},
		{`echo '{"error":{"code":"Busy","retry_after_seconds":3}}'`, "Busy", true, true},
		// An "error" object without a code is a malformed failure, refused with the reason.
		{`echo '{"error":{"message":"no code"}}'`, "BadOutput", false, false},
		{"echo not-json", "BadOutput", false, false},
		{"true", "BadOutput", false, false}, // empty stdout is not a result
	}
	for _, c := range cases {
		_, err := sh(t, c.script).Handle(context.Background(), req())
		e := asRetry(t, err)
		if string(e.Code) != c.code || e.Retryable != c.retryable || e.Throttle != c.throttle {
			t.Errorf("%q: got %s retryable=%v throttle=%v", c.script, e.Code, e.Retryable, e.Throttle)
		}
	}
}

// A top-level "error" that is not the failure object is an ordinary result field: the
// async-tools example's cdk-synth returns {"status":"FAILED","error":"..."} as its result.
func TestExecErrorStringIsAResult(t *testing.T) {
	const result = `{"status":"FAILED","error":"synth failed"}`
	out, err := sh(t, "echo '"+result+"'").Handle(context.Background(), req())
	if err != nil || string(out) != result {
		t.Errorf("got %s %v, want the result %s", out, err, result)
	}
}

// A failure object without a message at exit 0 takes its message from stderr, as at a
// non-zero exit.
func TestExecFailureAtExit0TakesStderr(t *testing.T) {
	_, err := sh(t, `echo 'quota gone' >&2; echo '{"error":{"code":"Quota"}}'`).Handle(context.Background(), req())
	if e := asRetry(t, err); e.Code != "Quota" || e.Message != "quota gone" {
		t.Errorf("got %+v", e)
	}
}

func TestExecDeadlineKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The grandchild would outlive a plain kill of the shell.
	h := sh(t, `sleep 30 & echo $! > `+pidFile+`; wait`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.Handle(ctx, req())
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v", el)
	}
	if e := asRetry(t, err); e.Code != "Timeout" || !e.Retryable {
		t.Errorf("got %+v", e)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(2 * time.Second)
	for {
		// Reaped or zombie-free: signal 0 fails once the process is gone.
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the deadline", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewExecMissingCommand(t *testing.T) {
	if _, err := NewExec([]string{"/nonexistent/fleet-handler"}); err == nil {
		t.Error("missing command accepted")
	}
	if _, err := NewExec(nil); err == nil {
		t.Error("empty command accepted")
	}
}

func TestHTTP(t *testing.T) {
	var gotKey, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			gotKey, gotBody = r.Header.Get("Idempotency-Key"), string(b)
			w.Write([]byte(`{"done":true}`))
		case "/empty":
			w.WriteHeader(204)
		case "/503":
			w.WriteHeader(503)
		case "/429ra":
			w.Header().Set("Retry-After", "4")
			w.WriteHeader(429)
		case "/429ms":
			w.Header().Set("retry-after-ms", "1500")
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
		case "/429":
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"code":"spend_limit","message":"monthly cap"}}`))
		case "/400":
			w.WriteHeader(400)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/garbage":
			w.Write([]byte("<html>"))
		case "/200error":
			w.Write([]byte(`{"error":{"code":"Refused","message":"policy","retryable":false}}`))
		case "/200nocode":
			w.Write([]byte(`{"error":{"message":"no code"}}`))
		}
	}))
	defer srv.Close()
	call := func(path string, timeout time.Duration) (json.RawMessage, error) {
		h, err := NewHTTP(srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return h.Handle(ctx, req())
	}
	out, err := call("/ok", time.Second)
	if err != nil || string(out) != `{"done":true}` || gotKey != "k1" || gotBody != `{"x":1}` {
		t.Errorf("ok: %s %v key=%q body=%q", out, err, gotKey, gotBody)
	}
	if out, err := call("/empty", time.Second); err != nil || string(out) != "null" {
		t.Errorf("204: %s %v", out, err)
	}
	checks := []struct {
		path      string
		code      string
		retryable bool
		after     time.Duration
		throttle  bool
	}{
		{"/503", "HTTP503", true, 0, false},
		{"/429ra", "HTTP429", true, 4 * time.Second, true},
		{"/429ms", "HTTP429", true, 1500 * time.Millisecond, true}, // retry-after-ms before Retry-After
		{"/429", "SpendLimit", false, 0, false},
		{"/400", "HTTP400", false, 0, false},
		{"/slow", "Timeout", true, 0, false},
		{"/garbage", "BadOutput", false, 0, false},
		{"/200error", "Refused", false, 0, false}, // the failure object decides at 2xx as for exec
		{"/200nocode", "BadOutput", false, 0, false},
	}
	for _, c := range checks {
		_, err := call(c.path, 300*time.Millisecond)
		e := asRetry(t, err)
		if string(e.Code) != c.code || e.Retryable != c.retryable || e.RetryAfter != c.after || e.Throttle != c.throttle {
			t.Errorf("%s: got %+v", c.path, e)
		}
	}
	srv.Close()
	if _, err := call("/ok", time.Second); !asRetry(t, err).Retryable {
		t.Error("connection refused must be retryable")
	}
}

func TestNew(t *testing.T) {
	c := &config.Config{File: config.File{Handler: config.Handler{Type: config.HandlerLLM}}}
	if _, err := New(c, Options{}); !errors.Is(err, ErrNoLLM) {
		t.Errorf("llm without factory: %v", err)
	}
	called := false
	_, err := New(c, Options{LLM: func(h config.Handler, m config.Models) (Handler, error) {
		called = true
		return Func(func(context.Context, Request) (json.RawMessage, error) { return nil, nil }), nil
	}})
	if err != nil || !called {
		t.Errorf("llm factory not used: %v", err)
	}
	c.Handler = config.Handler{Type: config.HandlerHTTP, URL: "http://127.0.0.1:1/step"}
	if h, err := New(c, Options{}); err != nil || h.(*HTTP).URL != c.Handler.URL {
		t.Errorf("http: %v", err)
	}
}

// TestExecDiesWithWorker: a worker killed with SIGKILL (no chance to clean
// up) must not leave its step's command running. The test binary re-runs
// itself as the "worker".
func TestExecDiesWithWorker(t *testing.T) {
	if os.Getenv("FLEET_EXEC_WORKER") == "1" {
		h := &Exec{Command: []string{"sh", "-c", `echo $$ > "$PIDFILE"; exec sleep 60`}, InheritEnv: []string{"PIDFILE"}}
		_, _ = h.Handle(context.Background(), Request{Class: "c", Key: "k", Input: json.RawMessage(`{}`)})
		os.Exit(0)
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	worker := exec.Command(os.Args[0], "-test.run=^TestExecDiesWithWorker$")
	worker.Env = append(os.Environ(), "FLEET_EXEC_WORKER=1", "PIDFILE="+pidFile)
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		raw, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	if child == 0 {
		_ = worker.Process.Kill()
		t.Fatal("step command never started")
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	_ = worker.Process.Kill()
	_ = worker.Wait()
	alive := func() bool {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil {
			return false
		}
		// A zombie waiting for its new parent to reap it is dead too.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		return len(f) > 0 && f[0] != "Z" && f[0] != "X"
	}
	for deadline := time.Now().Add(5 * time.Second); alive() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if alive() {
		t.Fatalf("step command (pid %d) outlived its killed worker", child)
	}
}

func TestExecStderrLinesOnSuccessAndFailure(t *testing.T) {
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{`echo one >&2; printf 'two\r\nthree' >&2; echo '{}'`, true},
		{`echo one >&2; printf 'two\r\nthree' >&2; exit 65`, false},
	} {
		h := sh(t, tc.script)
		var got []string
		h.Stderr = func(r Request, line string) {
			if r.TraceID != "t1" || r.Attempt != 2 || r.Class != "c" {
				t.Errorf("request %+v", r)
			}
			got = append(got, line)
		}
		_, err := h.Handle(context.Background(), req())
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err = %v", tc.script, err)
		}
		if strings.Join(got, "|") != "one|two|three" {
			t.Errorf("%s: lines = %q", tc.script, got)
		}
	}
}

func TestExecStderrIsBounded(t *testing.T) {
	h := sh(t, `head -c 5000 /dev/zero | tr '\0' x >&2; echo >&2; i=0; while [ $i -lt 300 ]; do echo l$i >&2; i=$((i+1)); done; echo null`)
	var got []string
	h.Stderr = func(_ Request, line string) { got = append(got, line) }
	if _, err := h.Handle(context.Background(), req()); err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxStderrLines+1 {
		t.Fatalf("%d lines, want %d and a note", len(got), MaxStderrLines+1)
	}
	if first := got[0]; len(first) != MaxStderrLine+len("…") || !strings.HasSuffix(first, "…") {
		t.Errorf("long line kept %d bytes", len(first))
	}
	if got[MaxStderrLines-1] != "l198" || got[MaxStderrLines] != "(101 more stderr lines dropped: at most 200 per step are logged)" {
		t.Errorf("tail = %q", got[MaxStderrLines-1:])
	}
}

// A handler naming an absurd retry_after_seconds is read as retry.MaxRetryAfter, not as an
// overflowed (wrapped) Duration.
func TestExecHugeRetryAfterIsCapped(t *testing.T) {
	e := parseFailure([]byte(`{"error":{"code":"Busy","retry_after_seconds":100000000000}}`))
	if e == nil || !e.Throttle || e.RetryAfter != retry.MaxRetryAfter {
		t.Errorf("got %+v, want a throttle of retry.MaxRetryAfter", e)
	}
}
