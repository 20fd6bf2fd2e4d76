package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
