package terraform

import (
	"encoding/json"
	"fmt"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/schemas/contract"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/jobs"
)

// Alarm and runtime constants, each with the reason it has this value.
const (
	// stallWindow is the seed's stall canary: zero completions while messages wait, for 10 minutes.
	stallWindow = 10 * time.Minute
	// maxAlarmWindow: CloudWatch requires period x evaluation_periods <= 1 day.
	maxAlarmWindow = awslimits.CloudWatchMaxAlarmWindow
	// lambdaEnvLimit is Lambda's cap on all environment variables together (4 KB).
	lambdaEnvLimit = awslimits.LambdaEnvBytes
	// esmUnbatchedMax: above 10 messages per batch Lambda requires a batching window of >= 1 s.
	esmUnbatchedMax = awslimits.ESMUnwindowedMaxBatch
	// ageAlarmFloor: SQS publishes metrics once a minute; a tighter threshold only measures jitter.
	ageAlarmFloor = time.Minute
	// logRetentionDays keeps worker and state machine logs a month.
	logRetentionDays = 30
	// lambdaMaxConcurrency is the ESM scaling_config ceiling (2..1000).
	lambdaMaxConcurrency = awslimits.ESMMaxConcurrency
	// agentCoreDefaultLifetime is AgentCore's own default maxLifetime (8 h microVM lifecycle).
	agentCoreDefaultLifetime = awslimits.AgentCoreMaxLifetime
	// agentCoreIdleTimeout is AgentCore's default idle stop (15 min).
	agentCoreIdleTimeout = awslimits.AgentCoreIdleTimeout
)

func (g *gen) agent(a *ir.Agent) {
	fl := g.file("agent_"+a.Name+".tf").owner(PartClass+a.Name, a.Path)
	n := local(a.Name)
	g.queues(fl, a, n)
	if a.Rule != nil {
		g.routing(fl, a, n)
	}
	g.alarms(fl, a, n)
	g.workerRole(fl, a, n)
	switch {
	case a.Lambda != nil:
		g.lambda(fl, a, n)
	case a.AgentCore != nil:
		g.agentCore(fl, a, n)
	case a.K8s != nil:
		g.podIdentity(fl, a, n)
	}
}

// podIdentity gives an eks class's pods their worker role: EKS Pod Identity hands the role's
// credentials to pods running as the class's service account on the fleet's cluster.
func (g *gen) podIdentity(fl *file, a *ir.Agent, n string) {
	e := g.f.Worker.EKS
	g.claim("aws_eks_pod_identity_association", n+"_worker", a.Path)
	r := fl.resource("aws_eks_pod_identity_association", n+"_worker",
		fmt.Sprintf("eks: the workers run as Deployment %s/%s (k8s/%s/), scaled by KEDA on the queue;", a.K8s.Namespace, a.K8s.Deployment, a.Name),
		fmt.Sprintf("pods of ServiceAccount %s get the worker role (one association per service account per cluster).", a.K8s.ServiceAccount))
	r.set("cluster_name", str(e.Cluster))
	r.set("namespace", str(a.K8s.Namespace))
	r.set("service_account", str(a.K8s.ServiceAccount))
	r.set("role_arn", ref("aws_iam_role", n+"_worker", "arn"))
}

// podIdentityTrust lets EKS Pod Identity assume an eks class's role (with session tags) for
// the class's service account on the fleet's cluster only: the tags EKS sets on the session
// are the conditions, so no other association in the account can use the role.
func podIdentityTrust(e *ir.EKS, k *ir.K8s) []stmt {
	// aws:SourceAccount: the association assuming the role is this account's; the session
	// tags then name the cluster, namespace and service account.
	trust := serviceTrust("pods.eks.amazonaws.com", true, nil, "sts:AssumeRole", "sts:TagSession")
	trust[0].conditions = append(trust[0].conditions, []condition{
		{"StringEquals", "aws:RequestTag/eks-cluster-name", []tokens{str(e.Cluster)}},
		{"StringEquals", "aws:RequestTag/kubernetes-namespace", []tokens{str(k.Namespace)}},
		{"StringEquals", "aws:RequestTag/kubernetes-service-account", []tokens{str(k.ServiceAccount)}},
	}...)
	return trust
}

