package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetc/fleetc/compiler/deploy"
)

// apply and destroy that would have to ask refuse before planning when stdin is no terminal
// (a regular file here, even one holding yes): nothing is built, Terraform is never looked for.
func TestChangeWithoutTerminalRefusesBeforePlanning(t *testing.T) {
	dir := t.TempDir()
	spec, _ := uniqueSpec(t, dir, nil)
	in := filepath.Join(dir, "answers")
	if err := os.WriteFile(in, []byte("yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	null, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, cmd := range []string{"apply", "destroy"} {
		var out, errb bytes.Buffer
		code := Main([]string{cmd, spec, "-o", filepath.Join(dir, "out"), "--terraform-bin", "/nonexistent/terraform"}, null, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), "no terminal to confirm on") {
			t.Errorf("%s: exit %d, stderr:\n%s", cmd, code, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Fatalf("built before refusing: %v", err)
	}
}

func TestSendRefusesABadDetail(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "send", "../../../examples/research-fleet/fleet.yaml", "agent.step.requested",
		"--detail", `{"trace_id":"t","conversation_id":"c","step":-1}`, "--endpoint", "http://127.0.0.1:1")
	if code != exitInvalid || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"detail /: missing properties: 'agent_class'", "detail /step: must be >= 0 but found -1", "Nothing was sent."} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = runCLI(t, "", "send", "../../../examples/research-fleet/fleet.yaml", "agent.step.requested", "--example", "--detail", "{}")
	if code != exitUsage || !strings.Contains(stderr, "exactly one of") {
		t.Errorf("two detail sources: exit %d, %s", code, stderr)
	}
}

// TestSendRefusesAnEndpointOffLoopback: send signs with the caller's own credentials, so an
// --endpoint on another host (here a recording server on this machine's non-loopback
// address) is refused before any request, by plan's check; so are dlq, dlq redrive, replay,
// redrive-execution and trace. Before, the server received PutEvents signed with the real key.
func TestSendRefusesAnEndpointOffLoopback(t *testing.T) {
	ip := nonLoopbackIP(t)
	var got atomic.Int32
	var auth atomic.Value
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = io.WriteString(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"e-1"}]}`)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAREALKEYDONOTSEND")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(deploy.EnvEndpoint, "")

	code, stdout, stderr := runCLI(t, "", "send", research, "agent.step.requested", "--example", "--endpoint", srv.URL)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "--endpoint "+srv.URL+" is not on loopback") {
		t.Errorf("send to %s: exit %d, stdout %q, stderr %q", srv.URL, code, stdout, stderr)
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("%s got %d requests, signed %q", srv.URL, n, auth.Load())
	}
	for _, args := range [][]string{
		{"dlq", research},
		{"dlq", "redrive", research, "researcher"},
		{"replay", research, "--from", "2026-12-01T00:00:00Z", "--to", "2026-12-02T00:00:00Z", "--dry-run"},
		{"redrive-execution", research, "conversation"},
		{"trace", "conv-1", research},
	} {
		code, _, stderr := runCLI(t, "", append(args, "--endpoint", srv.URL)...)
		if code != exitUsage || !strings.Contains(stderr, "is not on loopback") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	if n := got.Load(); n != 0 {
		t.Errorf("%s got %d requests", srv.URL, n)
	}
	// The loopback endpoint still goes through to the request (nothing listens on port 1).
	if _, _, stderr := runCLI(t, "", "send", research, "agent.step.requested", "--example", "--endpoint", "http://127.0.0.1:1"); strings.Contains(stderr, "not on loopback") {
		t.Errorf("loopback endpoint refused: %s", stderr)
	}
}

// nonLoopbackIP is an IPv4 address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

// putEventsServer stands in for EventBridge on loopback (no emulator needed to check what
// send prints): it asserts the PutEvents target and answers as the PutEvents API reference
// documents a success.
func putEventsServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
			t.Errorf("X-Amz-Target %q, want AWSEvents.PutEvents", got)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = io.WriteString(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"e-1"}]}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(deploy.EnvEndpoint, "")
	return srv.URL
}

// send --example on the research fleet puts an agent.step.requested whose agent_class is
// the schema's placeholder, which neither class's match takes: send still sends it, warns
// and names the field and values each class needs; a detail a class takes, no warning; an
// event no class consumes, a warning saying so.
func TestSendWarnsWhenNoClassConsumes(t *testing.T) {
	endpoint := putEventsServer(t)
	code, stdout, stderr := runCLI(t, "", "send", research, "agent.step.requested", "--example", "--endpoint", endpoint)
	if code != exitOK || !strings.Contains(stdout, "sent agent.step.requested") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"fleetc send: warning: no class consumes this agent.step.requested",
		`for class coder (agents.coder.consumes.match): agent_class to one of ["coder"]`,
		`for class researcher (agents.researcher.consumes.match): agent_class to one of ["researcher"]`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, stderr = runCLI(t, "", "send", research, "agent.step.requested",
		"--detail", `{"conversation_id":"c1","step":1,"agent_class":"coder"}`, "--endpoint", endpoint)
	if code != exitOK || !strings.Contains(stdout, "sent agent.step.requested") || stderr != "" {
		t.Errorf("a detail coder takes: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "", "send", research, "agent.step.completed", "--example", "--endpoint", endpoint)
	if code != exitOK || !strings.Contains(stderr, "fleetc send: warning: no class consumes agent.step.completed in fleet research; nothing will run it") {
		t.Errorf("an event nobody consumes: exit %d, stderr %q", code, stderr)
	}
}
