package terraform

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/contract"
	"github.com/fleetc/fleetc/schemas/jobs"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Tools function constants.
const (
	// toolsTimeout: a tool call is a DynamoDB write and a PutEvents; Bedrock Agents and
	// AgentCore Gateway wait far longer, so 30 s only bounds a stuck call.
	toolsTimeout = 30
	toolsMemory  = 256
)

// leadingKeys allows only items whose partition key starts with prefix.
func leadingKeys(prefix string) condition {
	return condition{"ForAllValues:StringLike", "dynamodb:LeadingKeys", []tokens{str(prefix + "*")}}
}

// agentSide is what a caller of the async tools of classes may do, with its job items held to
// table keys starting with jobKey and its job list to index keys starting with owner: publish
// the classes' request events (events:detail-type and events:source conditions), create and
// read job items, and query its jobs on the owner index. The tools role (every async class,
// any principal: jobs.KeyPrefix, jobs.OwnerPrefix; the function checks the caller) and an llm
// class's worker role (the classes it names, as jobs.ClassPrincipal: its own jobs' keys only)
// get exactly these; neither gets the worker's UpdateItem, so no agent side can do a worker's work.
func agentSide(classes []*ir.Agent, jobKey, owner string) []stmt {
	table := ref("aws_dynamodb_table", "jobs", "arn")
	st := []stmt{
		{sid: "CreateAndReadJobs", actions: []string{"dynamodb:GetItem", "dynamodb:PutItem"},
			resources: []tokens{table}, conditions: []condition{leadingKeys(jobKey)}},
		{sid: "ListOwnersJobs", actions: []string{"dynamodb:Query"},
			resources:  []tokens{tmpl(interp(table), lit("/index/"+jobs.OwnerIndex))},
			conditions: []condition{leadingKeys(owner)}},
	}
	var requests []*ir.Event
	for _, a := range classes {
		if a.Consumes != nil {
			requests = append(requests, a.Consumes.Event)
		}
	}
	if len(requests) > 0 {
		st = append(st, stmt{sid: "RequestJobs", actions: []string{"events:PutEvents"},
			resources:  []tokens{ref("aws_cloudwatch_event_bus", "fleet", "arn")},
			conditions: emitConditions(requests)})
	}
	return st
}