// queues emits the class queue, its DLQ and the DLQ's redrive allow policy.
func (g *gen) queues(fl *file, a *ir.Agent, n string) {
	q, d := a.Queue, a.DLQ
	defer fl.element("")
	fl.element(artifact.ElementDLQ)
	g.claim("aws_sqs_queue", n+"_dlq", d.Path)
	dl := fl.resource("aws_sqs_queue", n+"_dlq", "Dead letters of "+a.Name+"; retention outlives the source queue so triage never races expiry.")
	dl.set("name", str(d.Name))
	if d.FIFO {
		// The worker dead-letters by SendMessage too; content-based dedup spares it a dedup id.
		dl.set("fifo_queue", boolean(true))
		dl.set("content_based_deduplication", boolean(true))
	}
	dl.set("message_retention_seconds", seconds(d.Retention))
	dl.set("visibility_timeout_seconds", seconds(d.Visibility))
	g.encryptQueue(dl)

	fl.element(artifact.ElementQueue)
	g.claim("aws_sqs_queue", n, q.Path)
	qr := fl.resource("aws_sqs_queue", n)
	qr.set("name", str(q.Name))
	if q.FIFO {
		qr.set("fifo_queue", boolean(true))
		qr.set("content_based_deduplication", boolean(true))
		if a.HighThroughput {
			qr.set("deduplication_scope", str("messageGroup"))
			qr.set("fifo_throughput_limit", str("perMessageGroupId"))
		}
	}
	qr.set("message_retention_seconds", seconds(q.Retention))
	qr.set("visibility_timeout_seconds", seconds(q.Visibility))
	qr.set("receive_wait_time_seconds", seconds(q.LongPoll))
	qr.set("delay_seconds", seconds(q.Delay))
	g.encryptQueue(qr)
	qr.set("redrive_policy", call("jsonencode", object(
		kv{"deadLetterTargetArn", ref("aws_sqs_queue", n+"_dlq", "arn")},
		kv{"maxReceiveCount", num(int64(q.MaxReceives))},
	)))

	// A separate resource, not the DLQ's own attribute: the queue references the DLQ, so the
	// DLQ naming the queue inline would be a cycle. (kumo omits RedriveAllowPolicy from
	// GetQueueAttributes, so applying this to the emulator waits forever; AWS is fine.)
	fl.element(artifact.ElementDLQ)
	g.claim("aws_sqs_queue_redrive_allow_policy", n+"_dlq", d.Path)
	ra := fl.resource("aws_sqs_queue_redrive_allow_policy", n+"_dlq", "Only "+q.Name+" may dead-letter into "+d.Name+".")
	ra.set("queue_url", ref("aws_sqs_queue", n+"_dlq", "url"))
	ra.set("redrive_allow_policy", call("jsonencode", object(
		kv{"redrivePermission", str("byQueue")},
		kv{"sourceQueueArns", list(ref("aws_sqs_queue", n, "arn"))},
	)))
}

// routing emits the rule, its target and the queue policy that lets the rule deliver. A FIFO
// class gets an ingress hop: an EventBridge rule target can only stamp a static
// MessageGroupId on a FIFO queue (SqsParameters.MessageGroupId is a constant), which would
// serialise the whole class behind one group. So the rule delivers to a standard ingress
// queue and an EventBridge Pipe moves each event into the FIFO queue with
// MessageGroupId = $.body.detail.<group_by> (Pipes evaluate dynamic paths on parsed SQS bodies).
func (g *gen) routing(fl *file, a *ir.Agent, n string) {
	rule := a.Rule
	pattern, err := value(rule.Pattern)
	if err != nil {
		g.ds.Errorf("TF004", a.Path+"/consumes", "event pattern of %s cannot be rendered: %v", a.Name, err)
		return
	}
	fl.element(artifact.ElementRule)
	g.claim("aws_cloudwatch_event_rule", n, a.Path)
	r := fl.resource("aws_cloudwatch_event_rule", n)
	fl.element("")
	r.set("name", str(rule.Name))
	r.set("description", str(fmt.Sprintf("Routes %s to the %s queue.", a.Consumes.Event.DetailType, a.Name)))
	r.set("event_bus_name", ref("aws_cloudwatch_event_bus", "fleet", "name"))
	r.set("event_pattern", call("jsonencode", pattern))

	target := n
	if a.FIFO {
		target = n + "_ingress"
		g.ingress(fl, a, n)
	}

	fl.element(artifact.ElementRule)
	g.claim("aws_cloudwatch_event_target", n, a.Delivery.Path)
	t := fl.resource("aws_cloudwatch_event_target", n,
		"Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.")
	fl.element("")
	t.set("rule", ref("aws_cloudwatch_event_rule", n, "name"))
	t.set("event_bus_name", ref("aws_cloudwatch_event_bus", "fleet", "name"))
	t.set("target_id", str(rule.TargetID))
	t.set("arn", ref("aws_sqs_queue", target, "arn"))
	rp := t.nested("retry_policy")
	rp.set("maximum_retry_attempts", num(int64(a.Delivery.Attempts)))
	rp.set("maximum_event_age_in_seconds", seconds(a.Delivery.MaxAge))
	t.nested("dead_letter_config").set("arn", ref("aws_sqs_queue", "delivery_dlq", "arn"))

	doc := g.policyDoc(fl, target+"_queue", a.Path, []stmt{{
		sid: "RuleDelivery", actions: []string{"sqs:SendMessage"},
		resources:  []tokens{ref("aws_sqs_queue", target, "arn")},
		principal:  &principal{typ: "Service", ids: []string{"events.amazonaws.com"}},
		conditions: []condition{{"ArnEquals", "aws:SourceArn", []tokens{ref("aws_cloudwatch_event_rule", n, "arn")}}},
	}}, "Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.")
	g.claim("aws_sqs_queue_policy", target, a.Path)
	p := fl.resource("aws_sqs_queue_policy", target)
	p.set("queue_url", ref("aws_sqs_queue", target, "url"))
	p.set("policy", doc)

	g.claim("aws_cloudwatch_metric_alarm", n+"_dlq_delivery_failed", a.Path)
	al := fl.resource("aws_cloudwatch_metric_alarm", n+"_dlq_delivery_failed")
	al.set("alarm_name", str(rule.Name+"-dlq-delivery-failed"))
	al.set("alarm_description", str("EventBridge could not dead-letter events of rule "+rule.Name+": they are being dropped. Check the delivery DLQ policy."))
	al.set("namespace", str("AWS/Events"))
	al.set("metric_name", str("InvocationsFailedToBeSentToDLQ"))
	al.set("dimensions", object(kv{"EventBusName", str(g.f.Bus.Name)}, kv{"RuleName", str(rule.Name)}))
	al.set("statistic", str("Sum"))
	al.set("period", num(60))
	al.set("evaluation_periods", num(1))
	al.set("comparison_operator", str("GreaterThanThreshold"))
	al.set("threshold", num(0))
	al.set("treat_missing_data", str("notBreaching"))
	g.alarmNotify(al)
}

