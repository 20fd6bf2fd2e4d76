package cli

import (
	"encoding/json"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fleetc/fleetc/compiler/registry/registrytest"
)

const ttlLine = "        ttl_seconds: { type: integer, minimum: 1 }\n"

// researchVariant writes the research example, edited, to dir/fleet.yaml.
func researchVariant(t *testing.T, dir string, edit func(string) string) string {
	t.Helper()
	src, err := os.ReadFile(research)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	if edit != nil {
		s = edit(s)
	}
	p := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loosenTTL drops ttl_seconds' minimum: new events may carry 0, which old consumers refuse.
func loosenTTL(s string) string {
	if !strings.Contains(s, ttlLine) {
		panic("research example changed: no ttl_seconds line")
	}
	return strings.Replace(s, ttlLine, strings.Replace(ttlLine, ", minimum: 1", "", 1), 1)
}

func addPriority(s string) string {
	return strings.Replace(s, ttlLine, ttlLine+"        priority: { type: integer }\n", 1)
}

func TestSchemasCheckBaseFile(t *testing.T) {
	head := researchVariant(t, t.TempDir(), loosenTTL)
	code, out, errs := run(t, "schemas", "check", head, "--base-file", research)
	t.Logf("fleetc schemas check fleet.yaml --base-file examples/research-fleet/fleet.yaml\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		`BREAKING  agent.step.requested: minimum of detail.ttl_seconds removed (was 1)`,
		"breaks forward; consumers: coder, researcher, workflow conversation; version 1 → 1 (not bumped)",
		"/fleet.yaml:51:9\n", // the changed line, in the head file
		"1 breaking change(s) since ../../../examples/research-fleet/fleet.yaml, 1 without a version bump; 0 to check; 0 safe",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// An additive change passes and is listed as safe.
	safe := researchVariant(t, t.TempDir(), addPriority)
	code, out, _ = run(t, "schemas", "check", safe, "--base-file", research, "--format", "json")
	var rep struct {
		FormatVersion int `json:"format_version"`
		Errors        int
		Findings      []struct {
			Kind     string
			Breaking bool
			Range    *struct{ Filename string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if rep.FormatVersion != jsonreport.FormatVersion || len(rep.Findings) != 1 || rep.Findings[0].Kind != "property-added" || rep.Findings[0].Breaking || rep.Findings[0].Range == nil {
		t.Fatalf("json: %s", out)
	}
	// Usage errors.
	if code, _, _ := run(t, "schemas", "check", safe); code != exitUsage {
		t.Errorf("no base: exit %d", code)
	}
	if code, _, _ := run(t, "schemas", "check", safe, "--base", "HEAD", "--base-file", research); code != exitUsage {
		t.Errorf("two bases: exit %d", code)
	}
}

// --base reads the spec at a git revision with git itself: a repository with two commits.
func TestSchemasCheckGitBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (apt-get install git)")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=fleetc", "-c", "user.email=fleetc@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	sub := filepath.Join(dir, "fleet")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := researchVariant(t, sub, nil)
	git("add", ".")
	git("commit", "-q", "-m", "base")
	researchVariant(t, sub, loosenTTL)
	git("commit", "-q", "-am", "loosen ttl_seconds")

	t.Chdir(dir) // git resolves the repository from the working directory
	code, out, errs := run(t, "schemas", "check", spec, "--base", "HEAD~1")
	if code != 1 || !strings.Contains(out, "fleet/fleet.yaml:51:9") || !strings.Contains(out, "detail.ttl_seconds") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "schemas", "check", spec, "--base", "HEAD")
	if code != 0 || !strings.Contains(out, "event contracts unchanged since HEAD:fleet/fleet.yaml") {
		t.Fatalf("same revision: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = run(t, "schemas", "check", spec, "--base", "no-such-ref")
	if code != exitUsage || !strings.Contains(errs, "reading fleet/fleet.yaml at no-such-ref") {
		t.Fatalf("bad ref: exit %d\n%s", code, errs)
	}
}

// publish end to end through the CLI: credentials and region from the environment (the
// standard chain), the endpoint from --endpoint-url, against registrytest's Schemas server.
func TestSchemasPublishCLI(t *testing.T) {
	srv := registrytest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	pub := func(file string, extra ...string) (int, string, string) {
		return run(t, append([]string{"schemas", "publish", file, "--registry", "research-contracts", "--endpoint-url", srv.URL}, extra...)...)
	}
	code, out, errs := pub(research)
	t.Logf("first publish:\n%s", out)
	if code != 0 || !strings.Contains(out, "registry research-contracts: created") ||
		!strings.Contains(out, "created      fleet.coordinator@agent.step.requested  version 1") || !strings.Contains(out, "3 write(s)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = pub(research)
	t.Logf("republish:\n%s", out)
	if code != 0 || !strings.Contains(out, "unchanged    fleet.coordinator@agent.step.requested  version 1 (already published)") || !strings.Contains(out, "0 write(s)") {
		t.Fatalf("republish: exit %d\n%s", code, out)
	}
	breaking := researchVariant(t, t.TempDir(), loosenTTL)
	writes := srv.Writes()
	code, out, errs = pub(breaking)
	t.Logf("breaking:\n%s%s", out, errs)
	if code != 1 || srv.Writes() != writes || !strings.Contains(out, "refused      fleet.coordinator@agent.step.requested  latest version 1") ||
		!strings.Contains(errs, "nothing written") {
		t.Fatalf("breaking: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = pub(breaking, "--allow-breaking", "--dry-run")
	if code != 0 || srv.Writes() != writes || !strings.Contains(out, "would-update") || !strings.Contains(out, "dry run: nothing written") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	code, out, _ = pub(breaking, "--allow-breaking", "--format", "json")
	schemas := compileOutputSchemas(t)
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("publish --format json: %v\n%s", err, out)
	}
	if err := schemas["schemas-publish"].Validate(doc); err != nil {
		t.Errorf("publish --format json does not match schemas/output/schemas-publish.schema.json: %#v\n%s", err, out)
	}
	var res struct {
		Writes  int
		Schemas []struct{ Schema, Action, Version string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Writes != 1 || res.Schemas[1].Action != "updated" || res.Schemas[1].Version != "2" {
		t.Fatalf("allow-breaking: exit %d %v\n%s", code, err, out)
	}
	// Checking against the registry: the latest version is now the head itself. The endpoint
	// comes from AWS_ENDPOINT_URL_SCHEMAS this time, which the SDK's configuration chain reads.
	t.Setenv("AWS_ENDPOINT_URL_SCHEMAS", srv.URL)
	code, out, errs = run(t, "schemas", "check", breaking, "--against-registry", "research-contracts")
	if code != 0 || !strings.Contains(out, "event contracts unchanged since registry research-contracts") {
		t.Fatalf("against registry: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, "schemas", "check", research, "--against-registry", "research-contracts", "--endpoint-url", srv.URL)
	// The reverse change narrows: old events (ttl_seconds 0) fail the new minimum.
	if code != 1 || !strings.Contains(out, "BREAKING  agent.step.requested: minimum of detail.ttl_seconds set to 1") || !strings.Contains(out, "breaks backward") {
		t.Fatalf("against registry, minimum restored: exit %d\n%s", code, out)
	}
	// One writer per schema: the fleet's own registry belongs to its generated Terraform
	// (aws_schemas_registry.fleet is named research-events), so publish refuses it.
	calls := len(srv.Calls)
	code, _, errs = run(t, "schemas", "publish", research, "--registry", "research-events", "--endpoint-url", srv.URL)
	if code != 1 || !strings.Contains(errs, "registry research-events is the fleet's own") || len(srv.Calls) != calls {
		t.Fatalf("the fleet's own registry: exit %d\n%s", code, errs)
	}
	// Limits refused before any call.
	code, _, errs = run(t, "schemas", "publish", research, "--registry", "bad name", "--endpoint-url", srv.URL)
	if code != 1 || !strings.Contains(errs, "refused before any call") || len(srv.Calls) != calls {
		t.Fatalf("limits: exit %d\n%s", code, errs)
	}
}

// The CI examples run fleetc commands that exist, with flags their usage line documents.
func TestCIExampleCommands(t *testing.T) {
	for file, wants := range map[string][]string{
		"fleet-review.yml": {"fleetc validate", "fleetc build", "fleetc diff", "fleetc schemas check", "fleetc schemas publish"},
		"fleet-deploy.yml": {"fleetc validate", "fleetc plan", "fleetc apply"},
	} {
		b, err := os.ReadFile("../../../examples/ci/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			On   map[string]any `json:"true"` // YAML 1.1 reads the key on as a boolean; GitHub reads "on"
			Jobs map[string]struct {
				Steps []struct {
					Run string `json:"run"`
				} `json:"steps"`
			} `json:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Fatalf("%s: not YAML: %v", file, err)
		}
		if wf.On["push"] == nil {
			t.Errorf("%s must run on push: %v", file, wf.On)
		}
		seen := map[string]bool{}
		for _, job := range wf.Jobs {
			for _, st := range job.Steps {
				fields := strings.Fields(st.Run)
				if len(fields) < 2 || fields[0] != "fleetc" {
					continue
				}
				cmd := "fleetc " + fields[1]
				if fields[1] == "schemas" {
					cmd += " " + fields[2]
				}
				seen[cmd] = true
				var doc string
				for _, l := range strings.Split(synopsis(), "\n") {
					if strings.HasPrefix(strings.TrimSpace(l), cmd+" ") {
						doc = l
					}
				}
				if doc == "" {
					t.Errorf("%s: %q: no usage line for %s", file, st.Run, cmd)
				}
				for _, f := range fields {
					if f == "--env" {
						continue // the root's flag, which every spec-reading command takes
					}
					if strings.HasPrefix(f, "-") && !strings.Contains(doc, f+" ") && !strings.Contains(doc, f+"]") {
						t.Errorf("%s: %q: flag %s is not in the usage line %q", file, st.Run, f, doc)
					}
				}
			}
		}
		for _, want := range wants {
			if !seen[want] {
				t.Errorf("%s does not run %s (runs %v)", file, want, seen)
			}
		}
	}
}
