package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rt "github.com/fleetc/fleetc/runtime/router/routertest"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// TestGatewayModeServesMetrics: `fleet-worker gateway` answers GET /metrics on its own
// listener with the gateway's own-time histogram and its answers by policy and status,
// beside the router's and the process's series, after one chat completion went through.
func TestGatewayModeServesMetrics(t *testing.T) {
	up := rt.OpenAI(t, "sk-upstream", rt.Always(rt.Reply{Text: "hi"}))
	raw, err := os.ReadFile("../../runtime/config/testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(raw, &cfg)
	cfg["models"] = map[string]any{"policy": "gpt", "policies": map[string]any{
		"gpt": map[string]any{"targets": []string{"openai/gpt-4o-mini"}, "base_url": up.URL + "/v1", "api_key_env": "UPSTREAM_KEY",
			"retries": 1, "timeout_seconds": 10, "allowed_fails": 100, "cooldown_seconds": 1, "max_in_flight": 4, "tokens_per_minute": 1000000, "fallbacks": []string{}},
	}}
	path := filepath.Join(t.TempDir(), "researcher.json")
	b, _ := json.Marshal(cfg)
	os.WriteFile(path, b, 0o644)
	env := map[string]string{"UPSTREAM_KEY": "sk-upstream"}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"gateway", "--config", path, "--max-waiting", "8"}, func(k string) string { return env[k] }, pw, &stderr)
		pw.Close()
		exited <- code
	}()
	defer func() {
		cancel()
		if code := <-exited; code != exitOK {
			t.Errorf("fleet-worker gateway exited %d: %s", code, stderr.String())
		}
	}()
	exports := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(exports) < 7 && sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			exports[k] = v
		}
	}
	go io.Copy(io.Discard, pr)
	base := exports["FLEET_MODEL_GATEWAY_BEDROCK_URL"]
	if base == "" {
		t.Fatalf("exports %v (stderr %s)", exports, stderr.String())
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+exports["OPENAI_API_KEY"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat completion: %d", resp.StatusCode)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		metric.GatewayOwnTime + `_count{policy="gpt"} 1`,
		metric.GatewayRequests + `{policy="gpt",status="200"} 1`,
		metric.ModelCalls + `{deployment="openai/gpt-4o-mini",outcome="success",policy="gpt"} 1`,
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("GET /metrics (%d) lacks %s:\n%s", resp.StatusCode, want, text)
		}
	}
}
