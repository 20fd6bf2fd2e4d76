package terraform

import (
	"strings"

	"github.com/fleetc/fleetc/compiler/asl"
	"github.com/fleetc/fleetc/compiler/ir"
)

// workflows emits one state machine per workflow with its role and log group.
func (g *gen) workflows() {
	if len(g.f.Workflows) == 0 {
		return
	}
	fl := g.file("workflows.tf")
	for _, w := range g.f.Workflows {
		g.workflow(fl.owner(PartWorkflow+w.Name, w.Path), w)
	}
	if g.f.HasApprovals() {
		g.approvalRecorder(fl.owner(PartState, "/workflows"))
	}
}

// recorderLocal is the Terraform name of the approval recorder's blocks.
const recorderLocal = "fleetc_approvals"

// approvalRecorder emits the Express state machine that records approvals' task tokens
// (compiler/asl.RecorderPath) with its role and log group.
func (g *gen) approvalRecorder(fl *file) {
	name := ir.ApprovalRecorderName(g.f)
	g.claim("aws_cloudwatch_log_group", recorderLocal+"_sfn", "/workflows")
	lg := fl.resource("aws_cloudwatch_log_group", recorderLocal+"_sfn")
	lg.set("name", str(ir.StateMachineLogGroup(name)))
	lg.set("retention_in_days", num(logRetentionDays))
	g.encryptLogs(lg)

	// The machines whose approvals it may fail (asl.ErrApprovalNotRequested), spelled out from
	// their names: referencing them would be a cycle (each references the recorder).
	var waiting []tokens
	for _, w := range g.f.Workflows {
		if w.HasApprovals() {
			waiting = append(waiting, g.serviceARN("states", "stateMachine:"+w.StateMachineName), g.serviceARN("states", "stateMachine:"+w.StateMachineName+"/*"))
		}
	}
	// Its input names the notify event's source and detail-type: the conditions hold it to the
	// approval steps' own notify events, and its writes to the approval keys.
	var notify []*ir.Event
	for _, w := range g.f.Workflows {
		for _, s := range w.Steps {
			if s.Approval != nil && s.Approval.Notify != nil {
				notify = append(notify, s.Approval.Notify)
			}
		}
	}
	st := []stmt{
		{sid: "RecordApprovalTokens", actions: []string{"dynamodb:PutItem"}, resources: []tokens{ref("aws_dynamodb_table", "idempotency", "arn")},
			conditions: []condition{leadingKeys(ir.ApprovalKeyPrefix)}},
		{sid: "AnnounceApprovals", actions: []string{"events:PutEvents"}, resources: []tokens{ref("aws_cloudwatch_event_bus", "fleet", "arn")},
			conditions: emitConditions(notify)},
		{sid: "TaskTokenCallbacks", actions: []string{"states:SendTaskFailure"}, resources: waiting},
		{sid: "LogDelivery", actions: []string{
			"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
			"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
		}, resources: []tokens{str("*")}},
	}
	g.role(fl, recorderLocal+"_sfn", ir.StateMachineRoleName(name), "/workflows",
		serviceTrust("states.amazonaws.com", true, []tokens{g.serviceARN("states", "stateMachine:"+name)}, "sts:AssumeRole"), st,
		"Role of the approval recorder "+name+": put a token in the idempotency table and the notify event on the bus, nothing else.")

	g.claim("aws_sfn_state_machine", recorderLocal, "/workflows")
	sm := fl.resource("aws_sfn_state_machine", recorderLocal)
	sm.set("name", str(name))
	sm.set("type", str("EXPRESS"))
	sm.set("role_arn", ref("aws_iam_role", recorderLocal+"_sfn", "arn"))
	sm.set("definition", call("templatefile", pathModule("../"+asl.RecorderPath), object(
		kv{ir.BusNameVar, ref("aws_cloudwatch_event_bus", "fleet", "name")},
		kv{ir.IdempotencyTableVar, ref("aws_dynamodb_table", "idempotency", "name")},
	)))
	lc := sm.nested("logging_configuration")
	lc.set("log_destination", tmpl(interp(ref("aws_cloudwatch_log_group", recorderLocal+"_sfn", "arn")), lit(":*")))
	// Execution data would put the task token in the log group.
	lc.set("include_execution_data", boolean(false))
	lc.set("level", str("ERROR"))
	sm.set("depends_on", list(ref("aws_iam_role_policy", recorderLocal+"_sfn")))
}

