package deploy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// OverrideFile is the Terraform override file `--endpoint` writes next to the generated
// configuration. Terraform merges *_override.tf files into the blocks they name, so the
// generated files stay byte for byte what AWS gets; `fleetc build` never writes it, and a
// plan without --endpoint removes it.
const OverrideFile = "fleetc_emulator_override.tf"

// Gap is one thing a local AWS emulator (kumo) lacks and how the override works around it.
// Drop, or any of Set, Blocks and IgnoreChanges, says what the override does to each matching resource.
type Gap struct {
	ID       string // stable name, used in tests and the printed list
	Resource string // the resource type it concerns
	// Match narrows the resources of that type (nil: all of them).
	Match func(b *artifact.Block) bool
	// Emulator is what the emulator does, Workaround what fleetc writes instead.
	Emulator, Workaround string
	Drop                 bool // count = 0: the resource (and what refers to it) is left out
	// StandIn, with Drop, keeps what refers to the left-out resource: its references go to the
	// resource of this type with the same name instead (an alias's callers call the function).
	StandIn string
	// StandInAttrs renames the attributes the stand-in spells differently (an alias's
	// function_version is its function's version).
	StandInAttrs  map[string]string
	Set           map[string]cty.Value // attributes overridden (null = provider default)
	Blocks        map[string]map[string]cty.Value
	IgnoreChanges []string // lifecycle ignore_changes: drift the emulator reports that AWS would not
	// Definition: the override's definition reads a copy of the generated state machine
	// rewritten by EmulatorDefinition (written beside the override, in Override.Files).
	Definition bool
}

