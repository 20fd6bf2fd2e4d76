package terraform

import (
	"regexp"
	"slices"
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

// A worker role reads the claim-check bucket only where its class may find payloads: the
// inputs of the event it consumes and of its workflows, the outputs of its events' producers,
// its workflows' fan-out results. Before, every role could s3:GetObject the whole bucket, so
// class A could load class B's outputs, and then every role all of inputs/.
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
	// Every statement that allows something names a prefix; only the TLS-only deny covers the whole bucket.
	for _, st := range regexp.MustCompile(`(?s)\n  statement \{\n.*?\n  \}\n`).FindAllString(all, -1) {
		if strings.Contains(st, `claimcheck.arn}/*"`) && !strings.Contains(st, `"Deny"`) {
			t.Errorf("a policy still reads the whole claim-check bucket:%s", st)
		}
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
		// Producers' inputs: those of the event it consumes and of its workflows, no other's.
		for _, ev := range f.Events {
			p := "/" + ir.ClaimCheckEventInputPrefix(ev) + "*"
			consumed := a.Consumes != nil && a.Consumes.Event == ev
			if strings.Contains(stmt, p) != consumed {
				t.Errorf("%s reads %s: %v, but consumes the event: %v\n%s", a.Name, p, !consumed, consumed, stmt)
			}
		}
		for _, w := range f.Workflows {
			p := "/" + ir.ClaimCheckWorkflowInputPrefix(w) + "*"
			if in := slices.Contains(a.Workflows, w); strings.Contains(stmt, p) != in {
				t.Errorf("%s reads %s: %v, but is in the workflow: %v\n%s", a.Name, p, !in, in, stmt)
			}
		}
		if strings.Contains(stmt, "/inputs/*") {
			t.Errorf("%s reads every producer's inputs:\n%s", a.Name, stmt)
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

// The claim-check bucket refuses every request that is not over TLS, from any principal, on
// the bucket and on every object.
func TestClaimCheckBucketIsTLSOnly(t *testing.T) {
	f := lower(t, "../../examples/minimal/fleet.yaml")
	files, ds := Generate(f, configs(t, f))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var state string
	for _, file := range files {
		if file.Path == "terraform/state.tf" {
			state = string(file.Bytes)
		}
	}
	pol := regexp.MustCompile(`(?s)resource "aws_s3_bucket_policy" "claimcheck" \{\n(.*?)\n\}\n`).FindStringSubmatch(state)
	if pol == nil || !regexp.MustCompile(`bucket\s+= aws_s3_bucket\.claimcheck\.id`).MatchString(pol[1]) {
		t.Fatalf("no bucket policy on the claim-check bucket:\n%s", state)
	}
	name := regexp.MustCompile(`policy\s+= data\.aws_iam_policy_document\.([a-z_]+)\.json`).FindStringSubmatch(pol[1])
	if name == nil {
		t.Fatalf("the bucket policy is not a policy document: %s", pol[1])
	}
	doc := regexp.MustCompile(`(?s)data "aws_iam_policy_document" "` + name[1] + `" \{\n(.*?)\n\}\n`).FindStringSubmatch(state)
	if doc == nil {
		t.Fatalf("no policy document %s", name[1])
	}
	for _, want := range []string{
		`effect    = "Deny"`, `actions   = ["s3:*"]`,
		`resources = [aws_s3_bucket.claimcheck.arn, "${aws_s3_bucket.claimcheck.arn}/*"]`,
		`type        = "*"`, `identifiers = ["*"]`,
		`test     = "Bool"`, `variable = "aws:SecureTransport"`, `values   = ["false"]`,
	} {
		if !strings.Contains(doc[1], want) {
			t.Errorf("the TLS-only policy lacks %s:\n%s", want, doc[1])
		}
	}
}