func (g *gen) workflow(fl *file, w *ir.Workflow) {
	n := local(w.Name)
	g.claim("aws_cloudwatch_log_group", n+"_sfn", w.Path)
	lg := fl.resource("aws_cloudwatch_log_group", n+"_sfn")
	lg.set("name", str(w.LogGroup))
	lg.set("retention_in_days", num(logRetentionDays))
	g.encryptLogs(lg)

	queued, invoked := splitDispatch(w)
	var queues, functions []tokens
	for _, a := range queued {
		queues = append(queues, ref("aws_sqs_queue", local(a.Name), "arn"))
	}
	for _, a := range invoked {
		functions = append(functions, functionPolicyTarget(a))
	}
	var st []stmt
	if len(queues) > 0 {
		st = append(st, stmt{sid: "DispatchToClassQueues", actions: []string{"sqs:SendMessage"}, resources: queues})
	}
	if len(functions) > 0 {
		// Synchronous steps in Express executions (lambda:invoke): exactly these functions.
		st = append(st, stmt{sid: "InvokeClassFunctions", actions: []string{"lambda:InvokeFunction"}, resources: functions})
	}
	if hasFanOut(w) {
		// A Distributed Map starts child executions of this very state machine. Its ARN is
		// spelled out from the name: referencing the resource here would be a cycle.
		smARN := tmpl(lit("arn:"), interp(partition()), lit(":states:"+g.f.Region+":"), interp(accountID()), lit(":stateMachine:"+w.StateMachineName))
		childARN := tmpl(lit("arn:"), interp(partition()), lit(":states:"+g.f.Region+":"), interp(accountID()), lit(":execution:"+w.StateMachineName+"/*"))
		st = append(st,
			stmt{sid: "DistributedMapStart", actions: []string{"states:StartExecution"}, resources: []tokens{smARN}},
			stmt{sid: "DistributedMapChildren", actions: []string{"states:DescribeExecution", "states:StopExecution"}, resources: []tokens{childARN}})
		// Each Distributed Map's ResultWriter exports the child results to the claim-check
		// bucket under its own prefix (statemachines/*.asl.json). Step Functions uploads large
		// result files in parts, hence the multipart actions; GetObject is in AWS's documented
		// ResultWriter policy too. Scoped to this workflow's fan-out prefixes only.
		var prefixes []tokens
		for _, s := range w.Steps {
			if s.FanOut != nil {
				prefixes = append(prefixes, tmpl(interp(ref("aws_s3_bucket", "claimcheck", "arn")), lit("/"+ir.ResultPrefix(w, s)+"/*")))
			}
		}
		st = append(st, stmt{sid: "FanOutResultWriter", actions: []string{
			"s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload",
		}, resources: prefixes})
	}
	if w.HasApprovals() {
		// Approval steps start the recorder, which holds the token out of the bus.
		st = append(st, stmt{sid: "StartApprovalRecorder", actions: []string{"states:StartExecution"},
			resources: []tokens{ref("aws_sfn_state_machine", recorderLocal, "arn")}})
	}
	// CloudWatch Logs delivery for state machine logging; these actions take no resource ARN.
	st = append(st, stmt{sid: "LogDelivery", actions: []string{
		"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
		"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
	}, resources: []tokens{str("*")}})
	// The machine, and with a Distributed Map its child runs (stateMachine:<name>/<label>).
	sourceMachines := []tokens{g.serviceARN("states", "stateMachine:"+w.StateMachineName)}
	if hasFanOut(w) {
		sourceMachines = append(sourceMachines, g.serviceARN("states", "stateMachine:"+w.StateMachineName+"/*"))
	}
	if w.Rollout != nil {
		// Its versions and alias (stateMachine:<name>:<qualifier>), whichever an execution runs on.
		sourceMachines = append(sourceMachines, g.serviceARN("states", "stateMachine:"+w.StateMachineName+":*"))
	}
	g.role(fl, n+"_sfn", w.RoleName, w.Path, serviceTrust("states.amazonaws.com", true, sourceMachines, "sts:AssumeRole"), st,
		"Role of state machine "+w.StateMachineName+": send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.")

	vars := make([]kv, 0, len(w.Agents)+1)
	if hasFanOut(w) {
		// ResultWriter's Bucket: "${claim_check_bucket}" in the definition.
		vars = append(vars, kv{ir.ClaimCheckBucketVar, ref("aws_s3_bucket", "claimcheck", "bucket")})
	}
	if w.HasApprovals() {
		vars = append(vars, kv{ir.ApprovalRecorderVar, ref("aws_sfn_state_machine", recorderLocal, "arn")})
	}
	for _, a := range invoked {
		vars = append(vars, kv{ir.FunctionARNVar(a), functionTarget(a)})
	}
	for _, a := range queued {
		vars = append(vars, kv{ir.QueueURLVar(a), ref("aws_sqs_queue", local(a.Name), "url")})
	}
	g.claim("aws_sfn_state_machine", n, w.Path)
	sm := fl.resource("aws_sfn_state_machine", n)
	sm.set("name", str(w.StateMachineName))
	sm.set("type", str(strings.ToUpper(w.Type)))
	sm.set("role_arn", ref("aws_iam_role", n+"_sfn", "arn"))
	sm.set("definition", call("templatefile", pathModule("../statemachines/"+w.Name+".asl.json"), object(vars...)))
	lc := sm.nested("logging_configuration")
	lc.set("log_destination", tmpl(interp(ref("aws_cloudwatch_log_group", n+"_sfn", "arn")), lit(":*")))
	lc.set("include_execution_data", boolean(false))
	lc.set("level", str("ERROR"))
	if w.Rollout != nil {
		// Each change publishes a version; the alias below is what starts executions.
		sm.set("publish", boolean(true))
	}
	// Step Functions checks log delivery permissions when the machine is created.
	sm.set("depends_on", list(ref("aws_iam_role_policy", n+"_sfn")))
	if w.Rollout != nil {
		g.workflowAlias(fl, w, n)
	}
}