// ingress emits a FIFO class's standard ingress queue and the pipe into the FIFO queue.
func (g *gen) ingress(fl *file, a *ir.Agent, n string) {
	q := a.Queue
	name := a.IngressQueueName()
	g.claim("aws_sqs_queue", n+"_ingress", q.Path)
	fl.element(artifact.ElementQueue)
	r := fl.resource("aws_sqs_queue", n+"_ingress",
		"A rule target can stamp only one static MessageGroupId on a FIFO queue, which would serialise",
		"the whole class: the rule delivers to this standard queue, and the pipe below sets the group per event.")
	fl.element("")
	r.set("name", str(name))
	r.set("message_retention_seconds", seconds(q.Retention))
	r.set("visibility_timeout_seconds", num(60))
	r.set("receive_wait_time_seconds", seconds(ir.DefaultLongPoll))
	g.encryptQueue(r)
	r.set("redrive_policy", call("jsonencode", object(
		kv{"deadLetterTargetArn", ref("aws_sqs_queue", "delivery_dlq", "arn")},
		kv{"maxReceiveCount", num(int64(q.MaxReceives))},
	)))

	roleName := g.f.Name + "-" + a.Name + "-pipe" // shorter than the worker role name IR bounds to 64
	g.role(fl, n+"_pipe", roleName, a.Path,
		serviceTrust("pipes.amazonaws.com", true, []tokens{g.serviceARN("pipes", "pipe/"+a.Rule.Name)}, "sts:AssumeRole"),
		[]stmt{
			{sid: "ReadIngress", actions: []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"},
				resources: []tokens{ref("aws_sqs_queue", n+"_ingress", "arn")}},
			{sid: "SendToClassQueue", actions: []string{"sqs:SendMessage"},
				resources: []tokens{ref("aws_sqs_queue", n, "arn")}},
		})

	group := str(a.Name)
	if a.GroupBy != "" {
		group = str("$.body.detail." + a.GroupBy)
	}
	g.claim("aws_pipes_pipe", n, a.Path)
	p := fl.resource("aws_pipes_pipe", n,
		"Per-group FIFO lanes: the group is read from each event, and the EventBridge event id",
		"deduplicates redeliveries within SQS's 5-minute window.")
	p.set("name", str(a.Rule.Name))
	p.set("role_arn", ref("aws_iam_role", n+"_pipe", "arn"))
	p.set("source", ref("aws_sqs_queue", n+"_ingress", "arn"))
	p.set("target", ref("aws_sqs_queue", n, "arn"))
	sp := p.nested("source_parameters").nested("sqs_queue_parameters")
	sp.set("batch_size", num(10))
	sp.set("maximum_batching_window_in_seconds", num(0))
	tp := p.nested("target_parameters")
	tp.set("input_template", str("<$.body>"))
	sq := tp.nested("sqs_queue_parameters")
	sq.set("message_group_id", group)
	sq.set("message_deduplication_id", str("$.body.id"))
	p.set("depends_on", list(ref("aws_iam_role_policy", n+"_pipe")))
}

