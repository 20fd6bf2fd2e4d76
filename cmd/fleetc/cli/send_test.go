package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
