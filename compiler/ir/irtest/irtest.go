// Package irtest loads specs into IRs for tests, failing the test on any error.
package irtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Load loads and lowers the spec at path.
func Load(t testing.TB, path string) *ir.Fleet {
	t.Helper()
	file, ds := spec.LoadFile(path)
	return lower(t, path, file, ds)
}

// LoadSource loads and lowers a spec held in a string.
func LoadSource(t testing.TB, src string) *ir.Fleet {
	t.Helper()
	file, ds := spec.Load("fleet.yaml", []byte(src))
	return lower(t, "fleet.yaml", file, ds)
}

func lower(t testing.TB, name string, file *spec.File, ds diag.Diagnostics) *ir.Fleet {
	t.Helper()
	if file == nil || ds.HasErrors() {
		t.Fatalf("load %s:\n%v", name, ds)
	}
	if env := FirstEnv(file); env != "" {
		if file, ds = file.Select(env); file == nil || ds.HasErrors() {
			t.Fatalf("load %s, environment %s:\n%v", name, env, ds)
		}
	}
	f, ds := ir.Lower(file)
	if ds.HasErrors() {
		t.Fatalf("lower %s:\n%v", name, ds)
	}
	return f
}

// FirstEnv is the environment a test takes of a spec that declares some (the first in name
// order: they all share the spec's events, classes and workflows), "" for one that has none.
func FirstEnv(file *spec.File) string {
	if file == nil {
		return ""
	}
	if envs := file.Environments(); len(envs) > 0 {
		return envs[0]
	}
	return ""
}

// FirstEnvOf is FirstEnv of the spec at path.
func FirstEnvOf(path string) string {
	file, _ := spec.LoadFile(path)
	return FirstEnv(file)
}

// FirstEnvOfSource is FirstEnv of a spec held in memory.
func FirstEnvOfSource(src []byte) string {
	file, _ := spec.Load("fleet.yaml", src)
	return FirstEnv(file)
}

// Examples returns the paths of every examples/*/fleet.yaml, found from the repository root.
func Examples(t testing.TB) []string {
	t.Helper()
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "examples", "*", "fleet.yaml"))
	if len(paths) == 0 {
		t.Fatal("no examples/*/fleet.yaml found")
	}
	return paths
}

// BigFleet writes a spec with n agent classes: one in four consumes its own event (a bus
// holds at most 300 rules), the rest are dispatched by workflows of ten steps each.
func BigFleet(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nfleet: big\nregion: us-east-1\nbus: { name: big }\nworker: { image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0, eks: { cluster: big, keda_operator_role: \"arn:aws:iam::111122223333:role/keda-operator\" } }\n")
	b.WriteString("models:\n  fast:\n    targets: [bedrock/us.anthropic.claude-haiku-4-5]\n    fallbacks: [slow]\n    max_in_flight: 100000\n  slow:\n    targets: [bedrock/us.anthropic.claude-sonnet-4-5]\n    max_in_flight: 100000\n")
	b.WriteString("events:\n")
	for i := 0; i < n; i += 4 {
		fmt.Fprintf(&b, "  task.c%04d:\n    version: 1\n    source: big.app\n    detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } }\n", i)
	}
	b.WriteString("agents:\n")
	for i := 0; i < n; i++ {
		rt := []string{"eks", "lambda"}[i%2]
		fmt.Fprintf(&b, "  c%04d:\n    runtime: %s\n    step: { p95: 20s, max: 2m }\n    model: fast\n    handler: { exec: [/app/run] }\n    scaling: { min: 1, max: 10, per_replica: 4 }\n", i, rt)
		if i%4 == 0 {
			fmt.Fprintf(&b, "    consumes: { event: task.c%04d }\n", i)
		}
	}
	b.WriteString("workflows:\n")
	for w := 0; w*10 < n; w++ {
		fmt.Fprintf(&b, "  w%03d:\n    steps:\n", w)
		for i := w * 10; i < min(n, w*10+10); i++ {
			if i%2 == 0 { // eks workers send task heartbeats; lambda workers do not (S003)
				fmt.Fprintf(&b, "      - { agent: c%04d, timeout: 20m, heartbeat: 10m }\n", i)
			} else {
				fmt.Fprintf(&b, "      - { agent: c%04d, timeout: 10m }\n", i)
			}
		}
	}
	return []byte(b.String())
}

// Dig walks a decoded JSON or YAML document by map keys (strings) and list indexes (ints),
// failing the test when the path does not exist.
func Dig(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not an object: %v", k, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at [%d]: not a list that long: %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}

// FormatDefault writes a default of ir.Defaults as fleet.yaml would: 4d, 200KiB, 3, true,
// classic. The defaults test and the generated spec reference both show defaults this way.
func FormatDefault(v any) string {
	switch x := v.(type) {
	case time.Duration:
		if x == 0 {
			return "0s"
		}
		return spec.FormatDuration(x)
	case spec.Size:
		return spec.FormatSize(int64(x))
	}
	return fmt.Sprint(v)
}