// tools emits the agent side of the async tools (fleet-worker --mode tools): one Lambda
// function serving start_*, get_*_status and list_my_jobs, its function URL (AWS_IAM), the
// invoke grants for Bedrock Agents and an AgentCore Gateway, and its own role. The role may
// publish only the async classes' request events and create, read and list job items; it
// shares no action with any worker role (the worker only UpdateItems jobs), so a tool can
// never do a worker's work. Also per async class: a failed-jobs alarm and the optional
// completion push (tool.notify).
func (g *gen) tools() {
	t := g.f.Tools
	if t == nil || g.f.State.JobsTable == "" {
		return
	}
	fl := g.file("tools.tf").owner(PartState, "/state")
	n := "async_tools"
	st := append(agentSide(t.Classes, jobs.KeyPrefix, jobs.OwnerPrefix),
		stmt{sid: "WriteFunctionLogs", actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
			resources: []tokens{tmpl(interp(ref("aws_cloudwatch_log_group", n, "arn")), lit(":*"))}},
		readConfig(t.ConfigPath))
	g.role(fl, n, t.RoleName, t.Path, serviceTrust("lambda.amazonaws.com", false, nil, "sts:AssumeRole"), st,
		"Agent side of the async tools: request events and job items only; never a worker's permissions.")

	if ecrRepository(g.f.Worker.Image) == "" {
		d := g.ds.Warnf("TF005", t.Path, "the async tools function uses image %q, which is not in Amazon ECR", g.f.Worker.Image)
		d.Detail = "Lambda pulls container images only from ECR; push fleet-worker there and set worker.image."
	}
	if cfg, ok := g.configs[rc.ToolsFile]; ok {
		g.checkEnv(t.Path, "the async tools function's environment", map[string]string{contract.EnvToolsS3: g.configRef(t.ConfigPath, cfg)})
	}
	g.claim("aws_cloudwatch_log_group", n, t.Path)
	lg := fl.resource("aws_cloudwatch_log_group", n)
	lg.set("name", str("/aws/lambda/"+t.FunctionName))
	lg.set("retention_in_days", num(logRetentionDays))
	g.encryptLogs(lg)

	g.claim("aws_lambda_function", n, t.Path)
	fn := fl.resource("aws_lambda_function", n,
		"fleet-worker --mode tools: Bedrock Agents action groups (function details), AgentCore Gateway",
		"Lambda targets and the function URL (HTTP+JSON) all reach the same start/status/list code.")
	fn.set("function_name", str(t.FunctionName))
	fn.set("description", str("Async tools of fleet "+g.f.Name+": start_*, get_*_status, "+ir.ListJobsTool+"."))
	fn.set("role", ref("aws_iam_role", n, "arn"))
	fn.set("package_type", str("Image"))
	fn.set("image_uri", str(g.f.Worker.Image))
	fn.set("timeout", num(toolsTimeout))
	fn.set("memory_size", num(toolsMemory))
	fn.nested("image_config").set("command", strs("--mode", "tools"))
	fn.nested("environment").set("variables", object(kv{contract.EnvToolsS3, g.configObject(fl, configObjectName(n), t.Path, t.ConfigPath)}))
	fn.set("depends_on", list(ref("aws_cloudwatch_log_group", n), ref("aws_iam_role_policy", n)))

	g.claim("aws_lambda_function_url", n, t.Path)
	u := fl.resource("aws_lambda_function_url", n,
		"HTTP+JSON and MCP callers sign their requests (SigV4); nothing reaches the tools anonymously.")
	u.set("function_name", ref("aws_lambda_function", n, "function_name"))
	u.set("authorization_type", str("AWS_IAM"))

	g.claim("aws_lambda_permission", n+"_bedrock_agents", t.Path)
	p := fl.resource("aws_lambda_permission", n+"_bedrock_agents",
		"Bedrock Agents of this account may call the tools as an action group (function details).")
	p.set("statement_id", str("BedrockAgentsInvoke"))
	p.set("action", str("lambda:InvokeFunction"))
	p.set("function_name", ref("aws_lambda_function", n, "function_name"))
	p.set("principal", str("bedrock.amazonaws.com"))
	p.set("source_account", accountID())
	p.set("source_arn", tmpl(lit("arn:"), interp(partition()), lit(":bedrock:"+g.f.Region+":"), interp(accountID()), lit(":agent/*")))

	fnARN := ref("aws_lambda_function", n, "arn")
	doc := g.policyDoc(fl, n+"_invoke", t.Path, []stmt{
		{sid: "InvokeTools", actions: []string{"lambda:InvokeFunction"}, resources: []tokens{fnARN, tmpl(interp(fnARN), lit(":*"))}},
		{sid: "InvokeToolsURL", actions: []string{"lambda:InvokeFunctionUrl"}, resources: []tokens{fnARN},
			conditions: []condition{{"StringEquals", "lambda:FunctionUrlAuthType", []tokens{str("AWS_IAM")}}}},
	})
	g.claim("aws_iam_policy", n+"_invoke", t.Path)
	ip := fl.resource("aws_iam_policy", n+"_invoke",
		"Attach to an AgentCore Gateway's execution role (Lambda target) or any caller of the function URL.")
	ip.set("name", str(t.RoleName+"-invoke"))
	ip.set("description", str("Call the async tools of fleet "+g.f.Name+" (Lambda invoke and the AWS_IAM function URL)."))
	ip.set("policy", doc)

	for _, a := range t.Classes {
		g.failedJobsAlarm(fl, a)
		if a.Tool.Notify != nil {
			g.notify(fl, a)
		}
	}
}

// failedJobsAlarm counts the jobs a lambda class marks FAILED (fleet-worker logs
// jobs.LogFailed as JSON into the function's log group) and alarms on any. Classes on eks and
// agentcore log outside Terraform's reach; their dead letters raise the DLQ depth alarm.
func (g *gen) failedJobsAlarm(fl *file, a *ir.Agent) {
	if a.Lambda == nil {
		return
	}
	n := local(a.Name)
	g.claim("aws_cloudwatch_log_metric_filter", n+"_failed_jobs", a.Tool.Path)
	mf := fl.resource("aws_cloudwatch_log_metric_filter", n+"_failed_jobs")
	mf.set("name", str(a.Lambda.FunctionName+"-failed-jobs"))
	mf.set("log_group_name", ref("aws_cloudwatch_log_group", n, "name"))
	mf.set("pattern", str(`{ $.msg = "`+jobs.LogFailed+`" }`))
	mt := mf.nested("metric_transformation")
	mt.set("name", str(jobs.FailedJobsMetric))
	mt.set("namespace", str(jobs.MetricNamespace))
	mt.set("value", str("1"))
	mt.set("dimensions", object(kv{"class", str("$.class")}))
	mt.set("unit", str("Count"))

	g.claim("aws_cloudwatch_metric_alarm", n+"_failed_jobs", a.Tool.Path)
	al := fl.resource("aws_cloudwatch_metric_alarm", n+"_failed_jobs")
	al.set("alarm_name", str(a.Lambda.FunctionName+"-failed-jobs"))
	al.set("alarm_description", str(fmt.Sprintf("%s marked a job FAILED: get_%s_status answers replan. Triage the DLQ.", a.Name, local(a.Name))))
	al.set("namespace", str(jobs.MetricNamespace))
	al.set("metric_name", str(jobs.FailedJobsMetric))
	al.set("dimensions", object(kv{"class", str(a.Name)}))
	al.set("statistic", str("Sum"))
	al.set("period", num(60))
	al.set("evaluation_periods", num(1))
	al.set("comparison_operator", str("GreaterThanThreshold"))
	al.set("threshold", num(0))
	al.set("treat_missing_data", str("notBreaching"))
	al.set("depends_on", list(ref("aws_cloudwatch_log_metric_filter", n+"_failed_jobs")))
	g.alarmNotify(al)
}

