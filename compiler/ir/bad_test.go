package ir_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/spec/diag"
)

var update = flag.Bool("update", false, "rewrite the .want files of testdata/bad (read the diff before committing)")

// load runs the driver's pipeline as validate does up to generation: the loader, lowering
// and the rules, which still run on every part of the spec that parsed.
func load(t testing.TB, path string) diag.Diagnostics {
	t.Helper()
	_, _, ds := compiler.Load(path)
	return ds
}

// TestBadSpecs: every malformed spec yields its expected positioned diagnostics, never a panic.
func TestBadSpecs(t *testing.T) {
	specs, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(specs) < 40 {
		t.Fatalf("want at least 40 bad-spec fixtures, have %d", len(specs))
	}
	for _, path := range specs {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			ds := load(t, path)
			if !ds.HasErrors() {
				t.Fatalf("%s: no error reported", path)
			}
			var lines []string
			for _, d := range ds {
				if d.Subject == nil || d.Subject.Start.Line < 1 {
					t.Errorf("diagnostic without a position: %v", d)
				}
				lines = append(lines, d.String())
			}
			got := strings.Join(lines, "\n") + "\n"
			wantPath := strings.TrimSuffix(path, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(wantPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestDirectoryIsAPositionedError(t *testing.T) {
	ds := load(t, "testdata")
	if len(ds) != 1 || ds[0].Code != "P009" || ds[0].Subject == nil {
		t.Fatalf("got %v", ds)
	}
}
