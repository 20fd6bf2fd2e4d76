package terraform

import (
	"regexp"
	"strings"
	"testing"
)

// Every role an AWS service assumes carries the confused-deputy guards the service supports:
// aws:SourceAccount, and aws:SourceArn naming the resource it acts for (EKS Pod Identity:
// the account only; Lambda sets neither for an execution role).
func TestServiceTrustsAreGuarded(t *testing.T) {
	want := map[string][2]bool{ // service: {SourceAccount, SourceArn}
		"pipes.amazonaws.com":             {true, true},
		"states.amazonaws.com":            {true, true},
		"bedrock-agentcore.amazonaws.com": {true, true},
		"pods.eks.amazonaws.com":          {true, false},
		"lambda.amazonaws.com":            {false, false},
		// EventBridge Scheduler: the account; a schedule-group aws:SourceArn is not used
		// until checked against AWS (the kitchen sink's schedules are in the default group).
		"scheduler.amazonaws.com": {true, false},
	}
	seen := map[string]int{}
	block := regexp.MustCompile(`(?s)data "aws_iam_policy_document" "[a-z0-9_-]+_trust" \{.*?\n\}\n`)
	service := regexp.MustCompile(`identifiers = \["([a-z.-]+amazonaws\.com)"\]`)
	for _, fleet := range []string{"../testdata/kitchen-sink/fleet.yaml", "../../examples/research-fleet/fleet.yaml", "../../examples/async-tools/fleet.yaml"} {
		f := lower(t, fleet)
		files, ds := Generate(f, configs(t, f))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		for _, file := range files {
			for _, b := range block.FindAllString(string(file.Bytes), -1) {
				m := service.FindStringSubmatch(b)
				if m == nil {
					continue
				}
				w, ok := want[m[1]]
				if !ok {
					t.Errorf("%s: a trust for %s, which this test does not know", file.Path, m[1])
					continue
				}
				seen[m[1]]++
				if got := strings.Contains(b, `"aws:SourceAccount"`); got != w[0] {
					t.Errorf("%s: %s trust has aws:SourceAccount %v, want %v\n%s", file.Path, m[1], got, w[0], b)
				}
				if got := strings.Contains(b, `"aws:SourceArn"`); got != w[1] {
					t.Errorf("%s: %s trust has aws:SourceArn %v, want %v\n%s", file.Path, m[1], got, w[1], b)
				}
			}
		}
	}
	for s := range want {
		if seen[s] == 0 {
			t.Errorf("no fleet generated a trust for %s; the test covers nothing there", s)
		}
	}
}

// An AgentCore worker is invoked per step; its dispatcher function owns the queue. The worker
// role keeps no queue permission it never uses.
func TestAgentCoreWorkerRoleHasNoQueueAccess(t *testing.T) {
	f := lower(t, "../testdata/kitchen-sink/fleet.yaml")
	files, ds := Generate(f, configs(t, f))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	n := 0
	for _, a := range f.Agents {
		for _, file := range files {
			if file.Path != "terraform/agent_"+a.Name+".tf" {
				continue
			}
			doc := regexp.MustCompile(`(?s)data "aws_iam_policy_document" "` + local(a.Name) + `_worker" \{.*?\n\}\n`).FindString(string(file.Bytes))
			if doc == "" {
				t.Fatalf("%s: no worker policy", a.Name)
			}
			if has := strings.Contains(doc, `"sqs:`); has != (a.AgentCore == nil) {
				t.Errorf("%s (agentcore %v): queue actions in the worker policy: %v", a.Name, a.AgentCore != nil, has)
			}
			if a.AgentCore != nil {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("the kitchen sink has no agentcore class; the test covers nothing")
	}
}
