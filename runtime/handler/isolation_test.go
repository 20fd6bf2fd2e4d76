package handler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The command gets an allow-list of the worker's environment: never its credentials or keys.
func TestExecEnvironmentIsAnAllowList(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":                  "AKIAWORKER",
		"AWS_SECRET_ACCESS_KEY":              "worker-secret",
		"AWS_SESSION_TOKEN":                  "worker-session",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN":  "pod-identity-token",
		"OPENAI_API_KEY":                     "sk-worker",
		"FLEET_QUEUE_URL":                    "https://sqs/queue",
		"LANG":                               "C.UTF-8",
		"TZ":                                 "UTC",
		"HOME":                               "/home/worker",
	} {
		t.Setenv(k, v)
	}
	dump := filepath.Join(t.TempDir(), "env")
	run := func(inherit []string) map[string]string {
		t.Helper()
		h, err := NewExec([]string{"/bin/sh", "-c", `env > "$0"; echo '{}'`, dump})
		if err != nil {
			t.Fatal(err)
		}
		h.Env = []string{"FLEET_MODEL_GATEWAY_URL=http://127.0.0.1:1/v1"}
		h.InheritEnv = inherit
		r := req()
		r.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		if _, err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			switch k {
			case "PWD", "SHLVL", "_", "OLDPWD": // the shell's own
			default:
				env[k] = v
			}
		}
		return env
	}
	env := run(nil)
	want := []string{"FLEET_ATTEMPT", "FLEET_CLASS", "FLEET_IDEMPOTENCY_KEY", "FLEET_MODEL_GATEWAY_URL", "FLEET_TRACE_ID", "HOME", "LANG", "PATH", "TRACEPARENT", "TZ"}
	var got []string
	for k := range env {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the command's environment has %v, want exactly %v", got, want)
	}
	if env["FLEET_CLASS"] != "c" || env["LANG"] != "C.UTF-8" || env["PATH"] != os.Getenv("PATH") {
		t.Errorf("values: %v", env)
	}
	// handler.inherit_env opts in by name.
	env = run([]string{"OPENAI_API_KEY", "NOT_SET_ANYWHERE"})
	if env["OPENAI_API_KEY"] != "sk-worker" {
		t.Errorf("inherit_env did not pass OPENAI_API_KEY: %v", env)
	}
	if _, ok := env["NOT_SET_ANYWHERE"]; ok || env["AWS_SECRET_ACCESS_KEY"] != "" {
		t.Errorf("inherit_env passed more than it named: %v", env)
	}
}

// stdout is capped at maxOutput bytes: exactly the cap is a result, one byte more is
// OutputTooLarge (the embedded bytes.Buffer's ReadFrom once let 400 MiB through).
func TestExecOutputCap(t *testing.T) {
	emit := func(n int) *Exec {
		// A JSON string of n bytes: the quotes and n-2 letters.
		return sh(t, fmt.Sprintf(`printf '"'; head -c %d /dev/zero | tr '\0' a; printf '"'`, n-2))
	}
	out, err := emit(maxOutput).Handle(context.Background(), req())
	if err != nil || len(out) != maxOutput {
		t.Fatalf("%d bytes: len %d, err %v", maxOutput, len(out), err)
	}
	_, err = emit(maxOutput+1).Handle(context.Background(), req())
	if e := asRetry(t, err); e.Code != "OutputTooLarge" || e.Retryable {
		t.Errorf("%d bytes: %+v, want OutputTooLarge, not retryable", maxOutput+1, e)
	}
}
