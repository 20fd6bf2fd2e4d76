// Package verifytest checks fleetc's generated artifacts with the real tools that consume them,
// offline:
//
//	TerraformFmt(dir)                      terraform fmt -check -recursive -diff
//	TerraformValidate(ctx, dir)            terraform validate with the real hashicorp/aws from the mirror
//	TerraformValidateSchema(ctx, dir)      terraform validate with a schema-only aws 6.48.0 (../shared schema)
//	CheckTerraformAgainstSchema(dir, "")   plain-Go check of resource/data blocks against that schema
//	ASL(file)                              asl-validator --json-path
//	Kubeconform(files...)                  kubeconform -strict against ../shared/k8s-schemas
//	Draft04(schema), Draft04Instance(s, i) JSON Schema draft-04 metaschema and instance checks
//	Kumo(ctx)                              the kumo emulator's endpoint, if it is running
//
// Every checker returns an error and never panics on bad input; findings with a position are
// *Problem values (file:line:col). When a tool, a data file or a provider build is not
// available, the error wraps ErrToolMissing, and tests should hand it to SkipIfMissing:
//
//	err := verifytest.ASL(path)
//	verifytest.SkipIfMissing(t, err) // skips loudly; fails instead under FLEETC_REQUIRE_TOOLS=1
//	if err != nil { t.Fatal(err) }
//
// Tools are looked up in <repo>/bin, then <repo>/tools/node/node_modules/.bin, then PATH;
// `bash tools/install.sh` puts them there.
package verifytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrToolMissing is wrapped by every error that means "could not check" rather than "checked
// and found wrong": a missing binary, schema directory or provider build.
var ErrToolMissing = errors.New("verify: tool missing")

// ErrProviderUnavailable wraps ErrToolMissing when terraform is present but the provider
// mirror holds no build meeting the configuration's required_providers (a known gap of the
// machine, not an install step): SkipIfMissing skips on it even when FLEETC_REQUIRE_TOOLS=1.
var ErrProviderUnavailable = fmt.Errorf("%w: provider build unavailable", ErrToolMissing)

// TB is the part of testing.TB that SkipIfMissing needs (kept small so this package does not import testing).
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// SkipIfMissing skips the test loudly when err wraps ErrToolMissing, and does nothing otherwise.
// With FLEETC_REQUIRE_TOOLS=1 (set it in CI, after tools/install.sh) a missing tool fails the
// test instead, so CI cannot go green by skipping; ErrProviderUnavailable still skips.
func SkipIfMissing(tb TB, err error) {
	if !errors.Is(err, ErrToolMissing) {
		return
	}
	tb.Helper()
	if os.Getenv("FLEETC_REQUIRE_TOOLS") == "1" && !errors.Is(err, ErrProviderUnavailable) {
		tb.Fatalf("FLEETC_REQUIRE_TOOLS=1 but a checker is missing: %v", err)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, "tools/install.sh") && !errors.Is(err, ErrProviderUnavailable) {
		msg += " (install with: bash tools/install.sh)"
	}
	tb.Skipf("SKIPPED, CHECKER NOT AVAILABLE: %s", msg)
}

// installHint is appended to ErrToolMissing errors for binaries that install.sh provides.
const installHint = "install with: bash tools/install.sh"

// mainModule is the module path that marks the repository root (tools/* hold other go.mod files).
const mainModule = "github.com/fleetc/fleetc"

// RepoRoot returns the fleetc repository root: $FLEETC_REPO_ROOT if set, else the nearest
// ancestor of the working directory whose go.mod declares the main module (falling back to
// the nearest go.mod of any module).
func RepoRoot() (string, error) {
	if r := os.Getenv("FLEETC_REPO_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("verify: repo root: %w", err)
	}
	first := ""
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if first == "" {
				first = dir
			}
			if modulePath(b) == mainModule {
				return dir, nil
			}
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	if first != "" {
		return first, nil
	}
	return "", fmt.Errorf("verify: no go.mod above %s", wd)
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// SharedDir is the read-only reference folder the checks take data from: $FLEETC_SHARED_DIR,
// else <repo>/../shared (where CI and this machine keep it).
func SharedDir() (string, error) {
	if d := os.Getenv("FLEETC_SHARED_DIR"); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "shared"), nil
}

// Tool returns the path of an executable, searching <repo>/bin, <repo>/tools/node/node_modules/.bin
// and then PATH. The error wraps ErrToolMissing.
func Tool(name string) (string, error) {
	if root, err := RepoRoot(); err == nil {
		for _, dir := range []string{
			filepath.Join(root, "bin"),
			filepath.Join(root, "tools", "node", "node_modules", ".bin"),
		} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s not found in <repo>/bin, tools/node/node_modules/.bin or PATH; %s", ErrToolMissing, name, installHint)
}

// Problem is one finding with the tightest source position the tool reported.
type Problem struct {
	Tool     string // the checker that reported it, e.g. "terraform validate"
	Severity string // "error" or "warning"
	File     string
	Line     int // 1-based; 0 when unknown
	Column   int // 1-based; 0 when unknown
	Summary  string
	Detail   string
}

func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Severity != "" && p.Severity != "error" {
		b.WriteString(p.Severity + ": ")
	}
	b.WriteString(p.Summary)
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	if p.Tool != "" {
		b.WriteString(" [" + p.Tool + "]")
	}
	return b.String()
}

// Problems is a sorted list of findings; as an error it prints one per line.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// sortProblems orders by position, then text, and drops exact duplicates.
func sortProblems(ps Problems) Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Error() < b.Error()
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p.Error() == ps[i-1].Error() {
			continue
		}
		out = append(out, p)
	}
	return out
}

// run executes a tool and returns its combined output and exit code. err is non-nil only
// when the process could not run or was killed (not for a non-zero exit).
func run(ctx context.Context, env []string, dir, name string, args ...string) (out string, code int, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err = cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		return buf.String(), exitErr.ExitCode(), nil
	}
	if err != nil {
		return buf.String(), -1, fmt.Errorf("verify: run %s: %w\n%s", name, err, buf.String())
	}
	return buf.String(), 0, nil
}

// envWithout returns os.Environ() minus the named variables.
func envWithout(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if k == n {
				drop = true
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return env
}