// alarms emits the queue age, DLQ depth and stall canary alarms.
func (g *gen) alarms(fl *file, a *ir.Agent, n string) {
	q := a.Queue
	// A healthy message is gone within one worst-case step plus a queue wait of two typical
	// steps; older than that, workers are not keeping pace (the seed's leading indicator).
	ageThreshold := a.StepMax + 2*a.StepP95
	if ageThreshold < ageAlarmFloor {
		ageThreshold = ageAlarmFloor
	}
	g.claim("aws_cloudwatch_metric_alarm", n+"_age", a.Path)
	age := fl.resource("aws_cloudwatch_metric_alarm", n+"_age")
	age.set("alarm_name", str(ageAlarm(q)))
	age.set("alarm_description", str(fmt.Sprintf(
		"Oldest %s message is older than step max + 2 x step p95 (%ds) for 5 minutes: workers are not keeping pace.",
		a.Name, ir.Seconds(ageThreshold))))
	age.set("namespace", str("AWS/SQS"))
	age.set("metric_name", str("ApproximateAgeOfOldestMessage"))
	age.set("dimensions", queueDims(q))
	age.set("statistic", str("Maximum"))
	age.set("period", num(60))
	age.set("evaluation_periods", num(5))
	age.set("datapoints_to_alarm", num(5))
	age.set("comparison_operator", str("GreaterThanThreshold"))
	age.set("threshold", seconds(ageThreshold))
	age.set("treat_missing_data", str("notBreaching"))
	g.alarmNotify(age)

	g.depthAlarm(fl, n+"_dlq", a.DLQ.Name, a.DLQ.Path,
		fmt.Sprintf("%s dead-lettered a message after %d receives. Triage, fix, then redrive with StartMessageMoveTask.", a.Name, q.MaxReceives))

	// Stall canary. The window is the seed's 10 minutes, stretched to one worst-case step when
	// a single step may legitimately run longer (no completion is then not yet a stall).
	periods := stallPeriods(a.StepMax)
	if time.Duration(periods)*time.Minute < a.StepMax {
		d := g.ds.Warnf("TF009", a.Path+"/step/max", "%s: step.max %s is longer than one day; the stall canary watches only the last 24 hours", a.Name, a.StepMax)
		d.Detail = "CloudWatch alarms evaluate at most one day (period x evaluation_periods <= 86400 s), so a class whose steps may run longer can raise a false stall alarm. Split such steps, or silence the alarm."
	}
	g.claim("aws_cloudwatch_metric_alarm", n+"_stalled", a.Path)
	st := fl.resource("aws_cloudwatch_metric_alarm", n+"_stalled")
	st.set("alarm_name", str(stallAlarm(q)))
	st.set("alarm_description", str(fmt.Sprintf(
		"Stall canary: %s deleted no message for %d minutes while messages were waiting.", a.Name, periods)))
	st.set("comparison_operator", str("GreaterThanOrEqualToThreshold"))
	st.set("threshold", num(1))
	st.set("evaluation_periods", num(int64(periods)))
	st.set("datapoints_to_alarm", num(int64(periods)))
	st.set("treat_missing_data", str("notBreaching"))
	g.alarmNotify(st)
	metric := func(id, name, stat string) {
		mq := st.nested("metric_query")
		mq.set("id", str(id))
		m := mq.nested("metric")
		m.set("namespace", str("AWS/SQS"))
		m.set("metric_name", str(name))
		m.set("dimensions", queueDims(q))
		m.set("period", num(60))
		m.set("stat", str(stat))
	}
	metric("visible", "ApproximateNumberOfMessagesVisible", "Maximum")
	metric("deleted", "NumberOfMessagesDeleted", "Sum")
	e := st.nested("metric_query")
	e.set("id", str("stalled"))
	e.set("expression", str("IF(visible > 0 AND deleted == 0, 1, 0)"))
	e.set("label", str("waiting messages and zero completions"))
	e.set("return_data", boolean(true))
}

// stallPeriods is the stall canary's window in one-minute periods: the seed's 10 minutes or
// step.max rounded up to whole minutes, whichever is longer, and at most one day (1440).
func stallPeriods(stepMax time.Duration) int64 {
	window := max(stallWindow, stepMax)
	window = min(window, maxAlarmWindow)
	return int64((window + time.Minute - 1) / time.Minute)
}

// alarmNotify routes an alarm's ALARM and OK transitions to var.alarm_actions (variables.tf)
// and to the alarms.notify topic when the spec names one.
func (g *gen) alarmNotify(alarm block) {
	actions := ref("var", "alarm_actions")
	if t := g.f.Alarms.Notify; t != nil {
		topic := str(t.ARN)
		if t.Create {
			topic = ref("aws_sns_topic", "alarms", "arn")
		}
		actions = call("concat", list(topic), actions)
	}
	alarm.set("alarm_actions", actions)
	alarm.set("ok_actions", actions)
}

// claimCheckObjects are the object ARNs under each key prefix of the claim-check bucket.
func claimCheckObjects(prefixes []string) []tokens {
	out := make([]tokens, len(prefixes))
	for i, p := range prefixes {
		out[i] = tmpl(interp(ref("aws_s3_bucket", "claimcheck", "arn")), lit("/"+p+"*"))
	}
	return out
}

// deferOverCap lets a fairness class's poller re-send a message over its key's cap to the
// back of the class's own queue (runtime/queue/fair.go: deferral without a release).
func deferOverCap(n string) stmt {
	return stmt{sid: "DeferOverCapMessages", actions: []string{"sqs:SendMessage"}, resources: []tokens{ref("aws_sqs_queue", n, "arn")}}
}

