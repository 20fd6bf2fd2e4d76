package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/internal/verifytest"
)

const (
	envExample = "../../../examples/environments/fleet.yaml"
	envQuota   = "testdata/envs/quota.yaml"
)

// Rules run per environment: prod's traffic in prod's region breaks the PutEvents quota
// (E011), dev's does not. validate without --env reports it once, labelled [prod], at the
// override that causes it; --env dev is valid; --env prod fails.
func TestValidatePerEnvironment(t *testing.T) {
	code, _, errs := run(t, "validate", envQuota)
	if code != exitInvalid {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	want := envQuota + ":53:33: E011: [prod] projected 500 PutEvents requests/s"
	if !strings.Contains(errs, want) || strings.Count(errs, "E011") != 1 {
		t.Errorf("want one %q in\n%s", want, errs)
	}
	if code, out, errs := run(t, "validate", "--env", "dev", envQuota); code != exitOK || !strings.Contains(out, "valid") {
		t.Errorf("--env dev: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "validate", "--env", "prod", envQuota); code != exitInvalid || !strings.Contains(errs, "E011: [prod]") {
		t.Errorf("--env prod: exit %d\n%s", code, errs)
	}
	// JSON names the environment of each finding.
	_, out, _ := run(t, "validate", "--format", "json", envQuota)
	var rep struct {
		Diagnostics []struct{ Code, Environment string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Code != "E011" || rep.Diagnostics[0].Environment != "prod" {
		t.Errorf("json diagnostics %+v", rep.Diagnostics)
	}
}

// --env naming no environment of the spec, or missing where the command acts on one fleet,
// is a positioned P013; --env where no spec is read is a usage error.
func TestEnvFlagErrors(t *testing.T) {
	code, _, errs := run(t, "validate", "--env", "prd", envExample)
	if code != exitInvalid || !strings.Contains(errs, `environments:`) || !strings.Contains(errs, `fleet.yaml:93:1: P013: unknown environment "prd"; the spec declares dev, prod, staging; did you mean "prod"?`) {
		t.Errorf("unknown env: exit %d\n%s", code, errs)
	}
	for _, args := range [][]string{{"capacity", envExample}, {"graph", envExample}, {"tools", envExample}} {
		// tools prints JSON by default: its diagnostics are in the document on stdout.
		if code, out, errs := run(t, args...); code != exitInvalid || !strings.Contains(out+errs, "this spec declares environments dev, prod, staging: name one with --env") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	if code, out, errs := run(t, "capacity", "--env", "prod", envExample); code != exitOK || !strings.Contains(out, "Capacity of fleet support-prod in eu-central-1") || !strings.Contains(out, "600 conversations/min") {
		t.Errorf("capacity --env prod: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "validate", "--env", "prod", research); code != exitInvalid || !strings.Contains(errs, "declares no environments") {
		t.Errorf("--env on a spec without environments: exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "explain", "--env", "prod", "Q001"); code != exitUsage || !strings.Contains(errs, "--env does not apply") {
		t.Errorf("explain --env: exit %d\n%s", code, errs)
	}
}

// types and schemas check print what cannot differ per environment (events and outputs), so
// they need no --env; with one they print the same.
func TestContractCommandsNeedNoEnv(t *testing.T) {
	code, bare, errs := run(t, "types", envExample, "--lang", "go")
	if code != exitOK || !strings.Contains(bare, "package supporttypes") {
		t.Fatalf("types without --env: exit %d\n%s%s", code, bare, errs)
	}
	if code, prod, errs := run(t, "types", "--env", "prod", envExample, "--lang", "go"); code != exitOK || prod != bare {
		t.Errorf("types --env prod: exit %d, same output %v\n%s", code, prod == bare, errs)
	}
	if code, out, errs := run(t, "schemas", "check", envExample, "--base-file", envExample); code != exitOK || !strings.Contains(out, "event contracts unchanged") {
		t.Errorf("schemas check without --env: exit %d\n%s%s", code, out, errs)
	}
	// invoke runs a class's handler against its contracts, the same in every environment:
	// it gets as far as running the command (which this example does not ship).
	workerOnPath(t)
	if code, _, errs := run(t, "invoke", envExample, "notifier", "--example"); code != exitInvalid || strings.Contains(errs, "P013") || !strings.Contains(errs, "/app/notify") {
		t.Errorf("invoke without --env: exit %d\n%s", code, errs)
	}
	// Each environment publishes to its own registry: publish still needs one.
	if code, _, errs := run(t, "schemas", "publish", envExample, "--registry", "r", "--dry-run", "--env", ""); code != exitUsage || !strings.Contains(errs, "each with its own registry: name one with --env") {
		t.Errorf("schemas publish without --env: exit %d\n%s", code, errs)
	}
}

// FLEETC_ENV is --env's default (a CI job deploying one environment sets it once), and the
// flag still wins.
func TestEnvFromEnvironment(t *testing.T) {
	t.Setenv(EnvEnvironment, "prod")
	if code, out, errs := run(t, "capacity", envExample); code != exitOK || !strings.Contains(out, "Capacity of fleet support-prod") {
		t.Errorf("capacity with %s=prod: exit %d\n%s%s", EnvEnvironment, code, out, errs)
	}
	if code, out, errs := run(t, "capacity", "--env", "dev", envExample); code != exitOK || !strings.Contains(out, "Capacity of fleet support-dev") {
		t.Errorf("capacity --env dev with %s=prod: exit %d\n%s%s", EnvEnvironment, code, out, errs)
	}
	// A spec without that environment: the refusal says the environment came from the
	// variable, since no --env was given; with --env it does not.
	fromVar := `fleetc: the environment "prod" came from ` + EnvEnvironment + " (no --env given)"
	if code, _, errs := run(t, "capacity", "../../../examples/minimal/fleet.yaml"); code != exitInvalid || !strings.Contains(errs, "P013") || !strings.Contains(errs, fromVar) {
		t.Errorf("capacity with %s=prod of a spec without environments: exit %d\n%s", EnvEnvironment, code, errs)
	}
	if code, _, errs := run(t, "capacity", "--env", "prod", "../../../examples/minimal/fleet.yaml"); code != exitInvalid || !strings.Contains(errs, "P013") || strings.Contains(errs, EnvEnvironment) {
		t.Errorf("capacity --env prod of a spec without environments: exit %d\n%s", code, errs)
	}
}

// An override of a field that must be the same everywhere is a positioned P012.
func TestValidateBadOverride(t *testing.T) {
	src, err := os.ReadFile(envExample)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "      notifier:\n        lambda: { memory: 512 }\n", "      notifier:\n        lambda: { memory: 512 }\n        handler: { exec: [/app/other] }\n", 1)
	f := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "validate", f)
	want := f + ":117:9: P012: environment prod: agents.notifier.handler cannot be overridden per environment"
	if code != exitInvalid || !strings.Contains(errs, want) {
		t.Errorf("exit %d, want %q in\n%s", code, want, errs)
	}
}

// build without --env writes each environment into out/<env>/ with its own manifest, is up
// to date on a second run, passes --check, and --env builds one environment alone. The
// environments share no name.
func TestBuildEnvironments(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, errs := run(t, "build", envExample, "-o", out)
	if code != exitOK || !strings.Contains(stdout, "to "+out+", environments dev, prod, staging\nNext: fleetc plan --env ENV ") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errs)
	}
	names := map[string][]string{}
	nameRE := regexp.MustCompile(`"(support[a-z0-9_-]*)"`)
	for _, env := range []string{"dev", "prod", "staging"} {
		set, err := artifact.ReadOwned(filepath.Join(out, env))
		if err != nil || len(set.Paths()) == 0 {
			t.Fatalf("%s: %v", env, err)
		}
		for _, p := range set.Paths() {
			b, _ := set.Get(p)
			for _, m := range nameRE.FindAllStringSubmatch(string(b), -1) {
				names[env] = append(names[env], m[1])
			}
		}
	}
	for _, a := range []string{"dev", "prod", "staging"} {
		if len(names[a]) < 10 {
			t.Fatalf("%s: only %d names found", a, len(names[a]))
		}
		for _, n := range names[a] {
			if !strings.HasPrefix(n, "support-"+a) && !strings.HasPrefix(n, "support_"+a) {
				t.Errorf("%s: name %q does not carry the environment", a, n)
			}
			for _, b := range []string{"dev", "prod", "staging"} {
				if a != b && slices.Contains(names[b], n) {
					t.Errorf("name %q is in %s and %s", n, a, b)
				}
			}
		}
	}
	if code, stdout, _ := run(t, "build", envExample, "-o", out); code != exitOK || !strings.Contains(stdout, "up to date") {
		t.Errorf("second build: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := run(t, "build", "--check", envExample, "-o", out); code != exitOK || !strings.Contains(stdout, "up to date") {
		t.Errorf("--check: exit %d\n%s", code, stdout)
	}
	// A stale environment is found by --check, under its directory.
	if err := os.WriteFile(filepath.Join(out, "prod", "runtime", "triage.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := run(t, "build", "--check", envExample, "-o", out); code != exitInvalid || !strings.Contains(stdout, "changed: "+out+"/prod/runtime/triage.json") {
		t.Errorf("--check of a stale prod: exit %d\n%s", code, stdout)
	}
	one := filepath.Join(t.TempDir(), "one")
	if code, stdout, errs := run(t, "build", "--env", "prod", envExample, "-o", one); code != exitOK || !strings.Contains(stdout, "Next: fleetc plan --env prod ") {
		t.Fatalf("--env prod: exit %d\n%s%s", code, stdout, errs)
	}
	if entries, _ := os.ReadDir(one); len(entries) != 1 || entries[0].Name() != "prod" {
		t.Errorf("--env prod wrote %v, want prod/ only", entries)
	}
}

// diff --base-env compares two environments of one spec under one set of names: what
// differs (region, image, scaling, ARNs) shows, the names do not; diff --env compares one
// environment of two files; diff without --env reviews each environment.
func TestDiffEnvironments(t *testing.T) {
	code, out, errs := run(t, "diff", "--base-env", "prod", "--env", "staging", envExample)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"fleet.yaml (prod) → ", "fleet.yaml (staging)", "class triage: scaling.max: 100 → 4", `/region: "eu-central-1" → "eu-west-1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "support-prod") {
		t.Errorf("names of prod in a comparison under staging's names:\n%s", out)
	}
	if code, _, errs := run(t, "diff", "--base-env", "prod", envExample); code != exitUsage || !strings.Contains(errs, "add --env") {
		t.Errorf("--base-env alone: exit %d\n%s", code, errs)
	}
	code, out, _ = run(t, "diff", envExample, envExample)
	if code != exitOK || strings.Count(out, "== environment ") != 3 {
		t.Errorf("diff of every environment: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "diff", "--format", "json", envExample, envExample); code != exitUsage || !strings.Contains(errs, "name it with --env") {
		t.Errorf("json of every environment: exit %d\n%s", code, errs)
	}
	if code, out, _ := run(t, "diff", "--env", "prod", "--format", "json", envExample, envExample); code != exitOK || !strings.Contains(out, `"format_version"`) {
		t.Errorf("diff --env prod json: exit %d\n%s", code, out)
	}
	// A change that introduces environments renames every resource, and diff says so.
	src, err := os.ReadFile(envExample)
	if err != nil {
		t.Fatal(err)
	}
	before := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(before, src[:strings.Index(string(src), "\nenvironments:")+1], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "diff", "--env", "prod", before, envExample)
	if code != exitOK || !strings.Contains(out, "needs review") || !strings.Contains(out, "aws_sqs_queue.delivery_dlq will be destroyed and re-created") {
		t.Errorf("diff introducing environments: exit %d\n%s%s", code, out, errs)
	}
}

// plan --env prod builds prod into out/prod/ and plans it with the real terraform CLI and
// provider against kumo: prod's overrides and names are in what Terraform plans. Without
// --env the same spec is refused before Terraform runs (P013).
func TestPlanEnvironmentOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	if testing.Short() {
		t.Skip("terraform plan against kumo")
	}
	terraformEnv(t)
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	spec, name := uniqueSpec(t, dir, func(s string) string {
		return s + "\nenvironments:\n  dev: {}\n  prod:\n    agents:\n      solver:\n        scaling: { min: 0, max: 3, per_replica: 1 }\n"
	})
	out := filepath.Join(dir, "out")
	if code, _, stderr := runCLI(t, "", "plan", spec, "-o", out, "--endpoint", endpoint); code != exitInvalid || !strings.Contains(stderr, "P013: this spec declares environments dev, prod: name one with --env") {
		t.Fatalf("plan without --env: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("plan without --env wrote %s", out)
	}
	code, stdout, stderr := runCLI(t, "", "plan", "--env", "prod", spec, "-o", out, "--endpoint", endpoint, "--format", "json", "--detailed-exitcode")
	if code != exitChanges {
		t.Fatalf("plan --env prod: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var s deploy.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Add == 0 || s.Destroy != 0 {
		t.Fatalf("plan summary %+v: %v\n%s", s, err, stdout)
	}
	tf, err := os.ReadFile(filepath.Join(out, "prod", "terraform", "agent_solver.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tf), `"`+name+`-prod-solver"`) {
		t.Errorf("prod's queue is not named %s-prod-solver:\n%s", name, tf)
	}
	scaled, err := os.ReadFile(filepath.Join(out, "prod", "k8s", "solver", "scaledobject.yaml"))
	if err != nil || !strings.Contains(string(scaled), "maxReplicaCount: 3") {
		t.Errorf("prod's scaling override is not in its ScaledObject (%v):\n%s", err, scaled)
	}
	if _, err := os.Stat(filepath.Join(out, "terraform")); !os.IsNotExist(err) {
		t.Errorf("plan --env prod wrote outside %s/prod", out)
	}
}
