package cli

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// emulatorParallel is how many tests of this package run at once unless -test.parallel is
// given. The parallel tests are the emulator loops (terraform plan/apply/destroy and fleetc
// dev sessions against kumo, each fleet under a name of its own): they spend most of their
// time waiting on kumo and on the AWS provider's polling, not on the CPU, so they overlap well
// beyond GOMAXPROCS, the default, which on a 2-core machine ran them two at a time. 24 lets
// all of them run at once (six loops, five examples, moto's, the dlq and trace tests): each
// one waiting for a slot would add its whole duration to the package's.
const emulatorParallel = 24

// TestMain lets this test binary stand in for fleetc where a command runs fleetc itself as
// a process: invoke --stand-in runs `fleetc dev-handler` (os.Executable), as dev does. As a
// test binary it runs the emulator loops emulatorParallel at a time.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == dev.HandlerCommand {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(emulatorParallel)); err != nil {
			panic(err)
		}
	}
	// A whole run builds fleetc and fleet-worker for its process tests: start both now, so
	// the sequential tests that need them do not hold the emulator loops back by a build.
	if flag.Lookup("test.run").Value.String() == "" {
		verifytest.Prebuild(verifytest.FleetcPkg, verifytest.WorkerPkg)
	}
	os.Exit(m.Run())
}

// workerOnPath puts a fleet-worker built from this checkout on PATH, where invoke finds the
// engine it runs (fleet-worker dry-run) when none is next to fleetc.
func workerOnPath(t *testing.T) {
	t.Helper()
	_, worker := devtest.Binaries(t)
	t.Setenv("PATH", filepath.Dir(worker)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// initStarter writes fleetc init's lambda project into a fresh directory and returns its spec.
func initStarter(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the starter's handler is python3")
	}
	workerOnPath(t)
	dir := filepath.Join(t.TempDir(), "hello")
	if code, out, errs := run(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errs)
	}
	return filepath.Join(dir, initSpec)
}

