package types_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/types"
)

// requireTool finds a toolchain, or skips loudly (fails under FLEETC_REQUIRE_TOOLS=1).
func requireTool(t *testing.T, candidates ...string) string {
	t.Helper()
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("SKIPPING: none of %v found; install them with tools/install.sh (typescript, mypy)", candidates)
	if os.Getenv("FLEETC_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg + " and FLEETC_REQUIRE_TOOLS=1")
	}
	t.Skip(msg)
	return ""
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TestExamplesCompile writes every example's types in the three languages and hands each
// file to its toolchain: go vet, tsc --noEmit --strict, python3 -m py_compile and mypy --strict.
func TestExamplesCompile(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/*/fleet.yaml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	root, _ := filepath.Abs("../..")
	tsc := filepath.Join(root, "tools/typescript/node_modules/.bin/tsc")
	for _, p := range paths {
		name := filepath.Base(filepath.Dir(p))
		_, fleet, ds := compiler.Load(p)
		if fleet == nil || ds.HasErrors() {
			t.Fatalf("%s: %v", p, ds)
		}
		for _, lang := range types.Langs() {
			t.Run(name+"/"+lang, func(t *testing.T) {
				f, err := types.Generate(fleet, lang)
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, f.Path), f.Bytes, 0o644); err != nil {
					t.Fatal(err)
				}
				switch lang {
				case types.Go:
					gobin := requireTool(t, "go")
					run(t, dir, gobin, "mod", "init", "example.com/"+strings.ReplaceAll(name, "-", ""))
					run(t, dir, gobin, "vet", "./...")
				case types.TypeScript:
					if _, err := os.Stat(tsc); err != nil {
						tsc = requireTool(t, "tsc")
					}
					run(t, dir, tsc, "--noEmit", "--strict", "--target", "es2020", f.Path)
				case types.Python:
					py := requireTool(t, "python3")
					run(t, dir, py, "-m", "py_compile", f.Path)
					// mypy comes from Debian's package where apt-get may run (PyPI is out of
					// reach): checked when installed, else skipped loudly.
					mypy, err := exec.LookPath("mypy")
					if err != nil {
						t.Skip("SKIPPING mypy --strict: mypy not installed (tools/install.sh mypy, as root)")
					}
					run(t, dir, mypy, "--strict", "--python-version", "3.11", "--cache-dir", filepath.Join(dir, ".mypy_cache"), f.Path)
				}
			})
		}
	}
}