// workerRole emits the class's worker role: exactly the calls fleet-worker makes, on exactly
// this class's resources.
func (g *gen) workerRole(fl *file, a *ir.Agent, n string) {
	st := []stmt{
		{sid: "ConsumeClassQueue", actions: []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"},
			resources: []tokens{ref("aws_sqs_queue", n, "arn")}},
		{sid: "DeadLetterOwnMessages", actions: []string{"sqs:SendMessage", "sqs:GetQueueUrl"},
			resources: []tokens{ref("aws_sqs_queue", n+"_dlq", "arn")}},
		{sid: "IdempotencyClaims", actions: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
			resources: []tokens{ref("aws_dynamodb_table", "idempotency", "arn")}, conditions: g.notApprovals()},
		// Reads follow payload references only where this class may find them: producers'
		// inputs for what it consumes, the outputs of the classes whose events it consumes, its
		// workflows' fan-out results (ir.ClaimCheckReadPrefixes, which fleet-worker checks too); writes stay under
		// this class's own prefix, where fleet-worker puts every output it offloads
		// (runtime/claimcheck.OutputKey).
		{sid: "ReadClaimCheckPayloads", actions: []string{"s3:GetObject"},
			resources: claimCheckObjects(ir.ClaimCheckReadPrefixes(a))},
		{sid: "WriteOwnClaimCheckOutputs", actions: []string{"s3:PutObject"},
			resources: []tokens{tmpl(interp(ref("aws_s3_bucket", "claimcheck", "arn")), lit("/"+ir.ClaimCheckOutputPrefix(a)+"*"))}},
	}
	if len(ir.ClaimCheckReadPrefixes(a)) == 0 { // consumes nothing that could carry a payload_ref
		st = slices.DeleteFunc(st, func(s stmt) bool { return s.sid == "ReadClaimCheckPayloads" })
	}
	if a.AgentCore != nil {
		// AgentCore invokes the worker per step; its dispatcher function receives, deletes and
		// dead-letters the queue's messages with its own role. The worker touches no queue.
		st = slices.DeleteFunc(st, func(s stmt) bool { return s.sid == "ConsumeClassQueue" || s.sid == "DeadLetterOwnMessages" })
	}
	if a.Fairness != nil && a.AgentCore == nil {
		st = append(st, deferOverCap(n))
	}
	if len(a.Emits) > 0 {
		// Only the events the class declares: a worker cannot impersonate another producer.
		st = append(st, stmt{sid: "PublishCompletionEvents", actions: []string{"events:PutEvents"},
			resources:  []tokens{ref("aws_cloudwatch_event_bus", "fleet", "arn")},
			conditions: emitConditions(a.Emits)})
	}
	// Task tokens come only from the workflows that reach the class through its queue; a
	// synchronous invoke (Express) answers with the function's response instead.
	var sms []tokens
	for _, w := range a.Workflows {
		queued, invoked := splitDispatch(w)
		if !slices.Contains(queued, a) {
			continue
		}
		// A Distributed Map child runs as stateMachine:<name>/<label>: its task tokens are
		// authorised against that ARN, hence "<arn>/*" next to the machine itself.
		if slices.Contains(invoked, a) {
			// The machine's role invokes this function, which depends on this policy:
			// spell the ARN out from the name, or Terraform sees a cycle.
			named := func(suffix string) tokens {
				return tmpl(lit("arn:"), interp(partition()), lit(":states:"+g.f.Region+":"), interp(accountID()), lit(":stateMachine:"+w.StateMachineName+suffix))
			}
			sms = append(sms, named(""), named("/*"))
			continue
		}
		arn := ref("aws_sfn_state_machine", local(w.Name), "arn")
		sms = append(sms, arn, tmpl(interp(arn), lit("/*")))
	}
	if len(sms) > 0 {
		st = append(st, stmt{sid: "TaskTokenCallbacks", actions: []string{"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"},
			resources: sms})
	}
	if a.Model != nil {
		// Converse authorises as bedrock:InvokeModel, ConverseStream as ...WithResponseStream.
		invoke := []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
		mg := g.modelResources(a.Models...)
		if len(mg.direct) > 0 {
			st = append(st, stmt{sid: "InvokeRoutedModels", actions: invoke, resources: mg.direct})
		}
		if len(mg.routed) > 0 {
			st = append(st, stmt{sid: "InvokeModelsThroughProfiles", actions: invoke, resources: mg.routed,
				conditions: []condition{{"ArnEquals", "bedrock:InferenceProfileArn", mg.profiles}}})
		}
	}
	st = append(st, g.modelKeyReads(a)...)
	if a.Tool != nil && a.Tool.Async && g.f.State.JobsTable != "" {
		// UpdateItem only: the worker moves existing jobs (RUNNING, SUCCEEDED, FAILED). Creating
		// and reading jobs is the tools role's (tools.go), so the two roles share no action.
		st = append(st, stmt{sid: "JobStatus", actions: []string{"dynamodb:UpdateItem"},
			resources:  []tokens{ref("aws_dynamodb_table", "jobs", "arn")},
			conditions: []condition{leadingKeys(jobs.KeyPrefix)}})
	}
	if named := g.f.AsyncToolClasses(a); len(named) > 0 && g.f.State.JobsTable != "" {
		// The llm handler runs the async tools it names in-process, as class:<this class>:
		// the agent side of those classes only, its job items and its job list held to its own keys.
		as := jobs.ClassPrincipal(a.Name)
		st = append(st, agentSide(named, jobs.JobKeyPrefix(as), jobs.OwnerKeyPrefix(as))...)
	}

	var trust []stmt
	switch {
	case a.Lambda != nil:
		// Lambda sets neither aws:SourceArn nor aws:SourceAccount when it assumes an execution role.
		trust = serviceTrust("lambda.amazonaws.com", false, nil, "sts:AssumeRole")
		// AWSLambdaBasicExecutionRole, narrowed to the function's own log group.
		st = append(st, stmt{sid: "WriteFunctionLogs", actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
			resources: []tokens{tmpl(interp(ref("aws_cloudwatch_log_group", n, "arn")), lit(":*"))}},
			readConfig(a.ConfigPath))
	case a.AgentCore != nil:
		// AgentCore names the runtime (an id AWS assigns) as the source: this account's, in the fleet's region.
		trust = serviceTrust("bedrock-agentcore.amazonaws.com", true, []tokens{g.serviceARN("bedrock-agentcore", "*")}, "sts:AssumeRole")
		if repo := ecrRepository(a.Image); repo != "" {
			st = append(st,
				stmt{sid: "PullWorkerImage", actions: []string{"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"}, resources: []tokens{str(repo)}},
				stmt{sid: "AuthenticateToECR", actions: []string{"ecr:GetAuthorizationToken"}, resources: []tokens{str("*")}})
		}
		st = append(st, readConfig(a.ConfigPath), stmt{sid: "WriteRuntimeLogs", actions: []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"},
			resources: []tokens{tmpl(lit("arn:"), interp(partition()), lit(":logs:"+g.f.Region+":"), interp(accountID()),
				lit(":log-group:/aws/bedrock-agentcore/runtimes/*"))}})
	default:
		trust = podIdentityTrust(g.f.Worker.EKS, a.K8s)
	}
	g.role(fl, n+"_worker", a.RoleName, a.Path, trust, st, "fleet-worker role of "+a.Name+" ("+a.Runtime+").")
}

