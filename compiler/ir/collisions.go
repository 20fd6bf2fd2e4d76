package ir

import (
	"fmt"
	"strings"
)

// derived is one AWS resource name fleetc derives from the spec.
type derived struct {
	kind  string // the AWS resource type, e.g. "SQS queue"
	name  string
	role  string // what the resource is to its owner, "%s" standing for the owner: "the queue of %s"
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
	add("SQS queue", f.TargetDLQ.Name, "the delivery dead-letter queue named after %s", fleetPath)
	idem, idemRole := fleetPath, "the idempotency table named after %s"
	if s.State != nil && s.State.IdempotencyTable != "" {
		idem, idemRole = "/state/idempotency_table", "the idempotency table set in %s"
	}
	jobs, jobsRole := fleetPath, "the jobs table named after %s"
	if s.State != nil && s.State.JobsTable != "" {
		jobs, jobsRole = "/state/jobs_table", "the jobs table set in %s"
	}
	add("DynamoDB table", f.State.IdempotencyTable, idemRole, idem)
	add("DynamoDB table", f.State.JobsTable, jobsRole, jobs)
	for _, a := range f.Agents {
		add("SQS queue", a.Queue.Name, "the queue of %s", a.Path)
		add("SQS queue", a.DLQ.Name, "the dead-letter queue of %s", a.Path)
		add("IAM role", a.RoleName, "the worker role of %s", a.Path)
		if a.Rule != nil {
			add("EventBridge rule", a.Rule.Name, "the rule of %s", a.Path)
		}
		if a.Lambda != nil {
			add("Lambda function", a.Lambda.FunctionName, "the function of %s", a.Path)
		}
		if a.AgentCore != nil {
			add("AgentCore runtime", a.AgentCore.RuntimeName, "the runtime of %s", a.Path)
		}
	}
	if e := f.KEDAScaler(); e != nil {
		add("IAM role", e.ScalerRole, "the KEDA scaler role named after %s", fleetPath)
	}
	for _, w := range f.Workflows {
		add("Step Functions state machine", w.StateMachineName, "the state machine of %s", w.Path)
		add("IAM role", w.RoleName, "the execution role of %s", w.Path)
		add("CloudWatch log group", w.LogGroup, "the log group of %s", w.Path)
	}
	for _, sc := range f.Schedules {
		add("EventBridge Scheduler schedule", sc.ScheduleName, "the schedule of %s", sc.Path)
	}
	if len(f.Schedules) > 0 {
		add("IAM role", SchedulerRoleName(f), "the schedules' role named after %s", fleetPath)
		add("SQS queue", SchedulesDLQName(f), "the schedules' dead-letter queue named after %s", fleetPath)
	}
	if f.HasApprovals() {
		// The recorder's names are the workflow names of a workflow called "approvals".
		rec := ApprovalRecorderName(f)
		add("Step Functions state machine", rec, "the approval recorder named after %s", fleetPath)
		add("IAM role", StateMachineRoleName(rec), "the approval recorder's role named after %s", fleetPath)
		add("CloudWatch log group", StateMachineLogGroup(rec), "the approval recorder's log group named after %s", fleetPath)
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
		summary := fmt.Sprintf("%s %q would be created twice: as %s and as %s",
			d.kind, d.name, fmt.Sprintf(prev.role, l.describe(prev.owner)), fmt.Sprintf(d.role, l.describe(d.owner)))
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
