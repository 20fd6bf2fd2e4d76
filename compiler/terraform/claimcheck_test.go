package terraform

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/claimcheck"
)

// TestClaimCheckWritesInOwnPrefix (issue 7 item 8): every key fleet-worker writes for a class
// lies under the prefix its role may write to, whatever the work key or lease token, and the
// prefix of one class never covers another's ("a" vs "ab").
func TestClaimCheckWritesInOwnPrefix(t *testing.T) {
	for _, class := range []string{"a", "ab", "research-agent", "c_1"} {
		a := &ir.Agent{Name: class}
		for _, work := range []string{"", "arn:aws:states:::execution:x/y", "trace/../../other"} {
			for _, owner := range []string{"", "lease-1", "../b"} {
				key := claimcheck.OutputKey(class, work, owner)
				// outputs/<class>/<hash>/<owner>.json: no work key or owner adds a level.
				if !strings.HasPrefix(key, ir.ClaimCheckOutputPrefix(a)) || strings.Count(key, "/") != 3 {
					t.Errorf("class %s writes %q outside %q", class, key, ir.ClaimCheckOutputPrefix(a))
				}
				if other := (&ir.Agent{Name: class + "b"}); strings.HasPrefix(key, ir.ClaimCheckOutputPrefix(other)) {
					t.Errorf("class %s's key %q is inside class %s's prefix", class, key, other.Name)
				}
			}
		}
	}
}

// A worker role reads the claim-check bucket only where its class may find payloads: inputs/,
// the outputs of its events' producers, its workflows' fan-out results. Before, every role
// could s3:GetObject the whole bucket, so class A could load class B's outputs.
func TestClaimCheckReadsAreScoped(t *testing.T) {
	f := lower(t, "../testdata/kitchen-sink/fleet.yaml")
	files, ds := Generate(f, configs(t, f))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	all := ""
	for _, file := range files {
		all += string(file.Bytes)
	}
	if strings.Contains(all, `claimcheck.arn}/*"`) {
		t.Error("a policy still reads the whole claim-check bucket")
	}
	for _, a := range f.Agents {
		body := ""
		for _, file := range files {
			if file.Path == "terraform/agent_"+a.Name+".tf" {
				body = string(file.Bytes)
			}
		}
		start := strings.Index(body, `sid       = "ReadClaimCheckPayloads"`)
		if start < 0 {
			t.Fatalf("%s: no ReadClaimCheckPayloads statement", a.Name)
		}
		stmt := body[start : start+strings.Index(body[start:], "\n  }\n")]
		for _, b := range f.Agents {
			p := "/" + ir.ClaimCheckOutputPrefix(b) + "*"
			consumed := a.Consumes != nil && a.Consumes.Event != nil && containsAgent(a.Consumes.Event.Producers, b)
			if strings.Contains(stmt, p) != consumed {
				t.Errorf("%s reads %s: %v, but consumes its events: %v\n%s", a.Name, p, !consumed, consumed, stmt)
			}
		}
		if !strings.Contains(stmt, "/inputs/*") {
			t.Errorf("%s cannot read inputs/:\n%s", a.Name, stmt)
		}
	}
}

func containsAgent(list []*ir.Agent, a *ir.Agent) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}
