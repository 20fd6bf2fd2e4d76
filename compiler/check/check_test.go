package check

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetc/fleetc/spec/diag"
)

var update = flag.Bool("update", false, "rewrite testdata/*/fail.want from the current rules")

// rulesMD lists every check of the design's rule catalog (../shared/design/rules.md): the catalog must implement each.
var rulesMD = strings.Fields(`
Q001 Q002 Q003 Q004 Q005 Q006 Q007 Q008 Q009 Q010 Q011
E001 E002 E003 E004 E005 E006 E007 E008 E009 E010 E011 E012 E013 E014
S001 S002 S003 S004 S005 S006 S007 S008 S009 S010
W001 W002 W003 W004 W005 W006
M001 M002 M003 M004 M005
I001 I002 T001`)

// beyondRulesMD are intentional additions to the catalog that rules.md does not list (yet):
// E015 (a consumes.match field the event does not declare never matches: review finding 8),
// W007 (an exec handler in the stock image: review finding 28), E017 (bus.model v2 cannot be
// created: issue 7 item 2), E020 (emitted event contracts the worker can fill: issue 7 item 1),
// Q012 (the 12-hour visibility ceiling: issue 7 item 3), W008 (eks classes name their cluster
// and KEDA operator: issue 7 item 9), M006 (model targets fleet-worker's router can call:
// issue 12), T002 (an llm handler's async:<class> tools name async tool classes: issue 19),
// S011 (a model policy's projected tokens/min within its tokens_per_minute: issue 37),
// M007 (a keyed model policy names where a deployed worker reads its key: issue 34), W009
// (handler.secrets name variables the worker leaves to the command: issue 34), W010 (an
// agentcore http handler is not fleet-worker's own port: issue 35), S012 and S013 (an
// approval step's timeout and workflow type: issue 38 item 1), Q014 and Q015 (a fairness key
// and its cap: issue 38 item 2), W020, W021, W022 and S020 (a rollout's shape per runtime:
// issue 38 item 5).
var beyondRulesMD = []string{"E015", "E017", "E020", "Q012", "Q013", "W007", "W008", "M006", "M007", "T002", "S011", "W009", "W010", "S012", "S013", "Q014", "Q015", "W020", "W021", "W022", "S020"}

// passWarnings are warnings a rule's pass.yaml cannot avoid, by code and summary fragment
// (none now: W004's "no dispatcher" warning went away when fleetc began generating it).
var passWarnings = map[string]string{}

// alsoFires names the other errors a fixture cannot avoid: E009 needs a v2 bus, which E017
// refuses; retrying at two layers (M002) means SDK retries, which M005 reports; an agentcore
// payload over 100 MB (W004) is also over SQS's 1 MiB message (Q009).
var alsoFires = map[string][]string{"E009": {"E017"}, "M002": {"M005"}, "W004": {"Q009"}}

func TestCatalog(t *testing.T) {
	rules := Rules()
	if len(rules) != len(rulesMD)+len(beyondRulesMD) {
		t.Errorf("catalog has %d rules, rules.md %d + %d additions", len(rules), len(rulesMD), len(beyondRulesMD))
	}
	idRE := regexp.MustCompile(`^[QESWMIT][0-9]{3}$`)
	categories := map[string]bool{"queues": true, "bus": true, "workflows": true, "workers": true, "models": true, "idempotency": true}
	for i, r := range rules {
		if i > 0 && rules[i-1].ID >= r.ID {
			t.Errorf("Rules() not sorted or duplicate: %s then %s", rules[i-1].ID, r.ID)
		}
		if !idRE.MatchString(r.ID) || !categories[r.Category] || r.Check == nil {
			t.Errorf("%s: bad ID, category %q or nil Check", r.ID, r.Category)
		}
		if r.Summary == "" || strings.Contains(r.Summary, "\n") {
			t.Errorf("%s: summary must be one line: %q", r.ID, r.Summary)
		}
		if n := strings.Count(strings.TrimSpace(r.Explain), "\n") + 1; n < 5 || n > 12 {
			t.Errorf("%s: explanation is %d lines; keep it 5–12", r.ID, n)
		}
		if !strings.Contains(r.Explain, "Fix:") {
			t.Errorf("%s: explanation does not say how to fix it", r.ID)
		}
		got, ok := Lookup(strings.ToLower(r.ID))
		if !ok || got.ID != r.ID {
			t.Errorf("Lookup(%q) = %v, %v", strings.ToLower(r.ID), got.ID, ok)
		}
	}
	for _, id := range append(append([]string(nil), rulesMD...), beyondRulesMD...) {
		if _, ok := Lookup(id); !ok {
			t.Errorf("check %s is not implemented", id)
		}
	}
	if _, ok := Lookup("X999"); ok {
		t.Error("Lookup found a rule that does not exist")
	}
}

