package ir

import (
	"fmt"
	"strings"
)

// derived is one AWS resource name fleetc derives from the spec.
type derived struct {
	kind  string // the AWS resource type, e.g. "SQS queue"
	name  string
	role  string // what the resource is to its owner: "the queue of", "the dead-letter queue of"
	owner string // spec path of the name it derives from
}

// derivedNames lists every AWS name the IR derives, in fleet order.
func (l *lowerer) derivedNames() []derived {
	f, s := l.f, l.src
	fleetPath := "/fleet"
	var out []derived
	add := func(kind, name, role, owner string) {
		if name != "" {
			out = append(out, derived{kind, name, role, owner})
		}
	}
	add("SQS queue", f.TargetDLQ.Name, "the delivery dead-letter queue of", fleetPath)
	idem, jobs := fleetPath, fleetPath
	if s.State != nil && s.State.IdempotencyTable != "" {
		idem = "/state/idempotency_table"
	}
	if s.State != nil && s.State.JobsTable != "" {
		jobs = "/state/jobs_table"
	}
	add("DynamoDB table", f.State.IdempotencyTable, "the idempotency table of", idem)
	add("DynamoDB table", f.State.JobsTable, "the jobs table of", jobs)
	for _, a := range f.Agents {
		add("SQS queue", a.Queue.Name, "the queue of", a.Path)
		add("SQS queue", a.DLQ.Name, "the dead-letter queue of", a.Path)
		add("IAM role", a.RoleName, "the worker role of", a.Path)
		if a.Rule != nil {
			add("EventBridge rule", a.Rule.Name, "the rule of", a.Path)
		}
		if a.Lambda != nil {
			add("Lambda function", a.Lambda.FunctionName, "the function of", a.Path)
		}
		if a.AgentCore != nil {
			add("AgentCore runtime", a.AgentCore.RuntimeName, "the runtime of", a.Path)
		}
	}
	for _, w := range f.Workflows {
		add("Step Functions state machine", w.StateMachineName, "the state machine of", w.Path)
		add("IAM role", w.RoleName, "the execution role of", w.Path)
		add("CloudWatch log group", w.LogGroup, "the log group of", w.Path)
	}
	return out
}

// checkCollisions reports two spec names that derive one AWS name (class researcher's DLQ
// and class researcher-dlq's queue are both <fleet>-researcher-dlq): AWS would be asked to
// create one resource twice. The error sits on both spec names and names the resource.
func (l *lowerer) checkCollisions() {
	first := map[string]derived{}
	for _, d := range l.derivedNames() {
		key := d.kind + "\x00" + d.name
		prev, dup := first[key]
		if !dup {
			first[key] = d
			continue
		}
		summary := fmt.Sprintf("%s %q would be created twice: as %s %s and as %s %s",
			d.kind, d.name, prev.role, l.describe(prev.owner), d.role, l.describe(d.owner))
		for _, owner := range []string{prev.owner, d.owner} {
			diag := l.ds.Errorf("P006", owner, "%s", summary)
			diag.Detail = "fleetc derives AWS names from spec names (<fleet>-<class>, <fleet>-<class>-dlq, <fleet>-<workflow>, ...), and these two meet. Rename one of them."
		}
	}
}

// describe names a spec path for a message, with its line when the source is known.
func (l *lowerer) describe(path string) string {
	name := strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", ".")
	if path == "/fleet" {
		name = "fleet " + l.f.Name
	}
	if l.idx != nil && l.idx.Has(path) {
		name += fmt.Sprintf(" (line %d)", l.idx.Subject(path).Start.Line)
	}
	return name
}
