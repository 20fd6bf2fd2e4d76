package compiler_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/spec/diag"
)

// The spec's OpenAI-compatible policy fields reach the worker: fleetc writes them into the
// runtime config, and fleet-worker's loader accepts what fleetc wrote (issue 12).
func TestOpenAIPolicyFieldsReachTheWorker(t *testing.T) {
	raw, err := os.ReadFile("check/testdata/M006/pass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(raw), "    retries: 0\n", "    retries: 0\n    context_window_fallbacks: [backup]\n", 1)
	spec = strings.Replace(spec, `handler: { exec: ["/app/worker"] }`, `handler: { llm: { system: prompts/worker.md, max_iterations: 5 } }`, 1)
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(path, []byte(spec), 0o644)
	set := buildFile(t, path)
	b, ok := set.Get("runtime/worker.json")
	if !ok {
		t.Fatalf("no runtime/worker.json in %v", set.Paths())
	}
	c, err := config.Parse("worker.json", b)
	if err != nil {
		t.Fatalf("fleet-worker refuses what fleetc wrote: %v\n%s", err, b)
	}
	backup := c.Models.Policies["backup"]
	if backup.BaseURL != "https://litellm.internal.example/v1" || backup.APIKeyEnv != "LITELLM_API_KEY" || backup.Targets[0] != "openai/gpt-4o-mini" ||
		backup.APIKey == nil || *backup.APIKey != (config.APIKey{Secret: "fx/litellm", JSONKey: "api_key"}) {
		t.Fatalf("backup policy %+v", backup)
	}
	if cw := c.Models.Policies["primary"].ContextWindowFallbacks; len(cw) != 1 || cw[0] != "backup" {
		t.Fatalf("context_window_fallbacks %v", cw)
	}
	if c.Handler.Type != "llm" || c.Handler.MaxIterations != 5 || c.Handler.System != "prompts/worker.md" {
		t.Fatalf("handler %+v", c.Handler)
	}
	if strings.Contains(string(b), "sk-") {
		t.Fatal("a key in the runtime config")
	}
}

// A policy keyed only by api_key_env (or a hosted base_url with no key at all) does not
// build for AWS (M007: nothing sets the variable there), and builds for fleetc dev, whose
// workers inherit the developer's shell: the same spec, run locally, is not refused.
func TestKeySourceRequiredOnlyWhenDeployed(t *testing.T) {
	const spec = "check/testdata/M007/fail.yaml"
	m007 := func(ds diag.Diagnostics) int {
		return len(slices.DeleteFunc(slices.Clone(ds), func(d *diag.Diagnostic) bool { return d.Code != "M007" }))
	}
	deployed, err := compiler.Compile(compiler.Input{Path: spec})
	if err != nil {
		t.Fatal(err)
	}
	if deployed.Files != nil || m007(deployed.Diagnostics) != 2 {
		t.Fatalf("deployed build: files %v, %d M007 findings, want none and 2: %v", deployed.Files != nil, m007(deployed.Diagnostics), deployed.Diagnostics)
	}
	local, err := compiler.Compile(compiler.Input{Path: spec, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	if local.Files == nil || m007(local.Diagnostics) != 0 {
		t.Fatalf("local build: files %v, %d M007 findings, want files and 0: %v", local.Files != nil, m007(local.Diagnostics), local.Diagnostics)
	}
	if local.Fleet == nil || !local.Fleet.Local {
		t.Fatalf("local compile: fleet %v", local.Fleet)
	}
}
