package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetc/fleetc/internal/localhttp/localhttptest"
	"github.com/fleetc/fleetc/runtime/tools"
)

// runLocal starts tools.Run (fleet-worker --mode tools without the Lambda runtime API) on
// listen and returns its base URL, read from its "async tools listening" log line.
func runLocal(t *testing.T, svc *tools.Service, listen string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- tools.Run(ctx, svc, func(string) string { return "" }, listen, slog.New(slog.NewJSONHandler(pw, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		pw.Close()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	select {
	case l := <-lines:
		var rec struct{ Msg, Addr string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Msg != "async tools listening" {
			t.Fatalf("first log line %q", l)
		}
		go func() {
			for range lines {
			}
		}()
		return "http://" + rec.Addr
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not listen")
	}
	return ""
}

// TestLocalListenerRefusesOtherSites: the local listener, which believes the principal
// header, takes no request another site can send (and no rebound Host), writes nothing for
// them, and still serves the SDK's MCP client and a same-origin JSON call. It listens on
// loopback only.
func TestLocalListenerRefusesOtherSites(t *testing.T) {
	e := newEnv(t)
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		// Refused at once; served, Run would return nil when the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := tools.Run(ctx, e.svc, func(string) string { return "" }, addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
		cancel()
		if err == nil {
			t.Errorf("Run on %q: served, want refused (loopback only)", addr)
		}
	}
	base := runLocal(t, e.svc, "127.0.0.1:0")
	as := http.Header{tools.HeaderPrincipal: {alice.Principal}, tools.HeaderSession: {alice.Session}}
	localhttptest.Refused(t, base+tools.ToolsPath+"start_cdk_synth", synthArgs, as)
	localhttptest.Refused(t, base+tools.MCPPath, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_cdk_synth","arguments":`+synthArgs+`}}`, as)
	localhttptest.ReadRefused(t, base+"/tools", as)
	if n := e.items(t); n != 0 {
		t.Fatalf("jobs = %d after refused requests, want 0", n)
	}
	if code, body := localhttptest.SameOrigin(t, base+tools.ToolsPath+"start_cdk_synth", synthArgs, as); code != http.StatusOK {
		t.Fatalf("same-origin start: %d %s", code, body)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleetc-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + tools.MCPPath, HTTPClient: &http.Client{Transport: caller{bob, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var args map[string]any
	_ = json.Unmarshal([]byte(synthArgs), &args)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "start_cdk_synth", Arguments: args}); err != nil || res.IsError {
		t.Fatalf("MCP client through the guard: %v %+v", err, res)
	}
	if n := e.items(t); n != 2 {
		t.Errorf("jobs = %d, want alice's and bob's", n)
	}
}
