package terraform

import (
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/contract"
)

const (
	// dispatchMemory is the dispatcher function's memory: it only moves bytes between SQS
	// and InvokeAgentRuntime (128 MB would do; Lambda's CPU share grows with memory, and
	// payloads up to the claim-check threshold pass through it).
	dispatchMemory = 512
	// dispatchSuffix names the dispatcher's function and role: "<fleet>-<class>" + suffix.
	dispatchSuffix = "-dispatch"
	// awsNameMax bounds IAM role and Lambda function names.
	awsNameMax = 64
)

// dispatchHeaders are the custom request headers the dispatcher sends and fleet-worker reads:
// AgentCore passes a request header on to the container only when the runtime allowlists it.
var dispatchHeaders = contract.AllowedHeaders

// dispatcher emits what feeds an agentcore class: a Lambda function running
// `fleet-worker --mode dispatch` on the class queue's event source mapping, which forwards
// each message to InvokeAgentRuntime (the runtime ARN comes from the runtime resource, which
// only Terraform knows), and its role, allowed to invoke exactly that runtime.
//
// Why a Lambda and not a pod: it needs no cluster, scales with the queue, and gets the ARN
// injected. Its limit is the 15-minute invocation: a step that outlives the function is
// released for the advised delay and the next delivery is answered from the running step
// (one receive per function lifetime). The poll mode of the same binary (any long-running
// host) holds a message for up to 12 h instead.
func (g *gen) dispatcher(fl *file, a *ir.Agent, n string, cfgRef tokens) {
	dn := n + "_dispatch"
	name := dispatchName(g.f.Name, a.Name)
	timeout := a.Queue.Visibility
	if timeout > ir.LambdaMaxTimeout {
		timeout = ir.LambdaMaxTimeout
	}
	if cfg, ok := g.configs[a.Name]; ok {
		g.checkLambdaEnv(a, cfg) // the function carries the same reference
	}
	// Fresh tokens per use: hclwrite formats tokens in place, so a shared slice would carry
	// one site's spacing into another.
	runtimeARN := func() tokens { return ref("aws_bedrockagentcore_agent_runtime", n, "agent_runtime_arn") }

	st := []stmt{
		{sid: "ConsumeClassQueue", actions: []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"},
			resources: []tokens{ref("aws_sqs_queue", n, "arn")}},
		{sid: "DeadLetterOwnMessages", actions: []string{"sqs:SendMessage", "sqs:GetQueueUrl"},
			resources: []tokens{ref("aws_sqs_queue", n+"_dlq", "arn")}},
		// The runtime and the endpoint the dispatcher names (qualifier DEFAULT): nothing else.
		{sid: "InvokeClassRuntime", actions: []string{"bedrock-agentcore:InvokeAgentRuntime"},
			resources: []tokens{runtimeARN(), tmpl(interp(runtimeARN()), lit("/runtime-endpoint/DEFAULT"))}},
		{sid: "WriteFunctionLogs", actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
			resources: []tokens{tmpl(interp(ref("aws_cloudwatch_log_group", dn, "arn")), lit(":*"))}},
		// The dispatcher starts from the class's config, as the runtime does.
		readConfig(a.ConfigPath),
	}
	if a.Fairness != nil {
		st = append(st, deferOverCap(n))
	}
	if len(a.Workflows) > 0 {
		// A message the dispatcher dead-letters itself (the runtime never answered) fails its
		// task; the runtime reports every other outcome. Map children run as <arn>/<label>.
		var sms []tokens
		for _, w := range a.Workflows {
			arn := func() tokens { return ref("aws_sfn_state_machine", local(w.Name), "arn") }
			sms = append(sms, arn(), tmpl(interp(arn()), lit("/*")))
		}
		st = append(st, stmt{sid: "FailTaskTokens", actions: []string{"states:SendTaskFailure"}, resources: sms})
	}
	g.role(fl, dn, name, a.AgentCore.Path, serviceTrust("lambda.amazonaws.com", false, nil, "sts:AssumeRole"), st,
		"Dispatcher of "+a.Name+": reads its queue and invokes its AgentCore runtime.")

	g.claim("aws_cloudwatch_log_group", dn, a.AgentCore.Path)
	lg := fl.resource("aws_cloudwatch_log_group", dn)
	lg.set("name", str("/aws/lambda/"+name))
	lg.set("retention_in_days", num(logRetentionDays))
	g.encryptLogs(lg)

	g.claim("aws_lambda_function", dn, a.AgentCore.Path)
	fn := fl.resource("aws_lambda_function", dn,
		"fleet-worker --mode dispatch: each message of "+a.Queue.Name+" becomes an InvokeAgentRuntime call in its conversation's session.")
	fn.set("function_name", str(name))
	fn.set("description", str("Feeds AgentCore runtime "+a.AgentCore.RuntimeName+" from queue "+a.Queue.Name+"."))
	fn.set("role", ref("aws_iam_role", dn, "arn"))
	fn.set("package_type", str("Image"))
	fn.set("image_uri", str(a.Image))
	// AgentCore runs arm64 images; the dispatcher runs the same one.
	fn.set("architectures", strs("arm64"))
	fn.set("timeout", seconds(timeout))
	fn.set("memory_size", num(dispatchMemory))
	fn.nested("image_config").set("command", strs("--mode", "dispatch"))
	fn.nested("environment").set("variables", workerEnv(n, cfgRef, kv{contract.EnvAgentRuntimeARN, runtimeARN()}))
	fn.set("depends_on", list(ref("aws_cloudwatch_log_group", dn), ref("aws_iam_role_policy", dn)))

	g.claim("aws_lambda_event_source_mapping", dn, a.AgentCore.Path)
	esm := fl.resource("aws_lambda_event_source_mapping", dn,
		"One message per invocation, partial batch responses: a failed message returns alone, after its retry delay.")
	esm.set("event_source_arn", ref("aws_sqs_queue", n, "arn"))
	esm.set("function_name", ref("aws_lambda_function", dn, "arn"))
	esm.set("batch_size", num(1))
	esm.set("maximum_batching_window_in_seconds", num(0))
	esm.set("function_response_types", strs("ReportBatchItemFailures"))
	mx := min(max(a.Scaling.Max, 2), lambdaMaxConcurrency)
	esm.nested("scaling_config").set("maximum_concurrency", num(int64(mx)))
}

// dispatchName is "<fleet>-<class>-dispatch", shortened to AWS's 64 characters when needed.
func dispatchName(fleet, class string) string {
	base := fleet + "-" + class
	if len(base)+len(dispatchSuffix) > awsNameMax {
		base = base[:awsNameMax-len(dispatchSuffix)]
	}
	return base + dispatchSuffix
}
