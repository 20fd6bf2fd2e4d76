package cli

import (
	"bytes"
	"encoding/json"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

const research = "../../../examples/research-fleet/fleet.yaml"

func TestValidateExamples(t *testing.T) {
	paths, _ := filepath.Glob("../../../examples/*/fleet.yaml")
	if len(paths) < 3 {
		t.Fatalf("examples missing: %v", paths)
	}
	code, out, errs := run(t, append([]string{"validate"}, paths...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

func TestValidateBadSpecText(t *testing.T) {
	code, stdout, out := run(t, "validate", "../../../compiler/ir/testdata/bad/undefined-model.yaml")
	if stdout != "" {
		t.Errorf("text diagnostics belong on stderr; stdout has\n%s", stdout)
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	want := `../../../compiler/ir/testdata/bad/undefined-model.yaml:23:12: P005: undefined model policy "fastest"; did you mean "fast"?`
	if !strings.Contains(out, want) {
		t.Errorf("missing %q in\n%s", want, out)
	}
	// The source line and a caret under the offending value.
	if !strings.Contains(out, "    model: fastest\n") || !regexp.MustCompile(`\|\s{12}\^{7}\n`).MatchString(out) {
		t.Errorf("no snippet with caret:\n%s", out)
	}
}

func TestValidateJSON(t *testing.T) {
	for _, tc := range []struct {
		file  string
		code  int
		valid bool
	}{
		{research, 0, true},
		{"../../../compiler/ir/testdata/bad/tab-indent.yaml", 1, false},
	} {
		code, out, _ := run(t, "validate", "--format", "json", tc.file)
		if code != tc.code {
			t.Errorf("%s: exit %d", tc.file, code)
		}
		var rep struct {
			FormatVersion int               `json:"format_version"`
			Valid         bool              `json:"valid"`
			Diagnostics   []json.RawMessage `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", tc.file, err, out)
		}
		if rep.FormatVersion != jsonreport.FormatVersion || rep.Valid != tc.valid || rep.Diagnostics == nil {
			t.Errorf("%s: %+v", tc.file, rep)
		}
		if !strings.Contains(out, `"diagnostics": [`) {
			t.Errorf("diagnostics must always be an array:\n%s", out)
		}
	}
}

func TestValidateGitHubActions(t *testing.T) {
	code, out, _ := run(t, "validate", "--format=github-actions", "../../../compiler/ir/testdata/bad/unknown-bus-field.yaml")
	if code != 1 || !strings.HasPrefix(out, "::error file=../../../compiler/ir/testdata/bad/unknown-bus-field.yaml,line=6,col=3,") || !strings.Contains(out, "title=P002::") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestStrictFailsOnWarnings(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile(research)
	// Remove the cross-group fallback of the last policy: M001 warns.
	spec := strings.Replace(string(src), "    fallbacks: [sonnet-overflow]\n", "", 1)
	p := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(p, []byte(spec), 0o644)
	if code, _, out := run(t, "validate", p); code != 0 || !strings.Contains(out, "warning") {
		t.Fatalf("without --strict: exit %d\n%s", code, out)
	}
	if code, _, _ := run(t, "validate", "--strict", p); code != 1 {
		t.Fatalf("--strict: exit %d, want 1", code)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"validate"}, {"validate", "--format", "xml", research}, {"build"}, {"explain"}, {"explain", "Z999"}} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestRulesAndExplain(t *testing.T) {
	code, out, _ := run(t, "rules")
	if code != 0 {
		t.Fatal(code)
	}
	ids := regexp.MustCompile(`(?m)^([A-Z]+\d{3})\s`).FindAllStringSubmatch(out, -1)
	if len(ids) < 50 {
		t.Fatalf("only %d rules listed:\n%s", len(ids), out)
	}
	for _, m := range ids {
		code, text, _ := run(t, "explain", m[1])
		if code != 0 || len(text) < 80 || !strings.HasPrefix(text, m[1]+": ") {
			t.Errorf("explain %s: exit %d, %q", m[1], code, text)
		}
	}
	if _, _, errs := run(t, "explain", "Q01"); !strings.Contains(errs, "did you mean") {
		t.Errorf("no suggestion: %s", errs)
	}
}

func TestBuildAndCheck(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, errs := run(t, "build", research, "-o", out); code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, errs)
	}
	for _, p := range []string{"terraform", "statemachines", "k8s", "schemas", "runtime"} {
		if fi, err := os.Stat(filepath.Join(out, p)); err != nil || !fi.IsDir() {
			t.Errorf("%s missing: %v", p, err)
		}
	}
	if code, stdout, _ := run(t, "build", "--check", research, "-o", out); code != 0 {
		t.Fatalf("fresh output reported stale:\n%s", stdout)
	}
	// Drift: an edited file is reported; files fleetc does not own are not its business.
	cfg := filepath.Join(out, "runtime", "researcher.json")
	os.WriteFile(cfg, []byte("{}\n"), 0o644)
	state := filepath.Join(out, "terraform", "terraform.tfstate")
	os.WriteFile(state, []byte("{}"), 0o644)
	code, stdout, _ := run(t, "build", "--check", research, "-o", out)
	if code != 1 || !strings.Contains(stdout, "changed: "+out+"/runtime/researcher.json") || strings.Contains(stdout, "tfstate") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	if b, _ := os.ReadFile(cfg); string(b) != "{}\n" {
		t.Error("--check wrote to the output directory")
	}
	// A rebuild restores owned files and leaves the rest alone.
	if code, _, _ := run(t, "build", research, "-o", out); code != 0 {
		t.Fatal(code)
	}
	if b, _ := os.ReadFile(cfg); string(b) == "{}\n" {
		t.Error("rebuild did not restore an owned file")
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("rebuild removed terraform state: %v", err)
	}
	// A file the previous build wrote but this one does not is removed: build another
	// spec into the same directory.
	if code, _, _ := run(t, "build", "../../../examples/minimal/fleet.yaml", "-o", out); code != 0 {
		t.Fatal(code)
	}
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Errorf("stale owned file survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "k8s")); !os.IsNotExist(err) {
		t.Errorf("emptied directory survived: %v", err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("terraform state removed: %v", err)
	}
	if code, stdout, _ := run(t, "build", "--check", "../../../examples/minimal/fleet.yaml", "-o", out); code != 0 {
		t.Fatalf("fresh minimal output reported stale:\n%s", stdout)
	}
}

func TestBuildRefusesAFileAsOutput(t *testing.T) {
	f := filepath.Join(t.TempDir(), "precious.txt")
	os.WriteFile(f, []byte("keep"), 0o644)
	if code, _, errs := run(t, "build", research, "-o", f); code != 2 || !strings.Contains(errs, "not a directory") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(f); string(b) != "keep" {
		t.Fatal("output file clobbered")
	}
}

func TestBuildBadSpecWritesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, errs := run(t, "build", "../../../compiler/ir/testdata/bad/undefined-event.yaml", "-o", out)
	if code != 1 || !strings.Contains(errs, "P005") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output directory created for an invalid spec")
	}
}

func TestBuildJSONIsOneDocumentOnStdout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, _ := run(t, "build", "--format", "json", research, "-o", out)
	var rep struct {
		FormatVersion int      `json:"format_version"`
		Valid         bool     `json:"valid"`
		Files         []string `json:"files"`
		Diagnostics   []any    `json:"diagnostics"`
		Changes       []struct {
			Path, Kind string
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if rep.FormatVersion != jsonreport.FormatVersion || !rep.Valid || len(rep.Files) < 20 || rep.Diagnostics == nil {
		t.Errorf("%+v", rep)
	}
	os.Remove(filepath.Join(out, "runtime", "coder.json"))
	code, stdout, _ = run(t, "build", "--check", "--format=json", research, "-o", out)
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Path != "runtime/coder.json" || rep.Changes[0].Kind != "added" {
		t.Errorf("changes = %+v", rep.Changes)
	}
}

// A spec that validates builds: validate runs the backends' own checks too.
func TestValidateRunsGenerationChecks(t *testing.T) {
	src, _ := os.ReadFile("../../../examples/minimal/fleet.yaml")
	spec := strings.Replace(string(src), "      required: [trace_id, name]\n", "      required: [trace_id, name]\n      if: { required: [name] }\n", 1)
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(p, []byte(spec), 0o644)
	code, _, out := run(t, "validate", p)
	if code != 1 || !strings.Contains(out, ": G003: ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if code, _, _ := run(t, "explain", "G003"); code != 0 {
		t.Error("G003 has no explanation")
	}
}

// BenchmarkCLIBuild1000Classes is `fleetc build` end to end (load, check, generate, write)
// on a generated 1,000-class fleet.
//
//	go test ./cmd/fleetc/cli -run '^$' -bench CLIBuild -benchtime 5x
func BenchmarkCLIBuild1000Classes(b *testing.B) {
	dir := b.TempDir()
	spec := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(spec, irtest.BigFleet(1000), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	// As the fleetc binary runs it: its main sets GOGC=400 when GOGC is unset.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	for b.Loop() {
		var o, e bytes.Buffer
		if code := Main([]string{"build", spec, "-o", out}, nil, &o, &e); code != 0 {
			b.Fatalf("exit %d: %s", code, e.String())
		}
	}
}

// A build that changes nothing says so, writes nothing, and names the next step: a plan
// in a working directory beside the output, so Terraform's state never lands in it.
func TestBuildUpToDate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	work := filepath.Join(filepath.Dir(out), deployWorkDir)
	next := "Next: fleetc plan " + "../../../examples/minimal/fleet.yaml" + " -o " + work + "\n" +
		"  (Terraform's .terraform/ and state go to " + work + ", not " + out + "; keep " + work + " out of git)\n"
	spec := "../../../examples/minimal/fleet.yaml"
	code, stdout, _ := run(t, "build", spec, "-o", out)
	if code != 0 || !strings.HasPrefix(stdout, "wrote 11 files to "+out+"\n") || !strings.Contains(stdout, next) {
		t.Fatalf("first build: exit %d\n%s", code, stdout)
	}
	cfg := filepath.Join(out, "runtime", "greeter.json")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(cfg, old, old)
	code, stdout, _ = run(t, "build", spec, "-o", out)
	if code != 0 || stdout != out+" is up to date (11 files); nothing written\n"+next {
		t.Fatalf("second build: exit %d\n%s", code, stdout)
	}
	if fi, _ := os.Stat(cfg); !fi.ModTime().Equal(old) {
		t.Error("an up-to-date build rewrote a file")
	}
	os.WriteFile(cfg, []byte("{}"), 0o644)
	code, stdout, _ = run(t, "build", spec, "-o", out)
	if b, _ := os.ReadFile(cfg); code != 0 || !strings.HasPrefix(stdout, "wrote 11 files") || string(b) == "{}" {
		t.Fatalf("build after an edit: exit %d\n%s", code, stdout)
	}
}

// What `plan --endpoint` leaves beside the configuration (the override aiming every call at
// the emulator, and its definitions) is drift: `build --check` reports it, `build` removes it,
// so a plain `terraform apply` after an emulator run never targets the emulator unseen.
// Before, build --check said up to date and build left the override in place.
func TestBuildRemovesTheEmulatorOverride(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, errs := run(t, "build", research, "-o", out); code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, errs)
	}
	left := []string{filepath.Join(out, "terraform", deploy.OverrideFile), filepath.Join(out, "terraform", deploy.EmulatorFilePrefix+"flow.asl.json")}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("# left by plan --endpoint\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, _ := run(t, "build", "--check", research, "-o", out)
	if code != 1 || !strings.Contains(stdout, deploy.OverrideFile) {
		t.Fatalf("build --check with the override left: exit %d\n%s", code, stdout)
	}
	if code, stdout, errs := run(t, "build", research, "-o", out); code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, errs)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived build: %v", filepath.Base(p), err)
		}
	}
	if code, stdout, _ := run(t, "build", "--check", research, "-o", out); code != 0 {
		t.Errorf("after build: exit %d\n%s", code, stdout)
	}
}
