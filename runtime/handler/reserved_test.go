package handler

import (
	"strings"
	"testing"
	"time"
)

// Every variable the worker puts in a command's environment itself (the allow-list, the
// gateway's, the step's) is reserved, so a handler secret (W009, and the worker at start)
// can never shadow one; AWS_* is reserved though never passed; a secret's own name is not.
func TestReservedEnvCoversWhatTheWorkerSets(t *testing.T) {
	h := &Exec{Command: []string{"true"}, Env: []string{}, Secrets: []string{"VENDOR_TOKEN=v"}}
	env := h.environ(func(name string) (string, bool) { return "x", true },
		Request{Class: "c", Key: "k", TraceID: "t", Attempt: 1, ModelPolicy: "p", Deadline: time.Now(), TraceParent: "00-x"})
	n := 0
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "VENDOR_TOKEN" {
			continue
		}
		n++
		if !ReservedEnv(name) {
			t.Errorf("the worker sets %s, but a handler secret may take that name", name)
		}
	}
	if n < len(inheritedEnv)+5 {
		t.Fatalf("environ set only %d variables: %v", n, env)
	}
	for name, want := range map[string]bool{"AWS_SECRET_ACCESS_KEY": true, "AWS_CONTAINER_CREDENTIALS_FULL_URI": true, "VENDOR_TOKEN": false, "OPENAI_API_KEY": false} {
		if ReservedEnv(name) != want {
			t.Errorf("ReservedEnv(%s) = %v, want %v", name, !want, want)
		}
	}
}
