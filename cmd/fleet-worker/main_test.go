package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/buildinfo"
)

// A bad config stops the worker before it makes a single AWS call: the
// endpoint points nowhere, so any call would fail with a different error.
func TestBadConfigExitsBeforeTouchingMessages(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format_version":1,"fleet":"x","runtime":"ecs"}`), 0o644)
	env := map[string]string{"FLEET_AWS_ENDPOINT": "http://127.0.0.1:1"}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "--config is required"},
		{[]string{"--config", filepath.Join(dir, "missing.json")}, "read runtime config"},
		{[]string{"--config", bad}, "/runtime"},
		{[]string{"--config", bad}, "missing properties"},
		{[]string{"--config", "../../runtime/config/testdata/researcher.json", "--mode", "batch"}, `--mode "batch"`},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, func(k string) string { return env[k] }, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.args, code, errb.String(), c.want)
		}
	}
	var errb bytes.Buffer
	bad2 := map[string]string{"FLEET_HEARTBEAT_SECONDS": "900"}
	if code := Main(context.Background(), []string{"--config", "../../runtime/config/testdata/researcher.json"}, func(k string) string { return bad2[k] }, &bytes.Buffer{}, &errb); code != exitUsage || !strings.Contains(errb.String(), "heartbeat_seconds") {
		t.Errorf("bad env override: exit %d %s", code, errb.String())
	}
}

// Lambda and AgentCore cannot pass flags: the config arrives in FLEET_CONFIG_JSON (or a path
// in FLEET_CONFIG) and the mode in FLEET_MODE, as the generated Terraform sets them.
func TestConfigAndModeFromEnvironment(t *testing.T) {
	good, err := os.ReadFile("../../runtime/config/testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"FLEET_CONFIG_JSON": `{"format_version":1`}, "FLEET_CONFIG_JSON"},
		{map[string]string{"FLEET_CONFIG_JSON": string(good), "FLEET_MODE": "batch"}, `--mode "batch"`},
		{map[string]string{"FLEET_CONFIG": "../../runtime/config/testdata/researcher.json", "FLEET_MODE": "batch"}, `--mode "batch"`},
		{map[string]string{"FLEET_CONFIG": "/nonexistent.json"}, "read runtime config"},
		{map[string]string{"FLEET_CONFIG_JSON": string(good), "FLEET_MODE": "dispatch", "FLEET_AGENT_RUNTIME_ARN": "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x-1"}, "needs runtime agentcore"},
	}
	for _, c := range cases {
		var errb bytes.Buffer
		code := Main(context.Background(), nil, func(k string) string { return c.env[k] }, &bytes.Buffer{}, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.env, code, errb.String(), c.want)
		}
	}
}

// --version prints the one build version (internal/buildinfo) and touches nothing; -h is not an error.
func TestVersionAndHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, &errb); code != exitOK || out.String() != "fleet-worker "+buildinfo.Version+"\n" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := Main(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "-config") {
		t.Errorf("--help: exit %d, stderr %q", code, errb.String())
	}
}

// fleet-worker collects at gcPercent unless GOGC says otherwise (TestBinaryPeakRSS holds the
// budget it keeps; this holds the default itself, which that test only sees as noise).
func TestGCDefault(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	setGCDefault(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}
	setGCDefault(func(k string) string { return map[string]string{"GOGC": "200"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=200 set: the worker changed the GC percent to %d; the runtime applies GOGC itself", got)
	}
}