// workflowAlias emits the alias executions start through: all traffic on the version the last
// apply published. An execution runs to its end on the version it started on (Step Functions
// binds it at StartExecution), and moving the alias back is the rollback.
func (g *gen) workflowAlias(fl *file, w *ir.Workflow, n string) {
	g.claim("aws_sfn_alias", n, w.Rollout.Path)
	al := fl.resource("aws_sfn_alias", n, "Start executions of "+w.StateMachineName+" here (output state_machine_alias_arns): each runs on the version it started on.")
	al.set("name", str(ir.LiveAlias))
	rc := al.nested("routing_configuration")
	rc.set("state_machine_version_arn", ref("aws_sfn_state_machine", n, "state_machine_version_arn"))
	rc.set("weight", num(100))
}

// splitDispatch splits the workflow's classes (sorted, as w.Agents) into those it reaches through
// their queue with a task token and those it invokes synchronously (ir.Step.Synchronous).
func splitDispatch(w *ir.Workflow) (queued, invoked []*ir.Agent) {
	q, inv := map[*ir.Agent]bool{}, map[*ir.Agent]bool{}
	for _, s := range w.Steps {
		if s.Agent == nil {
			continue
		}
		if s.Synchronous(w) {
			inv[s.Agent] = true
		} else {
			q[s.Agent] = true
		}
	}
	for _, a := range w.Agents {
		if q[a] {
			queued = append(queued, a)
		}
		if inv[a] {
			invoked = append(invoked, a)
		}
	}
	return queued, invoked
}

func hasFanOut(w *ir.Workflow) bool {
	for _, s := range w.Steps {
		if s.FanOut != nil {
			return true
		}
	}
	return false
}
