package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/cli"
	"github.com/fleetc/fleetc/cmd/fleetc/internal/dlqtest"
)

var update = flag.Bool("update", false, "rewrite the output shown in docs/operating.md's DLQ session")

// operatingDoc holds the DLQ triage session TestDocsOperating runs.
const operatingDoc = "../../docs/operating.md"

// TestDocsOperating runs docs/operating.md's DLQ session on kumo: the fixture fleet's real
// fleet-worker dead-letters three jobs as BadOutput (its handler's bug) and two bodies as
// MalformedMessage, the handler is fixed before the first canary redrive, and every command's
// output (stdout and stderr) must be what the document shows, message ids, times and ages
// aside. With -update it rewrites the shown output instead.
func TestDocsOperating(t *testing.T) {
	docPath, err := filepath.Abs(operatingDoc)
	if err != nil {
		t.Fatal(err)
	}
	f := dlqtest.New(t, "opsdoc")
	t.Chdir(filepath.Dir(f.Spec))
	stop := f.StartWorker(t, "solver")
	for i := 1; i <= 3; i++ {
		f.DeadLetter(t, "solver", dlqtest.Event(fmt.Sprintf("ev-bad-%d", i), map[string]any{"trace_id": fmt.Sprintf("t-%d", i), "job": fmt.Sprintf("bad-%d", i), "conversation_id": "c1"}), "")
	}
	f.DeadLetter(t, "solver", "not json at all", "")
	f.DeadLetter(t, "solver", "{truncated", "")
	stop()
	f.StartWorker(t, "solver")

	run := func(stdin string, args ...string) (int, string) {
		var out bytes.Buffer
		code := cli.Main(args, strings.NewReader(stdin), &out, &out)
		return code, out.String()
	}
	ep := "--endpoint=" + f.Endpoint
	// Bad input, before the session: nothing moves.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "fleet.yaml", "nope", ep}, `fleet opsdoc has no class "nope"; its classes: chat, solver`},
		{[]string{"dlq", "redrive", "fleet.yaml", "chat", "--auto-approve", ep}, "the DLQ of class chat (opsdoc-chat-dlq.fifo) is empty"},
		{[]string{"dlq", "redrive", "fleet.yaml", "solver", "--max", "-1", ep}, "must not be negative"},
	} {
		if code, out := run("", c.args...); code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output:\n%s\nwant %q", c.args, code, out, c.want)
		}
	}
	// Without --auto-approve it asks; anything but yes moves nothing.
	if code, out := run("no\n", "dlq", "redrive", "fleet.yaml", "solver", "--code", "BadOutput", ep); code != 1 || !strings.Contains(out, "Only 'yes' will be accepted") || !strings.Contains(out, "cancelled; nothing was moved") {
		t.Errorf("answered no: exit %d, output:\n%s", code, out)
	}
	f.WaitDepth(t, "solver", true, 5, 5*time.Second)

	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	var rewritten []string
	fixed := false
	for i := 0; i < len(lines); i++ {
		rewritten = append(rewritten, lines[i])
		cmd, ok := strings.CutPrefix(lines[i], "$ fleetc ")
		if !ok {
			continue
		}
		var shown []string
		for i+1 < len(lines) && lines[i+1] != "```" && !strings.HasPrefix(lines[i+1], "$ ") {
			i++
			shown = append(shown, lines[i])
		}
		if strings.Contains(cmd, "--canary") && !fixed {
			f.Handler.Fix() // the fixed handler is deployed
			fixed = true
		}
		args := strings.Fields(strings.ReplaceAll(cmd, "http://127.0.0.1:4566", f.Endpoint))
		_, out := run("", args...)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if *update {
			rewritten = append(rewritten, got...)
			continue
		}
		rewritten = append(rewritten, shown...)
		if normalize(strings.Join(got, "\n")) != normalize(strings.Join(shown, "\n")) {
			t.Errorf("$ fleetc %s\nprints:\n%s\ndocs/operating.md shows:\n%s", cmd, strings.Join(got, "\n"), strings.Join(shown, "\n"))
		}
	}
	if !fixed {
		t.Fatal("docs/operating.md shows no canary redrive")
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(strings.Join(rewritten, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The session moved the three BadOutput jobs, each completed once.
	done, _ := f.Handler.Done()
	for i := 1; i <= 3; i++ {
		if done[fmt.Sprintf("ev-bad-%d", i)] != 1 {
			t.Errorf("bad-%d completed %d times", i, done[fmt.Sprintf("ev-bad-%d", i)])
		}
	}
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<id>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`oldest \d+[smhd]`), "oldest <age>"},
	{regexp.MustCompile(`"oldest_age_seconds": [0-9.e+-]+`), `"oldest_age_seconds": <age>`},
}

// normalize hides what differs between runs: message ids, times and ages.
func normalize(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}