// workerEnv is the environment every non-EKS worker gets: the reference to its runtime
// config's object (configObject: Lambda caps all variables at 4 KB, so the config itself
// stays out) and the queue URLs, which spares a GetQueueUrl call.
func workerEnv(n string, cfgRef tokens, extra ...kv) tokens {
	attrs := []kv{
		{contract.EnvConfigS3, cfgRef},
		{contract.EnvDLQURL, ref("aws_sqs_queue", n+"_dlq", "url")},
	}
	attrs = append(attrs, extra...)
	attrs = append(attrs, kv{contract.EnvQueueURL, ref("aws_sqs_queue", n, "url")})
	return object(attrs...)
}

// workerConfig emits a non-EKS class's config object and returns the variable's value.
func (g *gen) workerConfig(fl *file, a *ir.Agent, n, path string) tokens {
	return g.configObject(fl, configObjectName(n), path, a.ConfigPath)
}

func (g *gen) lambda(fl *file, a *ir.Agent, n string) {
	l := a.Lambda
	if ecrRepository(a.Image) == "" {
		d := g.ds.Warnf("TF005", a.Path, "lambda class %s uses image %q, which is not in Amazon ECR", a.Name, a.Image)
		d.Detail = "Lambda pulls container images only from ECR; push fleet-worker there and set worker.image or the class image."
	}
	// A class without a rendered config has its G001 already; there is nothing to measure.
	if cfg, ok := g.configs[a.Name]; ok {
		g.checkLambdaEnv(a, cfg)
	}
	if l.Timeout > a.Queue.Visibility {
		d := g.ds.Errorf("TF006", a.Queue.Path, "%s: queue visibility %ds is shorter than the function timeout %ds", a.Name, ir.Seconds(a.Queue.Visibility), ir.Seconds(l.Timeout))
		d.Detail = "Lambda refuses an SQS event source whose visibility timeout is below the function timeout; AWS advises six times the timeout."
	}
	g.claim("aws_cloudwatch_log_group", n, l.Path)
	lg := fl.resource("aws_cloudwatch_log_group", n)
	lg.set("name", str("/aws/lambda/"+l.FunctionName))
	lg.set("retention_in_days", num(logRetentionDays))
	g.encryptLogs(lg)

	g.claim("aws_lambda_function", n, l.Path)
	fn := fl.resource("aws_lambda_function", n)
	fn.set("function_name", str(l.FunctionName))
	if a.Description != "" {
		fn.set("description", str(a.Description))
	}
	fn.set("role", ref("aws_iam_role", n+"_worker", "arn"))
	fn.set("package_type", str("Image"))
	fn.set("image_uri", str(a.Image))
	fn.set("timeout", seconds(l.Timeout))
	fn.set("memory_size", num(int64(l.Memory)))
	fn.nested("image_config").set("command", strs("--mode", "lambda"))
	fn.nested("environment").set("variables", workerEnv(n, g.workerConfig(fl, a, n, l.Path)))
	if a.Rollout != nil {
		// Every change is a new version; the live alias and CodeDeploy decide when it runs.
		fn.set("publish", boolean(true))
	}
	fn.set("depends_on", list(ref("aws_cloudwatch_log_group", n), ref("aws_iam_role_policy", n+"_worker")))
	if a.Rollout != nil {
		g.liveAlias(fl, a, n)
		g.liveErrorsAlarm(fl, a, n)
		g.deploymentGroup(fl, a, n)
	}

	g.claim("aws_lambda_event_source_mapping", n, l.Path)
	esm := fl.resource("aws_lambda_event_source_mapping", n,
		"Partial batch responses: only failed messages return to the queue, not the whole batch.")
	esm.set("event_source_arn", ref("aws_sqs_queue", n, "arn"))
	esm.set("function_name", functionTarget(a))
	esm.set("batch_size", num(int64(l.BatchSize)))
	window := l.BatchingWindow
	if l.BatchSize > esmUnbatchedMax && window < time.Second {
		// Lambda refuses a batch size above 10 without a batching window of at least 1 s.
		window = time.Second
	}
	esm.set("maximum_batching_window_in_seconds", seconds(window))
	esm.set("function_response_types", strs("ReportBatchItemFailures"))
	if p := l.Pollers; p != nil {
		// Provisioned mode: dedicated pollers (the seed's heuristic sizes min). AWS does not
		// combine it with scaling_config's maximum concurrency.
		pc := esm.nested("provisioned_poller_config")
		pc.set("minimum_pollers", num(int64(p.Min)))
		pc.set("maximum_pollers", num(int64(p.Max)))
		return
	}
	if mx := a.Scaling.Max; mx >= 2 {
		if mx > lambdaMaxConcurrency {
			mx = lambdaMaxConcurrency
		}
		esm.nested("scaling_config").set("maximum_concurrency", num(int64(mx)))
	}
}