// TestEveryRuleHasFixture: each rule has testdata/<ID>/ with fail.yaml, fail.want and
// pass.yaml, or (rules fleet.yaml cannot violate) a README.md and an IR-level test.
func TestEveryRuleHasFixture(t *testing.T) {
	for _, r := range Rules() {
		dir := filepath.Join("testdata", r.ID)
		if _, ok := irFixtures[r.ID]; ok {
			if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
				t.Errorf("%s: IR-level fixture needs %s/README.md saying why: %v", r.ID, dir, err)
			}
			continue
		}
		for _, name := range []string{"fail.yaml", "fail.want", "pass.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: missing fixture: %v", r.ID, err)
			}
		}
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := Lookup(e.Name()); !ok || !e.IsDir() {
			t.Errorf("testdata/%s is not a rule's fixture directory", e.Name())
		}
	}
}

// failFixtures lists a rule's fail fixtures: fail.yaml and any fail-<case>.yaml, each
// with its .want beside it.
func failFixtures(t *testing.T, id string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", id, "fail*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func TestFixtures(t *testing.T) {
	for _, r := range Rules() {
		if _, ok := irFixtures[r.ID]; ok {
			continue
		}
		t.Run(r.ID, func(t *testing.T) {
			for _, p := range failFixtures(t, r.ID) {
				checkFailFixture(t, r, p)
			}
			passName := r.ID + "/pass.yaml"
			for _, d := range load(t, passName, mustRead(t, filepath.Join("testdata", passName))) {
				allowed := d.Severity == diag.Warning && passWarnings[d.Code] != "" && strings.Contains(d.Summary, passWarnings[d.Code])
				if (d.Code == r.ID && !allowed) || d.Severity == diag.Error {
					t.Errorf("pass.yaml: %s %v", d.Severity, d)
				}
			}
		})
	}
}

// checkFailFixture: the fixture triggers its rule (and no other error it does not declare),
// twice the same way, and matches its .want.
func checkFailFixture(t *testing.T, r Rule, path string) {
	t.Helper()
	failName := r.ID + "/" + filepath.Base(path)
	run := func() []string {
		var lines []string
		for _, d := range load(t, failName, mustRead(t, path)) {
			lines = append(lines, d.String())
		}
		return lines
	}
	var lines []string
	fired := false
	for _, d := range load(t, failName, mustRead(t, path)) {
		lines = append(lines, d.String())
		if d.Code == r.ID {
			fired = true
			if d.Detail == "" {
				t.Errorf("%v: no detail (how to fix)", d)
			}
			if d.Severity == diag.Error && r.Severity == diag.Warning {
				t.Errorf("%v: error from a warning rule", d)
			}
		} else if d.Severity == diag.Error && !contains(alsoFires[r.ID], d.Code) {
			t.Errorf("%s triggers another error: %v", failName, d)
		}
	}
	if !fired {
		t.Errorf("%s does not trigger %s", failName, r.ID)
	}
	got := strings.Join(lines, "\n") + "\n"
	if again := strings.Join(run(), "\n") + "\n"; again != got {
		t.Errorf("two runs over %s disagree:\n%s\n---\n%s", failName, got, again)
	}
	wantPath := strings.TrimSuffix(path, ".yaml") + ".want"
	if *update {
		if err := os.WriteFile(wantPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(wantPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got); run go test ./compiler/check -update and read the diff:\n%s", wantPath, diff)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Lookup finds a rule by ID (case-insensitive).
func Lookup(id string) (Rule, bool) {
	id = strings.ToUpper(strings.TrimSpace(id))
	for _, r := range Rules() {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