// fleetc invoke runs the starter's own handler/handler.py (python3 /app/handler.py in the
// spec) on the greeting's generated example, with no edit and no AWS, and prints its result.
func TestInvokeStarter(t *testing.T) {
	spec := initStarter(t)
	code, out, errs := run(t, "invoke", spec, "greeter", "--example")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var res struct{ Greeting string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Greeting != "hello, name-example" {
		t.Errorf("result %q (%v): want the starter's greeting of the example's name", out, err)
	}
	local := filepath.Join(filepath.Dir(filepath.Dir(spec)), initHandler, "handler.py")
	if !strings.Contains(errs, "greeter ran python3 "+local) {
		t.Errorf("invoke did not say what it ran (python3 %s):\n%s", local, errs)
	}
	// A given detail is the handler's input, after the event's schema accepted it.
	if code, out, errs := run(t, "invoke", spec, "greeter", "--detail", `{"trace_id":"t1","name":"Ada"}`); code != exitOK || !strings.Contains(out, `"hello, Ada"`) {
		t.Errorf("--detail: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "invoke", spec, "greeter", "--detail", `{"trace_id":"t1"}`); code != exitInvalid || !strings.Contains(errs, "missing properties: 'name'") {
		t.Errorf("a detail without name: exit %d (want 1)\n%s", code, errs)
	}
	if code, _, _ := run(t, "invoke", spec, "greeter"); code != exitUsage {
		t.Errorf("no input: exit %d (want 2)", code)
	}
}

// A result that breaks the class's output schema, or a completion event that breaks its
// event's schema, is exit 1 with the violation, judged by the worker's own checks.
func TestInvokeContracts(t *testing.T) {
	spec := initStarter(t)
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	handler := `    handler: {exec: ["python3", "/app/handler.py"]}`
	if !strings.Contains(string(b), handler) {
		t.Fatalf("the starter's handler line changed:\n%s", b)
	}
	write := func(extra string, events ...string) {
		t.Helper()
		s := strings.Replace(string(b), handler, handler+"\n"+extra, 1)
		s = strings.Replace(s, "\nevents:\n", "\nevents:\n"+strings.Join(events, "\n")+"\n", 1)
		if err := os.WriteFile(spec, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("    output: {type: object, required: [reply], properties: {reply: {type: string}}}")
	code, out, errs := run(t, "invoke", spec, "greeter", "--example")
	if code != exitInvalid || !strings.Contains(errs, "HandlerOutputInvalid") || !strings.Contains(errs, "reply") {
		t.Errorf("a result without output's required reply: exit %d (want 1 with HandlerOutputInvalid)\n%s%s", code, out, errs)
	}

	write("    output: {type: object, required: [greeting], properties: {greeting: {type: string}}}")
	if code, out, errs := run(t, "invoke", spec, "greeter", "--example"); code != exitOK {
		t.Errorf("a result that fits output: exit %d\n%s%s", code, out, errs)
	}

	// The completion event the worker would build (greeting from the result, trace_id
	// carried) breaks greeting.sent's schema: the greeting is longer than it allows.
	sent := func(maxLen string) {
		write("    emits: [greeting.sent]\n    output: {type: object, required: [greeting], properties: {greeting: {type: string}}}",
			"  greeting.sent:", "    version: 1", "    source: hello.workers",
			"    detail: {type: object, required: [trace_id, greeting], properties: {trace_id: {type: string}, greeting: {type: string, maxLength: "+maxLen+"}}}")
	}
	sent("5")
	code, out, errs = run(t, "invoke", spec, "greeter", "--example")
	if code != exitInvalid || !strings.Contains(errs, "EventContractViolation") || !strings.Contains(errs, "detail/greeting: length must be <= 5") {
		t.Errorf("a completion event that breaks its schema: exit %d (want 1 with EventContractViolation)\n%s%s", code, out, errs)
	}
	sent("50")
	code, out, errs = run(t, "invoke", spec, "greeter", "--example")
	if code != exitOK || !strings.Contains(errs, `completion event greeting.sent (source hello.workers), fits its schema: {"agent_class":"greeter","greeting":"hello, name-example",`) {
		t.Errorf("a completion event that fits: exit %d\n%s%s", code, out, errs)
	}
}

// An llm class needs a model: exit 2, unless dev's stand-in is asked for.
func TestInvokeLLMNeedsAModel(t *testing.T) {
	workerOnPath(t)
	spec := "../../../examples/async-tools/fleet.yaml"
	code, _, errs := run(t, "invoke", spec, "release-assistant", "--example")
	if code != exitUsage || !strings.Contains(errs, "needs a model") || !strings.Contains(errs, "--stand-in") {
		t.Errorf("llm class: exit %d (want 2)\n%s", code, errs)
	}
	code, out, errs := run(t, "invoke", spec, "release-assistant", "--example", "--stand-in")
	if code != exitOK || !strings.Contains(out, `"stand_in": true`) {
		t.Errorf("llm class --stand-in: exit %d\n%s%s", code, out, errs)
	}
}

// dev's stand-in answers a class that declares its output with the example of that schema,
// which the worker's output check accepts (cdk-synth requires status SUCCEEDED or FAILED,
// which an echo of the input lacks).
func TestInvokeStandInFitsOutput(t *testing.T) {
	workerOnPath(t)
	code, out, errs := run(t, "invoke", "../../../examples/async-tools/fleet.yaml", "cdk-synth", "--example", "--stand-in")
	if code != exitOK {
		t.Fatalf("exit %d (want 0: the stand-in's answer fits cdk-synth's output)\n%s%s", code, out, errs)
	}
	var res struct{ Status string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || (res.Status != "SUCCEEDED" && res.Status != "FAILED") {
		t.Errorf("result %q: not cdk-synth's output (%v)", out, err)
	}
}
