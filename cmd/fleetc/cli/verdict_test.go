package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneVerdict: for every command × format × --strict, the exit code, the JSON "valid"
// field and the stream the diagnostics go to follow from one verdict. Before, `build
// --strict --format json` printed "valid": true and exited 1 on a spec with warnings.
func TestOneVerdict(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	// Without the cross-group fallback of the last policy, M001 warns.
	warnSpec := filepath.Join(dir, "warn.yaml")
	os.WriteFile(warnSpec, []byte(strings.Replace(string(src), "    fallbacks: [sonnet-overflow]\n", "", 1)), 0o644)
	specs := []struct {
		name, path      string
		errors, warns   bool
		validWithStrict bool
	}{
		{"clean", "../../../examples/minimal/fleet.yaml", false, false, true},
		{"warnings", warnSpec, false, true, false},
		{"errors", "../../../compiler/ir/testdata/bad/undefined-model.yaml", true, true, false}, // the P010 note is a warning
	}
	for _, sp := range specs {
		for _, cmd := range []string{"validate", "build"} {
			for _, format := range []string{"text", "json", "github-actions"} {
				for _, strict := range []bool{false, true} {
					name := sp.name + "/" + cmd + "/" + format
					if strict {
						name += "/strict"
					}
					t.Run(name, func(t *testing.T) {
						args := []string{cmd, "--format", format, sp.path}
						if cmd == "build" {
							args = append(args, "-o", filepath.Join(t.TempDir(), "out"))
						}
						if strict {
							args = append(args, "--strict")
						}
						valid := !sp.errors && (!strict || sp.validWithStrict)
						code, stdout, stderr := run(t, args...)
						if wantCode := map[bool]int{true: 0, false: 1}[valid]; code != wantCode {
							t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, stdout, stderr)
						}
						hasDiags := sp.errors || sp.warns
						switch format {
						case "json":
							var rep struct {
								Valid        bool `json:"valid"`
								ErrorCount   int  `json:"error_count"`
								WarningCount int  `json:"warning_count"`
							}
							if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
								t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
							}
							if rep.Valid != valid {
								t.Errorf(`"valid": %v, want %v`, rep.Valid, valid)
							}
							if (rep.ErrorCount > 0) != sp.errors || (rep.WarningCount > 0) != sp.warns {
								t.Errorf("counts %+v", rep)
							}
							if stderr != "" {
								t.Errorf("stderr must be empty with --format json:\n%s", stderr)
							}
						case "github-actions":
							if hasDiags != strings.HasPrefix(stdout, "::") || stderr != "" {
								t.Errorf("annotations belong on stdout\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
							}
							if strict && sp.warns && !sp.errors && !strings.HasPrefix(stdout, "::error ") {
								t.Errorf("--strict turns warnings into error annotations:\n%s", stdout)
							}
						case "text":
							if hasDiags != strings.Contains(stderr, "error(s)") || strings.Contains(stdout, "error(s)") {
								t.Errorf("text diagnostics belong on stderr\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
							}
							if strict && sp.warns && !sp.errors && !strings.Contains(stderr, "--strict: warnings are errors") {
								t.Errorf("the summary does not say why warnings failed the spec:\n%s", stderr)
							}
						}
					})
				}
			}
		}
	}
}

// TestCheckPrintsAUnifiedDiff: build --check shows drift as a unified diff, not go-cmp's
// debugging output (whose format go-cmp documents as unstable).
func TestCheckPrintsAUnifiedDiff(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	minimal := "../../../examples/minimal/fleet.yaml"
	if code, _, errs := run(t, "build", minimal, "-o", out); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, errs)
	}
	paths := readManifest(t, out)
	changed, removed := paths[0], paths[1]
	orig, _ := os.ReadFile(filepath.Join(out, changed))
	lines := strings.SplitAfter(string(orig), "\n")
	edited := strings.Join(append([]string{"# edited by hand\n"}, lines[1:]...), "")
	os.WriteFile(filepath.Join(out, changed), []byte(edited), 0o644)
	os.Remove(filepath.Join(out, removed))

	code, stdout, _ := run(t, "build", "--check", minimal, "-o", out)
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	wantChanged := "changed: " + out + "/" + changed + "\n" +
		"--- a/" + changed + "\n+++ b/" + changed + "\n@@ -1,"
	if !strings.Contains(stdout, wantChanged) || !strings.Contains(stdout, "\n-# edited by hand\n+"+lines[0]) {
		t.Errorf("no unified diff of the edited file:\n%s", stdout)
	}
	wantAdded := "added: " + out + "/" + removed + "\n--- /dev/null\n+++ b/" + removed + "\n@@ -0,0 +1,"
	if !strings.Contains(stdout, wantAdded) {
		t.Errorf("no unified diff of the missing file:\n%s", stdout)
	}
	if strings.Contains(stdout, "[]string{") {
		t.Errorf("go-cmp output:\n%s", stdout)
	}
}

func readManifest(t *testing.T, out string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, ".fleetc-manifest"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			paths = append(paths, l)
		}
	}
	if len(paths) < 2 {
		t.Fatalf("manifest lists %d files", len(paths))
	}
	return paths
}