// checkLambdaEnv reports TF008 when the function's variables would exceed Lambda's 4 KB.
func (g *gen) checkLambdaEnv(a *ir.Agent, cfg []byte) {
	g.checkEnv(a.Path, a.Name+": the Lambda environment", g.lambdaEnv(a, cfg))
}

// lambdaEnv is workerEnv as Lambda sees it, for sizing: the config reference as Terraform
// renders it for cfg, and the queue URLs as AWS forms them (12-digit account id).
func (g *gen) lambdaEnv(a *ir.Agent, cfg []byte) map[string]string {
	host := "https://sqs." + g.f.Region + ".amazonaws.com"
	if strings.HasPrefix(g.f.Region, "cn-") {
		host += ".cn"
	}
	url := func(q ir.Queue) string { return host + "/" + sizingAccount + "/" + q.Name }
	return map[string]string{
		contract.EnvConfigS3: g.configRef(a.ConfigPath, cfg),
		contract.EnvDLQURL:   url(a.DLQ),
		contract.EnvQueueURL: url(a.Queue),
	}
}

// checkEnv reports TF008 when a function's variables exceed Lambda's 4 KB. Generated configs
// travel as S3 objects, so what remains is names and references, far below the limit; the
// check holds whatever else comes to be put in an environment.
func (g *gen) checkEnv(path, what string, env map[string]string) {
	if size := envSize(env); size > lambdaEnvLimit {
		d := g.ds.Errorf("TF008", path, "%s is %d bytes, over Lambda's 4 KB limit (%d bytes)", what, size, lambdaEnvLimit)
		d.Detail = "Lambda refuses a function whose variables together exceed 4 KB. Shorten the values named in the environment (queue, bucket and class names)."
	}
}

// envSize is the size Lambda measures for env, the JSON object of every name and value
// ("String measured: {...}" in its error), as Terraform's jsonencode renders it: <>& escaped
// (the config reference's "&" among them), an upper bound of Lambda's measure.
func envSize(env map[string]string) int {
	b, _ := json.Marshal(env) // a map of strings always encodes; keys sorted
	return len(b)
}