// KumoGaps are the differences between kumo v0.33.1 and AWS that stop `terraform apply` of a
// generated fleet, one entry per gap. Each has a test (emulator_test.go) that the generated
// configuration for AWS is unchanged and that the override does exactly this.
var KumoGaps = []Gap{
	{
		ID: "sqs-managed-sse", Resource: "aws_sqs_queue",
		Emulator:   "GetQueueAttributes never returns SqsManagedSseEnabled, so the provider waits 3 minutes per queue and fails",
		Workaround: "sqs_managed_sse_enabled left unset (queues are unencrypted on the emulator)",
		Set:        map[string]cty.Value{"sqs_managed_sse_enabled": cty.NullVal(cty.Bool)},
	},
	{
		ID: "sqs-redrive-allow-policy", Resource: "aws_sqs_queue_redrive_allow_policy",
		Emulator:   "GetQueueAttributes never returns RedriveAllowPolicy, so the provider waits forever",
		Workaround: "left out: any queue may dead-letter into the DLQs on the emulator",
		Drop:       true,
	},
	{
		ID: "cloudwatch-alarms", Resource: "aws_cloudwatch_metric_alarm",
		Emulator: "TagResource answers a body the SDK cannot parse (a tagged alarm fails to create); dimensions, " +
			"treat_missing_data and datapoints_to_alarm are not read back (every plan drifts); metric math answers 400",
		Workaround: "left out: no alarms on the emulator",
		Drop:       true,
	},
	{
		ID: "cloudwatch-log-metric-filter", Resource: "aws_cloudwatch_log_metric_filter",
		Emulator:   "no PutMetricFilter (UnrecognizedClientException: not valid for this web service)",
		Workaround: "left out: an async tool's failed-jobs metric (and its alarm, already left out) is not counted on the emulator",
		Drop:       true,
	},
	{
		ID: "schema-registry", Resource: "aws_schemas_registry",
		Emulator:   "no EventBridge Schemas service (CreateRegistry answers 404)",
		Workaround: "left out with its schemas: the event contracts are not published on the emulator",
		Drop:       true,
	},
	{
		ID: "dynamodb-pitr", Resource: "aws_dynamodb_table",
		Emulator:   "UpdateContinuousBackups is an unknown operation",
		Workaround: "point-in-time recovery off on the emulator",
		Blocks:     map[string]map[string]cty.Value{"point_in_time_recovery": {"enabled": cty.False}},
	},
	{
		ID: "dynamodb-sse", Resource: "aws_dynamodb_table",
		Emulator:      "DescribeTable returns no SSEDescription, so every plan wants to enable server-side encryption",
		Workaround:    "changes to server_side_encryption ignored",
		IgnoreChanges: []string{"server_side_encryption"},
	},
	{
		ID: "eventbridge-bus-tags", Resource: "aws_cloudwatch_event_bus",
		Emulator:      "CreateEventBus drops the tags (default_tags), so every plan wants to tag the bus again",
		Workaround:    "changes to the bus's tags ignored",
		IgnoreChanges: []string{"tags", "tags_all"},
	},
	{
		ID: "sfn-update", Resource: "aws_sfn_state_machine",
		Emulator:      "no UpdateStateMachine (400 InvalidAction), so any change to a workflow, or to a queue it sends to, fails the apply",
		Workaround:    "changes to the definition, role and logging ignored: a changed workflow keeps its first definition until destroyed",
		IgnoreChanges: []string{"definition", "role_arn", "logging_configuration", "tracing_configuration"},
	},
	{
		ID: "sfn-asl", Resource: "aws_sfn_state_machine",
		Emulator: "Step Functions resolves no intrinsic function (States.Format) and, in a Task's Parameters, no context-object " +
			"field but $$.Task.Token: every execution fails at its first agent step",
		Workaround: "the definition is a copy (fleetc_emulator_<workflow>.asl.json) where execution_id is the task token, " +
			"state a constant, entered_time dropped and States.Format('…', $.x, …) is $.x; tasks for a FIFO class go to its " +
			"ingress queue (kumo drops MessageGroupId, which a FIFO queue requires)",
		Definition: true,
	},
	{
		ID: "s3-lifecycle", Resource: "aws_s3_bucket_lifecycle_configuration",
		Emulator:   "the lifecycle rule is accepted but never reads back, so the provider waits 3 minutes and fails",
		Workaround: "left out: claim-check payloads do not expire on the emulator",
		Drop:       true,
	},
	{
		ID: "iam-managed-policy", Resource: "aws_iam_policy",
		Emulator:   "no GetPolicyVersion, so the provider cannot read a managed policy back",
		Workaround: "left out: the async tools' start/status policies do not exist on the emulator",
		Drop:       true,
	},
	{
		ID: "eks-pod-identity", Resource: "aws_eks_pod_identity_association",
		Emulator:   "its EKS serves clusters and node groups only: no Pod Identity association API",
		Workaround: "left out: no pods run on the emulator; fleet-worker takes its credentials from the environment",
		Drop:       true,
	},
	{
		ID: "cloudwatch-dashboard", Resource: "aws_cloudwatch_dashboard",
		Emulator:   "no PutDashboard (UnknownAction)",
		Workaround: "left out: no dashboard on the emulator",
		Drop:       true,
	},
	{
		ID: "eventbridge-archive", Resource: "aws_cloudwatch_event_archive",
		Emulator:   "no CreateArchive (400 InvalidAction)",
		Workaround: "left out: the bus keeps no archive to replay on the emulator",
		Drop:       true,
	},
	{
		ID: "lambda-image", Resource: "aws_lambda_function",
		Emulator:      "GetFunction returns no ImageUri and no ImageConfigResponse, so every plan wants to set the image and its command again",
		Workaround:    "changes to image_uri and image_config ignored (no function runs on the emulator: fleetc dev runs it under the Lambda Runtime Interface Emulator)",
		IgnoreChanges: []string{"image_uri", "image_config"},
	},
	{
		ID: "lambda-event-source-mapping", Resource: "aws_lambda_event_source_mapping",
		Emulator:      "the mapping reads back without FunctionResponseTypes, ScalingConfig and tags, so every plan wants to set them again; it moves no message",
		Workaround:    "changes to function_response_types, scaling_config and tags ignored (fleetc dev runs its own mapping into the function under the Lambda Runtime Interface Emulator)",
		IgnoreChanges: []string{"function_response_types", "scaling_config", "tags", "tags_all"},
	},
	oneAccount("kumo-account", KumoAccount),
	{
		ID: "codedeploy", Resource: "aws_codedeploy_app",
		Emulator:   "no CodeDeploy service (UnknownService)",
		Workaround: "left out with its deployment groups: the lambda classes' live aliases never shift on the emulator",
		Drop:       true,
	},
	{
		ID: "codedeploy-config", Resource: "aws_codedeploy_deployment_config",
		Emulator:   "no CodeDeploy service (UnknownService)",
		Workaround: "left out: no deployment on the emulator shifts traffic",
		Drop:       true,
	},
	{
		ID: "lambda-versions", Resource: "aws_lambda_function", Match: hasAttr("publish"),
		Emulator:   "PublishVersion answers 400 InvalidRequest and CreateFunction publishes nothing (the version is always $LATEST)",
		Workaround: "publish left unset: the function runs $LATEST on the emulator",
		Set:        map[string]cty.Value{"publish": cty.NullVal(cty.Bool)},
	},
	{
		ID: "lambda-alias", Resource: "aws_lambda_alias",
		Emulator:   "CreateAlias and GetAlias answer 400 InvalidRequest: no Lambda aliases",
		Workaround: "left out: the event source mapping and workflows call the function itself ($LATEST)",
		Drop:       true, StandIn: "aws_lambda_function", StandInAttrs: map[string]string{"function_version": "version"},
	},
	{
		ID: "sfn-versions", Resource: "aws_sfn_state_machine", Match: hasAttr("publish"),
		Emulator:   "CreateStateMachine ignores publish: no state machine versions",
		Workaround: "publish left unset: executions run the state machine's latest revision",
		Set:        map[string]cty.Value{"publish": cty.NullVal(cty.Bool)},
	},
	{
		ID: "sfn-alias", Resource: "aws_sfn_alias",
		Emulator:   "no CreateStateMachineAlias (400 InvalidAction)",
		Workaround: "left out: what names the alias (state_machine_alias_arns) names the state machine itself",
		Drop:       true, StandIn: "aws_sfn_state_machine",
	},
	{
		ID: "pipes", Resource: "aws_pipes_pipe",
		Emulator:   "a pipe is created but never moves messages",
		Workaround: "left out: FIFO classes receive nothing through their ingress queue on the emulator",
		Drop:       true,
	},
}