// notify pushes an async class's completion events (its emits) to tool.notify: an
// EventBridge API destination (through a role allowed to invoke exactly that destination)
// or a queue created here, which only this rule may send to.
func (g *gen) notify(fl *file, a *ir.Agent) {
	nt := a.Tool.Notify
	n := local(a.Name) + "_notify"
	if len(a.Emits) == 0 {
		g.ds.Errorf("TF004", nt.Path, "%s: tool.notify needs completion events, and the class emits none", a.Name)
		return
	}
	types, sources := map[string]bool{}, map[string]bool{}
	for _, e := range a.Emits {
		types[e.DetailType], sources[e.Source] = true, true
	}
	pattern, _ := value(map[string]any{"detail-type": anySorted(types), "source": anySorted(sources)})
	ruleName := nt.Rule
	g.claim("aws_cloudwatch_event_rule", n, nt.Path)
	r := fl.resource("aws_cloudwatch_event_rule", n)
	r.set("name", str(ruleName))
	r.set("description", str("Pushes "+a.Name+"'s completion events to the client (tool.notify)."))
	r.set("event_bus_name", ref("aws_cloudwatch_event_bus", "fleet", "name"))
	r.set("event_pattern", call("jsonencode", pattern))

	g.claim("aws_cloudwatch_event_target", n, nt.Path)
	t := fl.resource("aws_cloudwatch_event_target", n)
	t.set("rule", ref("aws_cloudwatch_event_rule", n, "name"))
	t.set("event_bus_name", ref("aws_cloudwatch_event_bus", "fleet", "name"))
	t.set("target_id", str("notify"))
	switch {
	case nt.APIDestination != "":
		g.role(fl, n, ruleName, nt.Path, serviceTrust("events.amazonaws.com", true, []tokens{ref("aws_cloudwatch_event_rule", n, "arn")}, "sts:AssumeRole"),
			[]stmt{{sid: "InvokeNotifyDestination", actions: []string{"events:InvokeApiDestination"}, resources: []tokens{str(nt.APIDestination)}}},
			"EventBridge calls the API destination of "+a.Name+"'s tool.notify with this role.")
		t.set("arn", str(nt.APIDestination))
		t.set("role_arn", ref("aws_iam_role", n, "arn"))
	default:
		g.claim("aws_sqs_queue", n, nt.Path)
		q := fl.resource("aws_sqs_queue", n, "Completion events of "+a.Name+" for a client that owns the session (tool.notify).")
		q.set("name", str(nt.Queue))
		g.encryptQueue(q)
		doc := g.policyDoc(fl, n+"_queue", nt.Path, []stmt{{
			sid: "NotifyRuleDelivery", actions: []string{"sqs:SendMessage"},
			resources:  []tokens{ref("aws_sqs_queue", n, "arn")},
			principal:  &principal{typ: "Service", ids: []string{"events.amazonaws.com"}},
			conditions: []condition{{"ArnEquals", "aws:SourceArn", []tokens{ref("aws_cloudwatch_event_rule", n, "arn")}}},
		}})
		g.claim("aws_sqs_queue_policy", n, nt.Path)
		qp := fl.resource("aws_sqs_queue_policy", n)
		qp.set("queue_url", ref("aws_sqs_queue", n, "url"))
		qp.set("policy", doc)
		t.set("arn", ref("aws_sqs_queue", n, "arn"))
	}
	rp := t.nested("retry_policy")
	rp.set("maximum_retry_attempts", num(int64(a.Delivery.Attempts)))
	rp.set("maximum_event_age_in_seconds", seconds(a.Delivery.MaxAge))
	t.nested("dead_letter_config").set("arn", ref("aws_sqs_queue", "delivery_dlq", "arn"))
}

func anySorted(m map[string]bool) []any {
	var out []any
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k)
	}
	return out
}
