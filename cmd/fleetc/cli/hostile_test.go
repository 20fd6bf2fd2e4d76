package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetc/fleetc/spec/diag"
)

// Specs in pull requests may come from forks. These tests run every command that reads a
// spec on files a hostile commit can contain and check that fleetc refuses them quickly,
// with a positioned or named error, and prints nothing it should not have read.

// specCommands are the commands that read one spec, each as args with SPEC for the file.
var specCommands = [][]string{
	{"validate", "SPEC"},
	{"build", "SPEC", "-o", "OUT"},
	{"build", "SPEC", "-o", "OUT", "--check"},
	{"graph", "SPEC"},
	{"diff", "SPEC", "SPEC"},
	{"schemas", "check", "SPEC", "--base-file", "SPEC"},
	{"plan", "SPEC", "-o", "OUT"},
}

// runBounded runs the CLI and fails the test if it does not return within limit (a spec
// read forever would otherwise hang the suite).
func runBounded(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		c := Main(args, strings.NewReader(""), &out, &errb)
		done <- result{c, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(limit):
		t.Fatalf("fleetc %s did not return within %s", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

func expand(args []string, spec, out string) []string {
	res := make([]string, len(args))
	for i, a := range args {
		res[i] = strings.NewReplacer("SPEC", spec, "OUT", out).Replace(a)
	}
	return res
}

// environSecrets are the values of this process's environment as the kernel shows it in
// /proc/self/environ (what a symlink to it would leak), by name.
func environSecrets(t *testing.T) map[string]string {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Skipf("no /proc/self/environ: %v", err)
	}
	vals := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && len(v) >= 6 {
			vals[string(k)] = string(v)
		}
	}
	if len(vals) == 0 {
		t.Skip("the environment holds no value long enough to look for")
	}
	return vals
}

func TestSymlinkToEnvironLeaksNothing(t *testing.T) {
	secrets := environSecrets(t)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Symlink("/proc/self/environ", "fleet.yaml"); err != nil {
		t.Fatal(err)
	}
	// A directory link leaves the tree just as well.
	if err := os.Symlink("/proc/self", "deploy"); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"fleet.yaml", "deploy/environ"} {
		for _, args := range specCommands {
			args := expand(args, spec, filepath.Join(dir, "out"))
			code, out, errs := runBounded(t, 20*time.Second, args...)
			if code == 0 {
				t.Errorf("fleetc %v: exit 0 on a link to the environment", args)
			}
			for name, s := range secrets {
				if strings.Contains(out+errs, s) {
					// Name the variable, never print the output: it holds the secret.
					t.Errorf("fleetc %v printed the value of $%s", args, name)
				}
			}
			if !strings.Contains(errs+out, "outside the working directory") {
				t.Errorf("fleetc %v: no word of the refused link:\n%.500s", args, out+errs)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused spec wrote out/")
	}
}

// A link that stays inside the working tree is an ordinary way to share a spec.
func TestSymlinkInsideTheTreeIsRead(t *testing.T) {
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("shared", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("shared/fleet.yaml", src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("shared/fleet.yaml", "fleet.yaml"); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "validate", "fleet.yaml"); code != 0 {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}

func TestNonRegularSpecsAreRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fleet.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a named pipe)"},
		{dir, "is a directory"},
	} {
		for _, args := range specCommands {
			args := expand(args, tc.path, filepath.Join(dir, "out"))
			code, out, errs := runBounded(t, 10*time.Second, args...)
			if code == 0 || !strings.Contains(out+errs, tc.want) {
				t.Errorf("fleetc %v: exit %d, want a refusal saying %q:\n%.500s", args, code, tc.want, out+errs)
			}
		}
	}
}

// One huge line (a minified document, or a secret file inside the tree) is shown cut.
func TestSnippetsAreCut(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "fleet.yaml")
	long := "version: 1\nname: " + strings.Repeat("x", 5000) + "TAIL\n"
	if err := os.WriteFile(spec, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, errs := run(t, "validate", spec)
	if !strings.Contains(errs, "xxxxx") {
		t.Fatalf("no snippet of the bad name:\n%s", errs)
	}
	for _, l := range strings.Split(errs, "\n") {
		if len([]rune(l)) > maxSnippet+20 {
			t.Errorf("a line of %d characters:\n%.300s", len(l), l)
		}
	}
	if strings.Contains(errs, "TAIL") {
		t.Errorf("the end of the long line is shown:\n%.600s", errs)
	}
}

// What a diagnostic shows is what was parsed: the renderer never opens the file it names
// (here a file whose text differs from the parsed line).
func TestSnippetFromParsedBytes(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nname: ON_DISK_NOW\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := diag.Diagnostics{{Code: "P008", Summary: "bad", Subject: &diag.Range{Filename: spec,
		Start: diag.Pos{Line: 2, Column: 7}, End: diag.Pos{Line: 2, Column: 15}, Line: "name: AS_PARSED"}}}
	var out bytes.Buffer
	render(&out, "text", ds, judge(ds, false))
	if !strings.Contains(out.String(), "name: AS_PARSED") || strings.Contains(out.String(), "ON_DISK_NOW") {
		t.Errorf("the snippet is not the parsed line:\n%s", out.String())
	}
}