// KumoAccount is the one account kumo serves; it is in every ARN kumo makes.
const KumoAccount = "000000000000"

// oneAccount is the gap of an emulator that serves one account only.
func oneAccount(id, account string) Gap {
	return Gap{
		ID: id, Resource: "aws_iam_role", Match: preconditionAccountIsNot(account),
		Emulator: "one account, " + account + ": a role whose precondition names the role ARN in another account " +
			"(the KEDA scaler role, in worker.eks.keda_operator_role's account) fails the plan, and Terraform cannot override a precondition",
		Workaround: "left out: no KEDA operator runs on the emulator to assume it",
		Drop:       true,
	}
}

// preconditionAccountIsNot matches a resource with a lifecycle precondition comparing the
// caller's role ARN with a literal "arn:…:iam::ACCOUNT:…" of an account other than account.
func preconditionAccountIsNot(account string) func(*artifact.Block) bool {
	return func(b *artifact.Block) bool {
		for _, a := range b.Attrs {
			if !preconditionPath.MatchString(a.Path) {
				continue
			}
			i := strings.LastIndex(a.Src, " == ")
			if i < 0 {
				continue
			}
			v, ok := stringLiteral(a.Src[i+len(" == "):])
			if !ok {
				continue
			}
			parts := strings.Split(v, ":")
			if len(parts) >= 5 && parts[0] == "arn" && parts[2] == "iam" && parts[4] != account {
				return true
			}
		}
		return false
	}
}

// hasAttr matches a resource that sets attribute name.
func hasAttr(name string) func(*artifact.Block) bool {
	return func(b *artifact.Block) bool {
		_, ok := b.Attr(name)
		return ok
	}
}

// preconditionPath is the condition of a precondition block in the lifecycle block.
var preconditionPath = regexp.MustCompile(`^lifecycle\.\d+\.precondition\.\d+\.condition$`)

// stringLiteral is the value of a quoted string without interpolation ("arn:aws:iam::1:x");
// false for anything else (a number, null, a reference, a template). The generator escapes
// literals as Go does for the characters a literal can hold (\", \\, \n, \uNNNN).
func stringLiteral(src string) (string, bool) {
	if len(src) < 2 || src[0] != '"' || src[len(src)-1] != '"' || strings.Contains(src, "${") || strings.Contains(src, "%{") {
		return "", false
	}
	v, err := strconv.Unquote(src)
	return v, err == nil
}

// queueURLRef is a queue URL reference in a definition's template variables.
var queueURLRef = regexp.MustCompile(`\baws_sqs_queue\.([A-Za-z0-9_-]+)\.url\b`)

