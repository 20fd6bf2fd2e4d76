package compiler_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// runtimeImportsLeft are the compiler's remaining imports of runtime/ packages, each with why
// it is still there; the list may only shrink (an entry no longer imported fails the test).
// It is empty: the simulator moved beside the other commands' engines (cmd/fleetc/simulate:
// it replays the worker's own retry policy, behaviour rather than vocabulary), and deploy
// takes its S3 client for emptying buckets from the command (deploy.BucketClient).
var runtimeImportsLeft = map[string]string{}

// TestCompilerImportsNoRuntime: what the compiler and fleet-worker share lives under schemas/
// (schemas/contract, schemas/runtimeconfig, schemas/jobs, schemas/awslimits), so no product
// package under compiler/ or schemas/ reaches a runtime/ package, directly or through another
// package, but by the edges listed in runtimeImportsLeft.
func TestCompilerImportsNoRuntime(t *testing.T) {
	const mod = "github.com/fleetc/fleetc/"
	imports := goListImports(t, "./compiler/...", "./schemas/...")
	used := map[string]bool{}
	var bad []string
	for pkg := range imports {
		if !strings.HasPrefix(pkg, mod+"compiler") && !strings.HasPrefix(pkg, mod+"schemas") {
			continue
		}
		// Walk pkg's product dependencies breadth first, recording how each was reached.
		from := map[string]string{pkg: ""}
		queue := []string{pkg}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, dep := range imports[p] {
				if !strings.HasPrefix(dep, mod) {
					continue
				}
				if edge := p + " -> " + dep; runtimeImportsLeft[edge] != "" {
					used[edge] = true
					continue
				}
				if _, seen := from[dep]; seen {
					continue
				}
				from[dep] = p
				if strings.HasPrefix(dep, mod+"runtime/") {
					chain := []string{dep}
					for q := p; q != ""; q = from[q] {
						chain = append([]string{q}, chain...)
					}
					bad = append(bad, strings.Join(chain, " -> "))
					continue
				}
				queue = append(queue, dep)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("imports runtime/: %s; move what it shares to schemas/", b)
	}
	for edge, why := range runtimeImportsLeft {
		if !used[edge] {
			t.Errorf("%s is gone (%s): remove it from runtimeImportsLeft", edge, why)
		}
	}
}

// goListImports maps every package the patterns reach to its product (non-test) imports.
func goListImports(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports"}, patterns...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	m := map[string][]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		m[p.ImportPath] = p.Imports
	}
	if len(m) < 50 {
		t.Fatalf("go list found %d packages: the listing is broken", len(m))
	}
	return m
}
