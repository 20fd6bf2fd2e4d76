// Package terraform generates the fleet's Terraform configuration (terraform/*.tf) from the IR:
// the bus and its rules, the per-class queues, alarms, IAM roles and runtimes, the state
// plane, the Step Functions state machines and the schema registry.
//
// The output is plain resources (no modules), one file per concern and one per agent class,
// written directly in canonical layout (hcl.go; literals escaped by hclwrite), so that
// `terraform fmt -check` passes byte for byte without a formatting pass. It reads sibling
// artifacts through path.module: ../statemachines/<wf>.asl.json (templatefile with the queue URLs and, for workflows with a
// fan-out, claim_check_bucket for the Distributed Map's ResultWriter),
// ../schemas/<detail-type>.json and ../runtime/<class>.json. The root module has one input,
// variable "alarm_actions" (variables.tf, copied from templates/), notified by every alarm.
//
// One design choice goes beyond a literal translation: a FIFO class's rule delivers to a
// standard ingress queue and an EventBridge Pipe forwards each event into the FIFO queue with
// MessageGroupId read from detail.<group_by>, because a rule target can only set a static
// group id, which would serialise the whole class onto one lane.
//
// Diagnostic codes (Codes has the full explanation of each):
//
//	TF000 error    no fleet to generate
//	TF002 error    two spec names map to one Terraform address
//	TF003 warning  more than 10 FIFO ingress queues: no redrive allow policy on the delivery DLQ
//	TF004 error    a class's event pattern cannot be rendered as HCL
//	TF005 warning  a lambda/agentcore image is not in Amazon ECR
//	TF006 error    queue visibility shorter than the Lambda function timeout
//	TF007 warning  AgentCore runtime instances have no Terraform resource yet
//	TF008 error    a Lambda function's environment exceeds Lambda's 4 KB limit
//	TF009 warning  step.max over one day: the stall canary is clamped to 24 hours
//
// TF001 was never emitted and is not used.
package terraform