// viaIngress points a definition's FIFO class queues at their standard ingress queues: kumo's
// Step Functions drops MessageGroupId, which a FIFO queue requires, so a task sent there
// directly fails. Through the ingress queue, a task reaches the class as events do: by the
// class's pipe, which kumo does not run either (gap pipes; `fleetc dev` runs a stand-in).
func viaIngress(expr string, mod *module) string {
	has := map[string]bool{}
	for _, r := range mod.resources {
		if r.Type == "aws_sqs_queue" && r.Kind == artifact.KindResource {
			has[r.Name] = true
		}
	}
	return queueURLRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := queueURLRef.FindStringSubmatch(ref)[1]
		if has[name+"_ingress"] {
			return "aws_sqs_queue." + name + "_ingress.url"
		}
		return ref
	})
}

// Services maps every resource and data source type fleetc generates to the provider
// endpoint keys of the services the provider calls for it: its own, and those it calls
// implicitly (a DynamoDB table's encryption is read back through KMS: against moto, the
// provider asked real KMS and the apply hung 9 minutes). Empty: computed without a call.
// A generated type missing here is an error under --endpoint (unless a gap drops it), so a
// new resource type cannot quietly reach AWS from an emulator run.
var Services = map[string][]string{
	"aws_bedrockagentcore_agent_runtime":                 {"bedrockagentcore"},
	"aws_caller_identity":                                {"sts"},
	"aws_cloudwatch_dashboard":                           {"cloudwatch"},
	"aws_codedeploy_app":                                 {"codedeploy"},
	"aws_codedeploy_deployment_config":                   {"codedeploy"},
	"aws_codedeploy_deployment_group":                    {"codedeploy"},
	"aws_cloudwatch_event_archive":                       {"events"},
	"aws_cloudwatch_event_bus":                           {"events"},
	"aws_cloudwatch_event_rule":                          {"events"},
	"aws_cloudwatch_event_target":                        {"events"},
	"aws_cloudwatch_log_group":                           {"logs", "kms"},
	"aws_cloudwatch_log_metric_filter":                   {"logs"},
	"aws_cloudwatch_metric_alarm":                        {"cloudwatch"},
	"aws_dynamodb_table":                                 {"dynamodb", "kms"},
	"aws_eks_pod_identity_association":                   {"eks"},
	"aws_iam_policy":                                     {"iam"},
	"aws_iam_policy_document":                            nil,
	"aws_iam_role":                                       {"iam"},
	"aws_iam_role_policy":                                {"iam"},
	"aws_kms_alias":                                      {"kms"},
	"aws_kms_key":                                        {"kms"},
	"aws_lambda_alias":                                   {"lambda"},
	"aws_lambda_event_source_mapping":                    {"lambda"},
	"aws_lambda_function":                                {"lambda"},
	"aws_lambda_function_url":                            {"lambda"},
	"aws_lambda_permission":                              {"lambda"},
	"aws_partition":                                      nil,
	"aws_pipes_pipe":                                     {"pipes"},
	"aws_region":                                         nil,
	"aws_s3_bucket":                                      {"s3"},
	"aws_s3_bucket_lifecycle_configuration":              {"s3"},
	"aws_s3_bucket_policy":                               {"s3"},
	"aws_s3_bucket_public_access_block":                  {"s3"},
	"aws_s3_bucket_server_side_encryption_configuration": {"s3", "kms"},
	"aws_s3_object":                                      {"s3"},
	"aws_schemas_registry":                               {"schemas"},
	"aws_schemas_schema":                                 {"schemas"},
	"aws_scheduler_schedule":                             {"scheduler"},
	"aws_sfn_alias":                                      {"sfn"},
	"aws_sfn_state_machine":                              {"sfn"},
	"aws_sns_topic":                                      {"sns"},
	"aws_sns_topic_policy":                               {"sns"},
	"aws_sns_topic_subscription":                         {"sns"},
	"aws_sqs_queue":                                      {"sqs", "kms"},
	"aws_sqs_queue_policy":                               {"sqs"},
	"aws_sqs_queue_redrive_allow_policy":                 {"sqs"},
}

// providerServices are called by the provider itself whatever the configuration holds: STS
// and IAM to learn the account and partition.
var providerServices = []string{"iam", "sts"}

// EmulatorMaxRetries is the provider's max_retries against an emulator (the provider's
// default, 25, backs off for minutes): a call to a service the emulator does not serve
// fails in seconds.
const EmulatorMaxRetries = 2

