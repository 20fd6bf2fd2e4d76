package types_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
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

// TestExamplesCompile writes every example's types in the three languages and hands them to
// each toolchain once (one invocation per language keeps the test fast): go vet,
// tsc --noEmit --strict, python3 -m py_compile and mypy --strict.
func TestExamplesCompile(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/*/fleet.yaml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	root, _ := filepath.Abs("../..")
	dirs := map[string]string{}
	files := map[string][]string{}
	for _, lang := range types.Langs() {
		dirs[lang] = t.TempDir()
	}
	for _, p := range paths {
		name := strings.ReplaceAll(filepath.Base(filepath.Dir(p)), "-", "_")
		_, fleet, ds := compiler.LoadEnv(p, irtest.FirstEnvOf(p))
		if fleet == nil || ds.HasErrors() {
			t.Fatalf("%s: %v", p, ds)
		}
		for _, lang := range types.Langs() {
			f, err := types.Generate(fleet, lang)
			if err != nil {
				t.Fatal(err)
			}
			// One Go package per example; TypeScript and Python files side by side, each a module.
			rel := name + "_" + f.Path
			if lang == types.Go {
				rel = filepath.Join(name, f.Path)
			}
			full := filepath.Join(dirs[lang], rel)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, f.Bytes, 0o644); err != nil {
				t.Fatal(err)
			}
			files[lang] = append(files[lang], rel)
		}
	}
	t.Run(types.Go, func(t *testing.T) {
		gobin := requireTool(t, "go")
		run(t, dirs[types.Go], gobin, "mod", "init", "example.com/fleettypes")
		run(t, dirs[types.Go], gobin, "vet", "./...")
	})
	t.Run(types.TypeScript, func(t *testing.T) {
		tsc := filepath.Join(root, "tools/typescript/node_modules/.bin/tsc")
		if _, err := os.Stat(tsc); err != nil {
			tsc = requireTool(t, "tsc")
		}
		run(t, dirs[types.TypeScript], tsc, append([]string{"--noEmit", "--strict", "--target", "es2020"}, files[types.TypeScript]...)...)
	})
	t.Run(types.Python, func(t *testing.T) {
		py := requireTool(t, "python3")
		for _, f := range files[types.Python] {
			run(t, dirs[types.Python], py, "-m", "py_compile", f)
		}
		// mypy comes from Debian's package where apt-get may run (PyPI is out of reach):
		// checked when installed, else skipped loudly.
		mypy, err := exec.LookPath("mypy")
		if err != nil {
			t.Skip("SKIPPING mypy --strict: mypy not installed (tools/install.sh mypy, as root)")
		}
		run(t, dirs[types.Python], mypy, append([]string{"--strict", "--python-version", "3.11", "--cache-dir", filepath.Join(dirs[types.Python], ".mypy_cache")}, files[types.Python]...)...)
	})
}