func (g *gen) agentCore(fl *file, a *ir.Agent, n string) {
	ac := a.AgentCore
	if ecrRepository(a.Image) == "" {
		d := g.ds.Warnf("TF005", a.Path, "agentcore class %s uses image %q, which is not in Amazon ECR", a.Name, a.Image)
		d.Detail = "AgentCore Runtime runs container images from ECR only; push fleet-worker there and set the class image."
	}
	if ac.Instances {
		d := g.ds.Warnf("TF007", ac.Path+"/instances", "%s: AgentCore runtime instances have no Terraform resource yet; a microVM runtime (8 h sessions) is generated", a.Name)
		d.Detail = "Track hashicorp/terraform-provider-aws#49352; until then create the instance outside Terraform."
	}
	g.claim("aws_bedrockagentcore_agent_runtime", n, ac.Path)
	r := fl.resource("aws_bedrockagentcore_agent_runtime", n)
	r.set("agent_runtime_name", str(ac.RuntimeName))
	if a.Description != "" {
		r.set("description", str(a.Description))
	}
	r.set("role_arn", ref("aws_iam_role", n+"_worker", "arn"))
	// The container's command cannot be set on AgentCore; FLEET_MODE selects --mode agentcore.
	cfgRef := g.workerConfig(fl, a, n, ac.Path)
	r.set("environment_variables", workerEnv(n, cfgRef, kv{contract.EnvMode, str("agentcore")}))
	if life := ac.Session; life > 0 && life != agentCoreDefaultLifetime {
		if life > agentCoreDefaultLifetime {
			life = agentCoreDefaultLifetime
		}
		r.set("lifecycle_configuration", list(object(
			kv{"idle_runtime_session_timeout", seconds(agentCoreIdleTimeout)},
			kv{"max_lifetime", seconds(life)},
		)))
	}
	r.nested("agent_runtime_artifact").nested("container_configuration").set("container_uri", str(a.Image))
	r.nested("network_configuration").set("network_mode", str("PUBLIC"))
	r.nested("protocol_configuration").set("server_protocol", str("HTTP"))
	r.nested("request_header_configuration").set("request_header_allowlist", strs(dispatchHeaders...))
	r.set("depends_on", list(ref("aws_iam_role_policy", n+"_worker")))
	g.dispatcher(fl, a, n, cfgRef)
}

// kedaScaler emits the role the fleet's KEDA scalers read queue depth with. Every
// TriggerAuthentication names it (podIdentity.roleArn); the cluster's KEDA operator assumes it
// with its own identity, which the trust names. One role per fleet, trusted by the shared
// operator, lets any number of fleets scale on one cluster without editing the operator's role.
// The trust allows sts:TagSession too: an operator running on EKS Pod Identity carries the
// session tags EKS set, which are transitive, into every AssumeRole it makes.
// The manifests carry the role's ARN, so plan refuses an account or partition other than the
// one that ARN names.
func (g *gen) kedaScaler() {
	e := g.f.KEDAScaler()
	if e == nil {
		return
	}
	fl := g.file("keda.tf").owner(PartEKS, "/worker/eks")
	var queues []tokens
	for _, a := range g.f.Agents {
		if a.K8s != nil {
			queues = append(queues, ref("aws_sqs_queue", local(a.Name), "arn"))
		}
	}
	trust := []stmt{{sid: "KEDAOperator", actions: []string{"sts:AssumeRole", "sts:TagSession"}, principal: &principal{typ: "AWS", ids: []string{e.KEDAOperatorRole}}}}
	depth := []stmt{{sid: "ReadQueueDepth", actions: []string{"sqs:GetQueueAttributes"}, resources: queues}}
	r := g.role(fl, "keda_scaler", e.ScalerRole, e.Path, trust, depth,
		"Assumed by the KEDA operator ("+e.KEDAOperatorRole+") for the aws-sqs-queue scalers of the eks classes;",
		"k8s/*/triggerauthentication.yaml names it by ARN.")
	pre := r.nested("lifecycle").nested("precondition")
	pre.set("condition", equal(
		tmpl(lit("arn:"), interp(partition()), lit(":iam::"), interp(accountID()), lit(":role/"+e.ScalerRole)),
		str(e.ScalerRoleARN)))
	pre.set("error_message", str("The TriggerAuthentications name "+e.ScalerRoleARN+
		" (account of worker.eks.keda_operator_role); apply this configuration in that account, or correct keda_operator_role and rebuild."))
}

// emitConditions limits PutEvents to the sources and detail-types of the given events.
func emitConditions(events []*ir.Event) []condition {
	sources, types := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		sources[e.Source] = true
		types[e.DetailType] = true
	}
	vals := func(m map[string]bool) []tokens {
		keys := slices.Sorted(maps.Keys(m))
		out := make([]tokens, len(keys))
		for i, k := range keys {
			out[i] = str(k)
		}
		return out
	}
	return []condition{
		{"StringEquals", "events:detail-type", vals(types)},
		{"StringEquals", "events:source", vals(sources)},
	}
}

// notApprovals keeps a worker role off the approval records in the idempotency table (their
// partition keys start with ir.ApprovalKeyPrefix): they hold task tokens, and the classes of
// a workflow may answer its tokens (SendTaskSuccess), so a worker that could read them could
// approve its own workflow. Nil for a fleet without approval steps.
func (g *gen) notApprovals() []condition {
	if !g.f.HasApprovals() {
		return nil
	}
	return []condition{{"ForAllValues:StringNotLike", "dynamodb:LeadingKeys", []tokens{str(ir.ApprovalKeyPrefix + "*")}}}
}