// emulatorServices returns the endpoint keys the override points at the emulator: those of
// every type in mod that no gap drops, and the provider's own. A type Services does not know
// is an error naming it.
func emulatorServices(mod *module, dropped map[string]string) ([]string, error) {
	keys := map[string]bool{}
	for _, s := range providerServices {
		keys[s] = true
	}
	var unknown []string
	for _, r := range mod.resources {
		if _, gone := dropped[r.addr()]; gone {
			continue
		}
		svcs, ok := Services[r.Type]
		if !ok {
			unknown = append(unknown, r.addr())
			continue
		}
		for _, s := range svcs {
			keys[s] = true
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("deploy: --endpoint: no emulator endpoint is known for %s: add the type to deploy.Services (the provider endpoint keys it calls) or a gap that leaves it out, so no call reaches AWS", strings.Join(unknown, ", "))
	}
	return slices.Sorted(maps.Keys(keys)), nil
}

// Omission is one thing the emulator deployment leaves out or changes, for the printed list.
type Omission struct {
	Gap     string `json:"gap"`
	Address string `json:"address"`
	What    string `json:"what"`
}

// Override is an emulator override file and what it changed.
type Override struct {
	Bytes     []byte
	Omissions []Omission
	Files     []artifact.File // beside the override in the terraform directory (emulator definitions)
	// standIns maps a left-out resource with a stand-in to the stand-in's address, and
	// standInAttrs to the attributes it renames.
	standIns     map[string]string
	standInAttrs map[string]map[string]string
}

// EmulatorFilePrefix starts the name of every file the override needs beside it.
const EmulatorFilePrefix = "fleetc_emulator_"

// EmulatorFiles returns the override and the files beside it that `--endpoint` left in a
// Terraform directory, sorted. While they are there, a plain `terraform apply` in that
// directory targets the emulator: `fleetc build` removes them, `build --check` reports them.
func EmulatorFiles(tfDir string) []string {
	ps, _ := filepath.Glob(filepath.Join(tfDir, EmulatorFilePrefix+"*"))
	sort.Strings(ps)
	return ps
}

// RemoveEmulatorFiles removes what EmulatorFiles finds.
func RemoveEmulatorFiles(tfDir string) error {
	for _, p := range EmulatorFiles(tfDir) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// EmulatorOverride returns the override file for the generated configuration in set (its
// terraform/*.tf files): provider endpoints aimed at endpoint, credential and account checks
// skipped, and every gap applied to the resources it matches. A resource that refers to a left
// out resource is left out too, and an output that does is set to null.
func EmulatorOverride(set *artifact.Set, endpoint string, gaps []Gap) (*Override, error) {
	mod := moduleOf(set)
	o := &Override{}
	edits, dropped := o.selectGaps(mod, gaps)
	svcs, err := emulatorServices(mod, dropped)
	if err != nil {
		return nil, err
	}
	f := hclwrite.NewEmptyFile()
	root := f.Body()
	emulatorProvider(root, endpoint, svcs)

	byAddr := map[string][]gapEdit{}
	for _, e := range edits {
		if _, gone := dropped[e.res.addr()]; !gone {
			byAddr[e.res.addr()] = append(byAddr[e.res.addr()], e)
		}
	}
	for _, r := range mod.resources {
		_, gone := dropped[r.addr()]
		es := byAddr[r.addr()]
		standIn := !gone && r.refersTo(o.standInGaps(dropped)) != ""
		if !gone && len(es) == 0 && !standIn {
			continue
		}
		root.AppendNewline()
		b := root.AppendNewBlock(string(r.Kind), []string{r.Type, r.Name}).Body()
		if standIn {
			if err := r.rewriteStandIns(b, o.standIns, o.standInAttrs); err != nil {
				return nil, err
			}
		}
		if gone {
			b.SetAttributeValue("count", cty.Zero)
			// Terraform checks references even in a resource with no instances.
			if err := r.rewriteRefs(b, dropped); err != nil {
				return nil, err
			}
			continue
		}
		for _, e := range es {
			if err := o.applyGap(b, e, set, mod); err != nil {
				return nil, err
			}
		}
	}
	for _, out := range mod.outputs {
		if ref := out.refersTo(o.standInGaps(dropped)); ref != "" && out.refersTo(o.hardDrops(dropped)) == "" {
			root.AppendNewline()
			b := root.AppendNewBlock("output", []string{out.Name}).Body()
			if err := out.rewriteStandIns(b, o.standIns, o.standInAttrs); err != nil {
				return nil, err
			}
			o.Omissions = append(o.Omissions, Omission{Gap: dropped[ref], Address: out.addr(), What: "names " + o.standIns[ref] + " where it names " + ref})
			continue
		}
		if ref := out.refersTo(dropped); ref != "" {
			root.AppendNewline()
			b := root.AppendNewBlock("output", []string{out.Name}).Body()
			if err := out.rewriteRefs(b, dropped); err != nil {
				return nil, err
			}
			o.Omissions = append(o.Omissions, Omission{Gap: dropped[ref], Address: out.addr(), What: "null where it refers to " + ref})
		}
	}
	sort.SliceStable(o.Omissions, func(i, j int) bool { return o.Omissions[i].Address < o.Omissions[j].Address })
	header := "# Written by fleetc --endpoint for a local AWS emulator; never applied to AWS.\n" +
		"# Terraform merges it into the generated configuration; delete it to target AWS again.\n"
	o.Bytes = append([]byte(header), hclwrite.Format(f.Bytes())...)
	return o, nil
}

// emulatorProvider points the aws provider at endpoint for the services svcs, with the
// checks an emulator cannot answer turned off.
func emulatorProvider(root *hclwrite.Body, endpoint string, svcs []string) {
	prov := root.AppendNewBlock("provider", []string{"aws"}).Body()
	prov.SetAttributeValue("s3_use_path_style", cty.True)
	prov.SetAttributeValue("skip_credentials_validation", cty.True)
	prov.SetAttributeValue("skip_metadata_api_check", cty.True)
	prov.SetAttributeValue("skip_requesting_account_id", cty.True)
	prov.SetAttributeValue("max_retries", cty.NumberIntVal(EmulatorMaxRetries))
	eps := prov.AppendNewBlock("endpoints", nil).Body()
	for _, s := range svcs {
		eps.SetAttributeValue(s, cty.StringVal(endpoint))
	}
}

// gapEdit is one gap's edit of one resource.
type gapEdit struct {
	gap Gap
	res *block
}

// selectGaps matches gaps to mod's resources: the edits to write, and the resources left out
// (address → the gap why), closed over references (whatever refers to a left-out resource
// cannot be planned either). Every one is recorded in o.Omissions.
func (o *Override) selectGaps(mod *module, gaps []Gap) ([]gapEdit, map[string]string) {
	dropped := map[string]string{}
	var edits []gapEdit
	for _, g := range gaps {
		for _, r := range mod.resources {
			if r.Type != g.Resource || (g.Match != nil && !g.Match(r.Block)) {
				continue
			}
			o.Omissions = append(o.Omissions, Omission{Gap: g.ID, Address: r.addr(), What: g.Workaround})
			if g.Drop {
				dropped[r.addr()] = g.ID
				if g.StandIn != "" {
					if o.standIns == nil {
						o.standIns = map[string]string{}
					}
					o.standIns[r.addr()] = g.StandIn + "." + r.Name
					if o.standInAttrs == nil {
						o.standInAttrs = map[string]map[string]string{}
					}
					o.standInAttrs[r.addr()] = g.StandInAttrs
				}
				continue
			}
			edits = append(edits, gapEdit{g, r})
		}
	}
	for changed := true; changed; {
		changed = false
		for _, r := range mod.resources {
			if _, gone := dropped[r.addr()]; gone {
				continue
			}
			if ref := r.refersTo(o.hardDrops(dropped)); ref != "" {
				dropped[r.addr()] = dropped[ref]
				o.Omissions = append(o.Omissions, Omission{Gap: dropped[ref], Address: r.addr(), What: "left out: refers to " + ref})
				changed = true
			}
		}
	}
	for _, r := range mod.resources {
		if _, gone := dropped[r.addr()]; !gone {
			if ref := r.refersTo(o.standInGaps(dropped)); ref != "" {
				o.Omissions = append(o.Omissions, Omission{Gap: dropped[ref], Address: r.addr(), What: "names " + o.standIns[ref] + " where it names " + ref})
			}
		}
	}
	return edits, dropped
}

// hardDrops are the left-out resources without a stand-in: what refers to them is left out too.
func (o *Override) hardDrops(dropped map[string]string) map[string]string {
	out := map[string]string{}
	for a, g := range dropped {
		if _, ok := o.standIns[a]; !ok {
			out[a] = g
		}
	}
	return out
}

// standInGaps are the left-out resources with a stand-in, and their gaps.
func (o *Override) standInGaps(dropped map[string]string) map[string]string {
	out := map[string]string{}
	for a := range o.standIns {
		out[a] = dropped[a]
	}
	return out
}

// applyGap writes one gap's attributes, blocks, rewritten definition and ignore_changes into
// the resource's override block b.
func (o *Override) applyGap(b *hclwrite.Body, e gapEdit, set *artifact.Set, mod *module) error {
	for _, k := range slices.Sorted(maps.Keys(e.gap.Set)) {
		b.SetAttributeValue(k, e.gap.Set[k])
	}
	for _, k := range slices.Sorted(maps.Keys(e.gap.Blocks)) {
		nb := b.AppendNewBlock(k, nil).Body()
		for _, a := range slices.Sorted(maps.Keys(e.gap.Blocks[k])) {
			nb.SetAttributeValue(a, e.gap.Blocks[k][a])
		}
	}
	if e.gap.Definition {
		if err := o.emulatorDefinition(b, e, set, mod); err != nil {
			return err
		}
	}
	if len(e.gap.IgnoreChanges) > 0 {
		b.AppendNewBlock("lifecycle", nil).Body().SetAttributeRaw("ignore_changes", raw("["+strings.Join(e.gap.IgnoreChanges, ", ")+"]"))
	}
	return nil
}

// emulatorDefinition writes the emulator's copy of a state machine's ASL beside the
// configuration (o.Files) and points the resource's definition at it.
func (o *Override) emulatorDefinition(b *hclwrite.Body, e gapEdit, set *artifact.Set, mod *module) error {
	r := e.res
	name := EmulatorFilePrefix + r.Name + ".asl.json"
	src, expr, ok := templatePath(r, "definition", name)
	if !ok {
		return fmt.Errorf("deploy: %s: definition is not templatefile(\"${path.module}/../…\", {…}); gap %s cannot rewrite it", r.addr(), e.gap.ID)
	}
	asl, found := set.Get(src)
	if !found {
		return fmt.Errorf("deploy: %s reads %s, which the build did not write", r.addr(), src)
	}
	def, _, err := EmulatorDefinition(asl)
	if err != nil {
		return err
	}
	o.Files = append(o.Files, artifact.File{Path: name, Bytes: def})
	b.SetAttributeRaw("definition", raw(viaIngress(standInExpr(expr, o.standIns), mod)))
	return nil
}

// raw is an expression's source as the override writes it; the override is formatted as a
// whole once written (hclwrite.Format), which lays out every token alike.
func raw(expr string) hclwrite.Tokens {
	return hclwrite.Tokens{{Bytes: []byte(expr), SpacesBefore: 1}}
}

// module is the generated configuration, as the Terraform backend recorded it.
type module struct {
	resources []*block // resources and data sources, in file then source order
	outputs   []*block
}

type block struct{ *artifact.Block }

func (b *block) addr() string { return b.Address() }

// moduleOf reads the Terraform module recorded in set.
func moduleOf(set *artifact.Set) *module {
	m := &module{}
	for i := range set.Module().Blocks {
		b := &block{&set.Module().Blocks[i]}
		if b.Kind == artifact.KindOutput {
			m.outputs = append(m.outputs, b)
		} else {
			m.resources = append(m.resources, b)
		}
	}
	return m
}

// attrName is an attribute's own name: "depends_on" for "lifecycle.0.depends_on".
func attrName(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }

// refersTo returns the first address in addrs that an expression of b refers to; depends_on
// is not a reference that needs an instance, so it does not count.
func (b *block) refersTo(addrs map[string]string) string {
	var found []string
	for _, a := range b.Attrs {
		if attrName(a.Path) == "depends_on" {
			continue
		}
		for _, t := range a.Refs {
			if ref := traversalAddr(t.Text); ref != "" {
				if _, ok := addrs[ref]; ok {
					found = append(found, ref)
				}
			}
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return found[0]
}

// rewriteRefs writes into b every top-level attribute of r that refers to a dropped resource,
// each such reference X.attr rewritten as one(X[*].attr): valid for a resource with count = 0,
// and null. A reference inside a nested block cannot be overridden alone (an override replaces
// all blocks of that type), so it is an error.
func (r *block) rewriteRefs(b *hclwrite.Body, dropped map[string]string) error {
	var top []artifact.Attr
	for _, a := range r.Attrs {
		nested, _, isNested := strings.Cut(a.Path, ".")
		if !isNested {
			top = append(top, a)
			continue
		}
		if ref := (&block{&artifact.Block{Attrs: []artifact.Attr{a}}}).refersTo(dropped); ref != "" {
			return fmt.Errorf("deploy: %s refers to %s (left out on the emulator) inside a %s block; the emulator override cannot neutralise that", r.addr(), ref, nested)
		}
	}
	slices.SortFunc(top, func(x, y artifact.Attr) int { return strings.Compare(x.Path, y.Path) })
	for _, a := range top {
		if a.Path == "depends_on" {
			continue
		}
		expr, n := a.Src, 0
		for _, t := range slices.Backward(a.Refs) { // from the end, so earlier offsets hold
			ref := traversalAddr(t.Text)
			if _, ok := dropped[ref]; !ok {
				continue
			}
			rest := strings.TrimPrefix(t.Text, ref)
			expr = expr[:t.Start] + "one(" + ref + "[*]" + rest + ")" + expr[t.End:]
			n++
		}
		if n > 0 {
			b.SetAttributeRaw(a.Path, raw(expr))
		}
	}
	return nil
}

// rewriteStandIns writes into b every top-level attribute of r that refers to a left-out
// resource with a stand-in, each reference X.attr rewritten as the stand-in's S.attr. A
// reference inside a nested block cannot be overridden alone, so it is an error.
func (r *block) rewriteStandIns(b *hclwrite.Body, standIns map[string]string, attrs map[string]map[string]string) error {
	addrs := map[string]string{}
	for a := range standIns {
		addrs[a] = ""
	}
	var top []artifact.Attr
	for _, a := range r.Attrs {
		nested, _, isNested := strings.Cut(a.Path, ".")
		single := &block{&artifact.Block{Attrs: []artifact.Attr{a}}}
		if ref := single.refersTo(addrs); ref != "" {
			if isNested {
				return fmt.Errorf("deploy: %s refers to %s (left out on the emulator) inside a %s block; the emulator override cannot point it at %s", r.addr(), ref, nested, standIns[ref])
			}
			top = append(top, a)
		}
	}
	slices.SortFunc(top, func(x, y artifact.Attr) int { return strings.Compare(x.Path, y.Path) })
	for _, a := range top {
		expr := a.Src
		for _, t := range slices.Backward(a.Refs) { // from the end, so earlier offsets hold
			ref := traversalAddr(t.Text)
			if s, ok := standIns[ref]; ok {
				rest := strings.TrimPrefix(t.Text, ref) // ".attr…"
				name, _, _ := strings.Cut(strings.TrimPrefix(rest, "."), ".")
				if to, ok := attrs[ref][name]; ok {
					rest = "." + to + strings.TrimPrefix(rest, "."+name)
				}
				expr = expr[:t.Start] + s + rest + expr[t.End:]
			}
		}
		b.SetAttributeRaw(a.Path, raw(expr))
	}
	return nil
}

// standInExpr rewrites, in an expression's source, each reference to a left-out resource
// with a stand-in as a reference to the stand-in.
func standInExpr(expr string, standIns map[string]string) string {
	for _, a := range slices.Sorted(maps.Keys(standIns)) {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(a) + `\b`)
		expr = re.ReplaceAllLiteralString(expr, standIns[a])
	}
	return expr
}

// traversalAddr is the resource address a traversal starts with ("aws_x.y", "data.aws_x.y"),
// or "".
func traversalAddr(traversal string) string {
	var parts []string
	for _, p := range strings.Split(traversal, ".") {
		name, _, _ := strings.Cut(p, "[") // aws_sqs_queue.a[0].arn: the index is no name
		parts = append(parts, name)
	}
	switch {
	case len(parts) >= 3 && parts[0] == "data":
		return strings.Join(parts[:3], ".")
	case len(parts) >= 2 && strings.Contains(parts[0], "_") && parts[0] != "path":
		return parts[0] + "." + parts[1]
	}
	return ""
}