import (
	"io/fs"
	"maps"
	"slices"

	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fleetc/fleetc/templates"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

// Provider version constraints. 5.100 is the oldest release whose schema fleetc is checked
// against (terraform validate with the mirrored 5.100.0 build); every attribute emitted also
// exists in the 6.x schema. aws_bedrockagentcore_agent_runtime first shipped in 6.18.0
// (provider milestone v6.18.0), so a fleet with an agentcore class needs 6.x.
const (
	ConstraintDefault   = ">= 5.100, < 7.0"
	ConstraintAgentCore = ">= 6.18, < 7.0"
)

// Code documents one diagnostic code this package emits.
type Code = diag.Code

// Codes lists every diagnostic code Generate can emit, sorted by ID.
func Codes() []Code {
	return []Code{
		{ID: "TF000", Severity: diag.Error, Summary: "no fleet to generate",
			Explain: "The Terraform backend was called without a fleet (a nil IR). fleetc never does this after a successful load; a caller embedding compiler/terraform must pass the lowered fleet."},
		{ID: "TF002", Severity: diag.Error, Summary: "two spec names map to one Terraform address",
			Explain: "Terraform local names are the spec names with '-' and '.' turned into '_', plus suffixes such as _dlq, _worker or _ingress. Two different names can therefore land on the same address " +
				"(class researcher-dlq's queue and class researcher's DLQ; events a.b and a-b), and Terraform would refuse the duplicate. Rename one of the two; the message names both spec paths."},
		{ID: "TF003", Severity: diag.Warning, Summary: "more than 10 FIFO ingress queues: the delivery DLQ gets no redrive allow policy",
			Explain: "Each FIFO class receives its events through a standard ingress queue whose dead letters go to the fleet's delivery DLQ, and an SQS redrive allow policy names at most 10 source queues. " +
				"With more FIFO classes the policy is left out, so any queue may dead-letter into the delivery DLQ. Reduce the FIFO classes or split the fleet."},
		{ID: "TF004", Severity: diag.Error, Summary: "a class's event pattern cannot be rendered",
			Explain: "The EventBridge rule's event pattern (consumes.event plus consumes.match) holds a value with no JSON form, such as NaN or an infinite number, so no aws_cloudwatch_event_rule can be written. Use plain strings, numbers and booleans in match values."},
		{ID: "TF005", Severity: diag.Warning, Summary: "a lambda or agentcore image is not in Amazon ECR",
			Explain: "Lambda container functions and AgentCore runtimes pull images only from Amazon ECR (<account>.dkr.ecr.<region>.amazonaws.com/<repo>). An image elsewhere (ghcr.io, Docker Hub) is refused at apply time, " +
				"and fleetc cannot scope the worker role's ECR pull permission. Push fleet-worker to ECR and set worker.image or the class image."},
		{ID: "TF006", Severity: diag.Error, Summary: "queue visibility is shorter than the Lambda function timeout",
			Explain: "Lambda refuses an SQS event source mapping whose queue visibility timeout is below the function timeout: a message could reappear while its invocation still runs. AWS advises a visibility of six times the function timeout, " +
				"which fleetc uses by default. Raise queue.visibility or lower step.max (the function timeout)."},
		{ID: "TF007", Severity: diag.Warning, Summary: "AgentCore runtime instances have no Terraform resource yet",
			Explain: "agentcore.instances asks for a provisioned AgentCore runtime instance, which the AWS provider cannot create yet (hashicorp/terraform-provider-aws#49352). fleetc generates the microVM runtime (8 h sessions) instead; " +
				"create the instance outside Terraform until the provider supports it."},
		{ID: "TF008", Severity: diag.Error, Summary: "a Lambda function's environment exceeds 4 KB",
			Explain: "Lambda refuses a function whose variables together exceed 4 KB (measured as the JSON object of names and values). Runtime configs and the async tools' definitions do not ride in the environment: " +
				"each is an S3 object in the claim-check bucket (config/...), and the function keeps one variable naming it and its SHA-256 (FLEET_CONFIG_S3, FLEET_TOOLS_S3) next to its queue URLs. " +
				"What remains is names and references, so this fires only if names grow past the limit; shorten the queue, bucket or class names."},
		{ID: "TF009", Severity: diag.Warning, Summary: "step.max is over one day: the stall canary watches only 24 hours",
			Explain: "The stall canary alarms when a class's queue holds messages but no message was deleted for max(10 minutes, step.max) in one-minute periods. CloudWatch evaluates at most one day " +
				"(period x evaluation_periods <= 86400 s), so for longer steps the window is clamped to 24 hours and a single legitimate step can raise a false stall alarm. Split such steps into shorter ones."},
	}
}

// Dir is where the configuration lives under the output root.
const Dir = "terraform"

// Owners of generated blocks (artifact.Resource.Part): a class, a workflow or an event by
// name, or a plane of the fleet.
const (
	PartClass    = "class "    // + class name
	PartWorkflow = "workflow " // + workflow name
	PartEvent    = "event "    // + detail-type
	PartEvents   = "events"    // the schema registry
	PartBus      = "bus"
	PartState    = "state"
	PartEKS      = "eks" // the KEDA scaler role every eks class's scaler assumes
	PartProvider = "provider"
	// PartMonitoring owns monitoring.tf: the fleet's dashboard and its alarm topic.
	PartMonitoring = "monitoring"
)

// Generate renders the fleet's Terraform configuration. configs holds each class's rendered
// runtime config by class name (Terraform uploads the file as the function's config object;
// Generate only hashes and measures it).
func Generate(f *ir.Fleet, configs map[string][]byte) ([]artifact.File, diag.Diagnostics) {
	files, _, ds := GenerateModule(f, configs)
	return files, ds
}

// GenerateModule is Generate, and the module it wrote: the inventory of every resource and
// data block (its address, type, owning spec part, spec path and file), and every resource,
// data and output block with its attributes as written.
func GenerateModule(f *ir.Fleet, configs map[string][]byte) ([]artifact.File, artifact.Module, diag.Diagnostics) {
	g := &gen{f: f, configs: configs, names: map[string]string{}}
	if f == nil {
		g.ds.Errorf("TF000", "", "no fleet to generate")
		return nil, artifact.Module{}, g.ds
	}
	if f.HasEKS() && f.Worker.EKS == nil {
		g.ds.Errorf("TF000", "/worker", "eks classes need worker.eks (rule W008): without a cluster their pods would get no credentials")
		return nil, artifact.Module{}, g.ds
	}
	g.versions()
	g.bus()
	g.state()
	g.agents()
	g.kedaScaler()
	g.tools()
	g.workflows()
	g.rollout()
	g.schedules()
	g.schemas()
	g.monitoring()
	g.outputs()

	var out []artifact.File
	for _, fl := range g.files {
		if fl.n > 0 {
			out = append(out, artifact.File{Path: Dir + "/" + fl.name})
		}
	}
	// Files are independent, so render them on every core. Each result lands at its own index.
	blocks := render(out, g.files)
	static, err := fs.Glob(templates.Terraform, "terraform/*.tf")
	if err != nil {
		g.ds.Errorf("TF000", "", "internal error: %v", err)
	}
	for _, p := range static {
		b, _ := templates.Terraform.ReadFile(p)
		out = append(out, artifact.File{Path: p, Bytes: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if f.Index != nil {
		f.Index.Locate(g.ds)
	}
	return out, artifact.Module{Inventory: g.inventory(), Blocks: blocks}, g.ds.Sorted()
}

// inventory lists every block written, with the spec path it was claimed for (more precise
// than its owner's: a class's queue is at /agents/<class>/queue).
func (g *gen) inventory() []artifact.Resource {
	var inv []artifact.Resource
	for _, fl := range g.files {
		for _, r := range fl.blocks {
			if p := g.names[r.Address]; p != "" {
				r.Path = p
			}
			inv = append(inv, r)
		}
	}
	sort.Slice(inv, func(i, j int) bool { return inv[i].Address < inv[j].Address })
	return inv
}

type gen struct {
	f       *ir.Fleet
	configs map[string][]byte // rendered runtime configs by class (sizes the config reference)
	ds      diag.Diagnostics
	files   []*file
	names   map[string]string // "type.local" -> spec path that claimed it
}

func (g *gen) file(name string) *file {
	fl := newFile(name)
	g.files = append(g.files, fl)
	return fl
}

// claim records a resource/data address and reports a collision: two spec names that map to
// one Terraform local name (researcher-dlq's queue vs researcher's DLQ, a.b vs a-b events).
func (g *gen) claim(kind, name, path string) string {
	key := kind + "." + name
	if prev, ok := g.names[key]; ok {
		// On both spec locations: either name is the one to change.
		for _, p := range []string{prev, path} {
			d := g.ds.Errorf("TF002", p, "Terraform address %s would be generated twice: for %s and for %s", key, specName(prev), specName(path))
			d.Detail = "Two spec names map to the same Terraform local name ('-' and '.' become '_', and suffixes like _dlq are added); rename one."
		}
		return name
	}
	g.names[key] = path
	return name
}

// specName is a spec path as a message names it: events.a.b for /events/a.b.
func specName(path string) string {
	return strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", ".")
}

// usesAgentCore reports whether any class runs on AgentCore.
func (g *gen) usesAgentCore() bool {
	for _, a := range g.f.Agents {
		if a.AgentCore != nil {
			return true
		}
	}
	return false
}

// Constraint is the aws provider version constraint the fleet's configuration needs.
func Constraint(f *ir.Fleet) string {
	g := &gen{f: f}
	if g.usesAgentCore() {
		return ConstraintAgentCore
	}
	return ConstraintDefault
}

// Common expressions.
func accountID() tokens { return ref("data", "aws_caller_identity", "current", "account_id") }
func partition() tokens { return ref("data", "aws_partition", "current", "partition") }

func (g *gen) versions() {
	fl := g.file("versions.tf").owner(PartProvider, "")
	tf := fl.top("terraform", nil)
	tf.set("required_version", str(">= 1.5"))
	rp := tf.nested("required_providers")
	rp.set("aws", object(kv{"source", str("hashicorp/aws")}, kv{"version", str(Constraint(g.f))}))
	if g.usesAgentCore() {
		tf.comment("aws_bedrockagentcore_agent_runtime needs provider 6.18 or later.")
	}

	p := fl.top("provider", []string{"aws"})
	p.set("region", str(g.f.Region))
	tags := map[string]string{}
	for _, t := range g.f.Tags {
		tags[t.Key] = t.Value
	}
	tags["fleet"] = g.f.Name
	tags["managed_by"] = "fleetc"
	keys := slices.Sorted(maps.Keys(tags))
	attrs := make([]kv, len(keys))
	for i, k := range keys {
		attrs[i] = kv{k, str(tags[k])}
	}
	p.nested("default_tags").set("tags", object(attrs...))

	fl.data("aws_caller_identity", "current")
	fl.data("aws_partition", "current")
}

func (g *gen) outputs() {
	fl := g.file("outputs.tf")
	out := func(name, desc string, v tokens) {
		o := fl.top("output", []string{name})
		o.set("description", str(desc))
		o.set("value", v)
	}
	out("bus_name", "EventBridge bus the fleet publishes to.", ref("aws_cloudwatch_event_bus", "fleet", "name"))
	out("bus_arn", "EventBridge bus ARN.", ref("aws_cloudwatch_event_bus", "fleet", "arn"))
	out("delivery_dlq_url", "Queue of events EventBridge could not deliver to a class queue.", ref("aws_sqs_queue", "delivery_dlq", "url"))

	byClass := func(attr func(a *ir.Agent) tokens) tokens {
		var kvs []kv
		for _, a := range g.f.Agents {
			if t := attr(a); t != nil {
				kvs = append(kvs, kv{a.Name, t})
			}
		}
		return object(kvs...)
	}
	out("queue_urls", "Work queue URL per agent class.", byClass(func(a *ir.Agent) tokens { return ref("aws_sqs_queue", local(a.Name), "url") }))
	out("dlq_urls", "Dead-letter queue URL per agent class.", byClass(func(a *ir.Agent) tokens { return ref("aws_sqs_queue", local(a.Name)+"_dlq", "url") }))
	out("worker_role_arns", "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role).",
		byClass(func(a *ir.Agent) tokens { return ref("aws_iam_role", local(a.Name)+"_worker", "arn") }))
	out("lambda_function_names", "Function name per lambda class.", byClass(func(a *ir.Agent) tokens {
		if a.Lambda == nil {
			return nil
		}
		return ref("aws_lambda_function", local(a.Name), "function_name")
	}))
	out("agentcore_runtime_arns", "AgentCore runtime ARN per agentcore class.", byClass(func(a *ir.Agent) tokens {
		if a.AgentCore == nil {
			return nil
		}
		return ref("aws_bedrockagentcore_agent_runtime", local(a.Name), "agent_runtime_arn")
	}))
	var sms []kv
	for _, w := range g.f.Workflows {
		sms = append(sms, kv{w.Name, ref("aws_sfn_state_machine", local(w.Name), "arn")})
	}
	out("state_machine_arns", "State machine ARN per workflow.", object(sms...))
	if ws := rolloutWorkflows(g.f); len(ws) > 0 {
		var aliases []kv
		for _, w := range ws {
			aliases = append(aliases, kv{w.Name, ref("aws_sfn_alias", local(w.Name), "arn")})
		}
		out(OutputStateMachineAliases, "Alias "+ir.LiveAlias+" per workflow with a rollout: start executions here.", object(aliases...))
	}
	if cs := g.f.RolloutLambdas(); len(cs) > 0 {
		groups, versions, live := make([]kv, 0, len(cs)), make([]kv, 0, len(cs)), make([]kv, 0, len(cs))
		for _, a := range cs {
			groups = append(groups, kv{a.Name, ref("aws_codedeploy_deployment_group", local(a.Name), "deployment_group_name")})
			versions = append(versions, kv{a.Name, ref("aws_lambda_function", local(a.Name), "version")})
			live = append(live, kv{a.Name, ref("aws_lambda_alias", local(a.Name), "function_version")})
		}
		out(OutputCodeDeployApp, "CodeDeploy application whose deployments move the lambda classes' alias "+ir.LiveAlias+".", ref("aws_codedeploy_app", codeDeployLocal, "name"))
		out(OutputDeploymentGroups, "CodeDeploy deployment group per lambda class with a rollout.", object(groups...))
		out(OutputPublishedVersions, "The version the last apply published per lambda class with a rollout: a deployment's TargetVersion.", object(versions...))
		out(OutputLiveVersions, "The version alias "+ir.LiveAlias+" runs per lambda class with a rollout (as last read): a deployment's CurrentVersion.", object(live...))
	}
	if g.f.KEDAScaler() != nil {
		out("keda_scaler_role_arn", "Role the KEDA operator assumes to read the eks queues' depth (every TriggerAuthentication names it).",
			ref("aws_iam_role", "keda_scaler", "arn"))
	}
	out("idempotency_table", "DynamoDB idempotency table.", ref("aws_dynamodb_table", "idempotency", "name"))
	if g.f.State.JobsTable != "" {
		out("jobs_table", "DynamoDB table of async tool jobs.", ref("aws_dynamodb_table", "jobs", "name"))
	}
	if g.f.Tools != nil && g.f.State.JobsTable != "" {
		out("tools_function_name", "Lambda function serving the async tools (Bedrock Agents action group, AgentCore Gateway target).", ref("aws_lambda_function", "async_tools", "function_name"))
		out("tools_function_arn", "ARN of the async tools function.", ref("aws_lambda_function", "async_tools", "arn"))
		out("tools_function_url", "Function URL (AWS_IAM) of the async tools: HTTP+JSON under /tools/, MCP at /mcp.", ref("aws_lambda_function_url", "async_tools", "function_url"))
		out("tools_role_arn", "Role of the async tools function: request events and job items only.", ref("aws_iam_role", "async_tools", "arn"))
		out("tools_invoke_policy_arn", "Attach to an AgentCore Gateway execution role or a function URL caller.", ref("aws_iam_policy", "async_tools_invoke", "arn"))
	}
	out("claim_check_bucket", "S3 bucket for claim-check payloads.", ref("aws_s3_bucket", "claimcheck", "bucket"))
	if len(g.f.Events) > 0 {
		out("schema_registry", "EventBridge Schema Registry holding the event contracts.", ref("aws_schemas_registry", "fleet", "name"))
	}
}

// seconds is d rounded up to whole seconds, as a number.
func seconds(d time.Duration) tokens { return num(ir.Seconds(d)) }

// pathModule is "${path.module}/<rel>".
// A "../<file>" path is a generated file the expression reads (see call).
func pathModule(rel string) tokens {
	t := tmpl(interp(ref("path", "module")), lit("/"+rel))
	if file, ok := strings.CutPrefix(rel, "../"); ok {
		// The literal runs from after the interpolation to the closing quote.
		t.spans = append(t.spans, span{kind: pathSpan, text: file, start: len(`"${path.module}`), end: len(t.text) - 1})
	}
	return t
}

func sortedStrings(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// agents generates every class's file. Classes are independent, so each gets its own
// generator on a worker goroutine; the results are merged in class order, and the merge is
// where a Terraform address claimed twice (TF002) is caught.
func (g *gen) agents() {
	subs := make([]*gen, len(g.f.Agents))
	parallel(len(subs), func(i int) {
		subs[i] = &gen{f: g.f, configs: g.configs, names: map[string]string{}}
		subs[i].agent(g.f.Agents[i])
	})
	for _, sub := range subs {
		g.files = append(g.files, sub.files...)
		g.ds = append(g.ds, sub.ds...)
		keys := slices.Sorted(maps.Keys(sub.names))
		for _, k := range keys {
			kind, name, _ := strings.Cut(k, ".")
			g.claim(kind, name, sub.names[k])
		}
	}
}

// parallel runs fn(0..n-1) on every core.
func parallel(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// render fills out[i].Bytes from the non-empty files, in parallel.
func render(out []artifact.File, files []*file) []artifact.Block {
	var nonEmpty []*file
	for _, fl := range files {
		if fl.n > 0 {
			nonEmpty = append(nonEmpty, fl)
		}
	}
	blocks := make([][]artifact.Block, len(nonEmpty))
	parallel(len(nonEmpty), func(i int) { out[i].Bytes, blocks[i] = nonEmpty[i].bytes() })
	// The module lists blocks in file then source order, as the files are sorted.
	order := make([]int, len(nonEmpty))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return out[order[a]].Path < out[order[b]].Path })
	var all []artifact.Block
	for _, i := range order {
		all = append(all, blocks[i]...)
	}
	return all
}
