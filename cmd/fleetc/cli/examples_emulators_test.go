package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// fleetKey is a spec's top-level fleet name, which names every resource it creates.
var fleetKey = regexp.MustCompile(`(?m)^fleet: *([a-z0-9-]+)`)

// exampleEnv is the environment a test acts on for a spec with environments: (each example
// with some declares dev, the spec as written).
const exampleEnv = "dev"

// deployedByDev: the examples a dev test brings up on kumo and tears down. `fleetc dev` applies
// through the same deploy.Prepare with the same emulator override as `fleetc apply
// --endpoint`, and devtest.Session.Stop holds its teardown to what applyAndDestroy holds a
// destroy to (exit 0, nothing left in the state), so TestExamplesApplyOnKumo leaves them to
// it rather than apply and destroy the same configuration twice (~40 s of CPU each,
// docs/development.md "Test time").
var deployedByDev = map[string]func(*testing.T){
	"minimal":        TestDevMinimal,
	"research-fleet": TestDevResearchFleet,
}

// TestExamplesApplyOnKumo: every example in examples/ applies on kumo with `fleetc apply
// --endpoint` (the emulator detected, its gap profile applied) and destroys clean
// (`destroy --allow-data-loss` exit 0, no resource left in the state), as a user trying them
// would; those in deployedByDev under `fleetc dev`. Each runs as a parallel subtest under a
// fleet name of its own, so they share kumo without colliding with each other or with other
// tests.
func TestExamplesApplyOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	specs, err := filepath.Glob("../../../examples/*/fleet.yaml")
	if err != nil || len(specs) < 7 {
		t.Fatalf("examples: %v, %v", specs, err)
	}
	example := func(spec string) string { return filepath.Base(filepath.Dir(spec)) }
	for name := range deployedByDev {
		if !slices.ContainsFunc(specs, func(spec string) bool { return example(spec) == name }) {
			t.Errorf("deployedByDev names %s, which is not an example", name)
		}
	}
	if testing.Short() {
		t.Skip("terraform apply of every example against kumo takes minutes")
	}
	terraformEnv(t)
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("%d examples applied and destroyed in %s (and %d left to the dev tests)", len(specs)-len(deployedByDev), time.Since(start).Round(time.Second), len(deployedByDev))
	})
	for _, spec := range specs {
		name := example(spec)
		if deployedByDev[name] != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			applyAndDestroy(t, spec, endpoint, deploy.Kumo)
		})
	}
}

// TestResearchAppliesOnMoto: the research example applies on moto, detected as moto (its gap
// profile, MotoGaps), and destroys clean. moto runs through tools/moto/serve.py, which adds
// the two Step Functions calls moto lacks and the provider makes (without them the apply
// stops at the state machine: ValidateStateMachineDefinition answers 500).
func TestResearchAppliesOnMoto(t *testing.T) {
	t.Parallel() // an emulator loop (on a moto of its own): see emulatorParallel
	if testing.Short() {
		t.Skip("terraform apply against moto takes minutes")
	}
	terraformEnv(t)
	applyAndDestroy(t, "../../../examples/research-fleet/fleet.yaml", startMoto(t), deploy.Moto)
}

// startMoto runs moto (tools/moto/serve.py) on a free loopback port for the test and returns
// its endpoint; without python3's moto the test skips (fails under FLEETC_REQUIRE_TOOLS=1).
func startMoto(t *testing.T) string {
	t.Helper()
	if err := exec.Command("python3", "-c", "import moto.server").Run(); err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: python3 with moto (pip install 'moto[server]'): %v", verifytest.ErrToolMissing, err))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("python3", "../../../tools/moto/serve.py", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if e, err := deploy.DetectEmulator(context.Background(), endpoint); err == nil && e == deploy.Moto {
			return endpoint
		}
	}
	t.Fatalf("moto did not answer at %s within 60s:\n%s", endpoint, log.String())
	return ""
}

// applyAndDestroy applies a renamed copy of spec (with its prompts/) on the emulator at
// endpoint, which must be detected as emu, then destroys it, and fails unless both exit 0
// and the state ends empty.
func applyAndDestroy(t *testing.T, spec, endpoint string, emu deploy.Emulator) {
	dir := t.TempDir()
	src, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	m := fleetKey.FindStringSubmatch(string(src))
	if m == nil {
		t.Fatalf("%s has no top-level fleet: name to make unique", spec)
	}
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	fleet := m[1] + hex.EncodeToString(suffix)
	// The fleet's name, and any resource name that starts with it (examples/minimal names its
	// bus hello, as `fleetc init`'s starter does: TestDevDoc deploys that one beside this test;
	// research-fleet names its bus research-fleet, which a fleet left on the emulator by an
	// earlier run still held).
	renamed := fleetKey.ReplaceAllString(string(src), "fleet: "+fleet)
	renamed = regexp.MustCompile(`(?m)^(\s+name: )`+regexp.QuoteMeta(m[1])+`(-[a-z0-9-]+)?$`).ReplaceAllString(renamed, "${1}"+fleet+"${2}")
	copyPrompts(t, spec, dir)
	local := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(local, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	env := ""
	common := []string{local, "-o", out, "--endpoint", endpoint, "--auto-approve"}
	if strings.Contains(renamed, "\nenvironments:") {
		env = exampleEnv
		common = append(common, "--env", env)
	}
	destroyed := false
	destroy := func() (int, string, string) {
		destroyed = true
		return runCLI(t, "", append([]string{"destroy", "--allow-data-loss"}, common...)...)
	}
	t.Cleanup(func() {
		if !destroyed {
			destroy()
		}
	})
	code, stdout, stderr := runCLI(t, "", append([]string{"apply"}, common...)...)
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, tail(stdout), tail(stderr))
	}
	if want := fmt.Sprintf("Emulator %s at %s", emu, endpoint); !strings.Contains(stdout+stderr, want) {
		t.Errorf("apply does not say %q", want)
	}
	if code, stdout, stderr := destroy(); code != exitOK {
		t.Fatalf("destroy: exit %d\n%s\n%s", code, tail(stdout), tail(stderr))
	}
	left, err := devtest.StateResources(filepath.Join(compiler.OutDir(out, env), "terraform", "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left in the state after destroy: %v", left)
	}
}

// tail is the end of a long output, where Terraform's error is.
func tail(s string) string {
	const keep = 6000
	if len(s) <= keep {
		return s
	}
	return "…" + s[len(s)-keep:]
}
