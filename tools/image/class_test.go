package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/internal/ociimage"
)

// The class-image examples (examples/images/*): each copies fleet-worker from the image this
// tool builds to the same entrypoint, and its handler speaks fleet-worker's exec protocol
// (the step on stdin, the result JSON on stdout), run here with the interpreter it names.
func TestClassImageExamples(t *testing.T) {
	step := `{"detail":{"trace_id":"t-1","name":"Ada"}}`
	for _, c := range []struct{ dir, interp, handler string }{
		{"python", "python3", "handler.py"},
		{"node", "node", "handler.mjs"},
		{"shell", "sh", "handler.sh"},
	} {
		dir := filepath.Join("../../examples/images", c.dir)
		df, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"COPY --from=worker " + ociimage.Entrypoint + " " + ociimage.Entrypoint, `ENTRYPOINT ["` + ociimage.Entrypoint + `"]`, "COPY " + c.handler + " /app/" + c.handler} {
			if !strings.Contains(string(df), want) {
				t.Errorf("%s/Dockerfile lacks %q", c.dir, want)
			}
		}
		if _, err := exec.LookPath(c.interp); err != nil {
			t.Logf("SKIPPED %s handler: %s not on PATH", c.dir, c.interp)
			continue
		}
		if c.dir == "shell" {
			if _, err := exec.LookPath("jq"); err != nil {
				t.Logf("SKIPPED shell handler: jq not on PATH")
				continue
			}
		}
		cmd := exec.Command(c.interp, filepath.Join(dir, c.handler))
		cmd.Stdin = strings.NewReader(step)
		out, err := cmd.Output()
		var res map[string]string
		if err != nil || json.Unmarshal(out, &res) != nil || res["greeting"] != "hello, Ada" {
			t.Errorf("%s handler: %q, %v", c.dir, out, err)
		}
	}
}
