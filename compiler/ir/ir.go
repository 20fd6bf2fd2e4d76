// Package ir is the resolved fleet: defaults applied, references resolved, and every AWS
// name derived exactly once. Every backend and every rule reads only this.
// Slices are sorted by name so that output never depends on map order.
package ir

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
	"github.com/fleetc/fleetc/spec"
)

// Fleet is the whole resolved fleet.
type Fleet struct {
	// Name prefixes every derived AWS name: the spec's fleet, with the environment in it
	// when there is one (Qualified).
	Name string
	// Env is the environment this fleet is ("" for a spec without environments).
	Env string
	// Local: built to run on this machine (fleetc dev): workers get the developer's
	// environment, so api_key_env is a key source (rule M007).
	Local     bool
	Region    string
	Tags      []Tag
	Bus       Bus
	Worker    Worker
	State     State
	Events    []*Event
	Models    []*Model
	Agents    []*Agent
	Workflows []*Workflow
	Schedules []*Schedule // sorted by name
	Traffic   *Traffic
	Alarms    Alarms

	// TargetDLQ receives events EventBridge could not deliver to any class queue.
	// It is one standard queue per fleet: rule-target DLQs may not be FIFO (E008).
	TargetDLQ Queue
	// SchemaRegistry is the EventBridge Schema Registry holding every event contract.
	SchemaRegistry string
	// Tools is nil when no class is an async tool.
	Tools *Tools

	// Index locates spec paths in the source file; nil for fleets built in code.
	Index *spec.Index
}

// Alarms is where the fleet's alarms notify besides the root module's alarm_actions.
type Alarms struct {
	Notify *AlarmTopic // nil: alarm_actions only
}

// AlarmTopic is the SNS topic of alarms.notify: one fleetc creates, or one that exists.
type AlarmTopic struct {
	Create bool   // fleetc creates the topic Name
	Name   string // the created topic's name, <fleet>-alarms
	ARN    string // the existing topic's ARN ("" when created)
	Path   string
}

// Tag is one resource tag.
type Tag struct{ Key, Value string }

// Bus is the fleet's EventBridge bus.
type Bus struct {
	Name string
	// Model is the bus fleetc creates: always "classic" (the AWS provider has no EventsV2
	// resource). RequestedModel is bus.model as written; rule E017 refuses "v2".
	Model          string
	RequestedModel string
	// MaxEntries is what the generated bus accepts per PutEvents request. fleetc can only
	// create classic buses (the AWS provider has no EventsV2 resource), so it is always
	// ClassicBusMaxEntries; the runtime configs copy it.
	MaxEntries int
	Archive    *Archive
	Path       string
}

// ClassicBusMaxEntries is PutEvents' entry limit on a classic bus (aws_cloudwatch_event_bus).
const ClassicBusMaxEntries = awslimits.PutEventsMaxEntriesClassic

// Archive keeps the bus's events for replay.
type Archive struct {
	Name      string
	Retention time.Duration // 0 keeps events indefinitely
	Path      string
}

// Worker is the fleet-worker image and where the eks classes run.
type Worker struct {
	Image     string
	Namespace string
	EKS       *EKS // nil when the spec names no cluster (W008 refuses eks classes then)
}

// Partition is the AWS partition of a region (the schema admits commercial, China and
// GovCloud regions only).
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// KEDAScaler is the fleet's EKS settings when it has eks classes, which is when fleetc creates
// the KEDA scaler role; nil otherwise.
func (f *Fleet) KEDAScaler() *EKS {
	if !f.HasEKS() {
		return nil
	}
	return f.Worker.EKS
}

// HasEKS reports whether any class runs on eks.
func (f *Fleet) HasEKS() bool {
	for _, a := range f.Agents {
		if a.K8s != nil {
			return true
		}
	}
	return false
}

// EKS is the cluster of the eks classes and the role KEDA reads their queue depth with.
type EKS struct {
	Cluster string
	// KEDAOperatorRole is the ARN of the role the cluster's KEDA operator runs with; its
	// partition and account are the fleet's (W008, and terraform plan, check them).
	KEDAOperatorRole string
	Partition        string
	// ScalerRole is the role every TriggerAuthentication of the fleet names: trusted by the
	// operator's role, allowed sqs:GetQueueAttributes on the eks queues and nothing else.
	ScalerRole, ScalerRoleARN string
	Path                      string
}

// State names the state-plane stores.
type State struct {
	IdempotencyTable string
	JobsTable        string // "" when no class is an async tool
	ClaimCheckBucket string
	ClaimCheckExpiry time.Duration
	// KMSKeyARN is a given customer-managed key; CreateKMSKey has fleetc create one. Neither:
	// AWS-managed encryption.
	KMSKeyARN    string
	CreateKMSKey bool
}

// KMS reports whether the state plane, queues and logs use a customer-managed key.
func (s State) KMS() bool { return s.CreateKMSKey || s.KMSKeyARN != "" }

// Event is one event contract.
type Event struct {
	DetailType  string
	Version     int
	Source      string
	Description string
	Detail      map[string]any // JSON Schema of the detail, as written
	SchemaName  string         // name in the schema registry
	Path        string
	Consumers   []*Agent
	Producers   []*Agent
}

// Model is a routing policy.
type Model struct {
	Name       string
	Targets    []string
	Fallbacks  []*Model
	Retries    int
	SDKRetries int
	Timeout    time.Duration
	// TimeoutDefaulted: the spec wrote no timeout, so Timeout is Defaults.ModelTimeout.
	// The step's deadline bounds every call at run time, so a default longer than a
	// class's step is cut to it, never an error (M003 judges only written timeouts).
	TimeoutDefaulted bool
	AllowedFails     int
	Cooldown         time.Duration
	MaxInFlight      int // 0: uncapped
	TokensPerMinute  int // 0: unknown
	BaseURL          string
	APIKeyEnv        string
	// APIKey is where a deployed worker reads base_url's key (nil: nowhere).
	APIKey *APIKey
	// ContextWindowFallbacks are tried when the input exceeds a target's context window.
	ContextWindowFallbacks []*Model
	// Processes is how many worker processes may call this policy at once (Σ scaling.max
	// of the classes that reach it): the divisor of the fleet-wide caps.
	Processes int
	Path      string

	// Price is models.<policy>.price; nil: fleetc's list price of the first target.
	Price *Price
}

// Price is a model's price in US dollars per million input and output tokens.
type Price struct {
	InputPerMTok, OutputPerMTok float64
}

// APIKey is a secret value's home in AWS (a model API key, or a handler secret): exactly
// one of Secret and SSM (a name or an ARN, as written). The IR, like everything fleetc
// writes, holds the reference only.
type APIKey struct {
	Secret  string
	JSONKey string
	SSM     string
	KMSKey  string // customer-managed key of the secret or parameter ("" = AWS-managed)
}

// Agent is one resolved agent class.
type Agent struct {
	Name           string
	Description    string
	Path           string
	Runtime        string // lambda | eks | agentcore
	Consumes       *Consumes
	Emits          []*Event
	FIFO           bool
	GroupBy        string
	HighThroughput bool
	Fairness       *Fairness // nil: no per-key cap
	StepP95        time.Duration
	StepMax        time.Duration
	Heartbeat      time.Duration // visibility heartbeat interval; 0 when the worker does not heartbeat
	Deadline       time.Duration // run deadline; 0 when none
	Model          *Model        // the default policy (the first of Models)
	Models         []*Model      // every policy the class allows, the default first; an event's model_policy picks one
	Handler        Handler
	// Output is the JSON Schema of the handler's result (agents.<class>.output); nil when
	// undeclared. OutputPath is its spec pointer.
	Output         map[string]any
	SideEffects    string // idempotent | non_idempotent
	Idempotency    Idempotency
	Scaling        Scaling
	ClaimCheckOver int64
	MaxPayload     int64   // 0: not declared
	Share          float64 // traffic.share: fraction of the fleet's steps; 0 when the topology decides
	TokensPerStep  int     // traffic.tokens_per_step; 0 when unknown
	Tool           *Tool
	Queue          Queue
	DLQ            Queue
	Delivery       Delivery
	Rule           *Rule // nil when no event is consumed (workflow-only classes)
	RoleName       string
	Image          string
	Lambda         *Lambda
	AgentCore      *AgentCore
	K8s            *K8s
	ConfigPath     string // runtime/<class>.json
	Workflows      []*Workflow
	Rollout        *Rollout // nil: a new version takes all traffic at once, in place

	// OutputTokensPerStep is traffic.output_tokens_per_step: the part of TokensPerStep the
	// model writes, priced as output (0: all priced as input).
	OutputTokensPerStep int
}

// RetryLimit is the class's failure budget in receives: fleet-worker dead-letters a message
// itself at this receive count, one below the redrive's maxReceiveCount, so the worker, not a
// silent redrive, records why, and the last receive is left for a worker that crashed
// mid-step. Each receive holds the work for at most one step window (docs/faults.md).
func (a *Agent) RetryLimit() int { return max(1, a.Queue.MaxReceives-1) }

// IngressQueueName is the standard queue a FIFO class's rule delivers to, which the class's
// pipe moves into its FIFO queue with a group per event ("" for other classes).
func (a *Agent) IngressQueueName() string {
	if !a.FIFO || a.Rule == nil {
		return ""
	}
	return a.Rule.Name + "-ingress" // <fleet>-<class>-ingress: shorter than the DLQ name Lower already bounds
}

// Consumes is the consumed event and the detail values matched.
type Consumes struct {
	Event *Event
	Match []Match
}

// Match is one detail field of an event pattern.
type Match struct {
	Field  string
	Values []any
}

// Handler is how the worker runs a step.
type Handler struct {
	Kind    string // exec | http | llm
	Command []string
	// InheritEnv names the worker's variables an exec command receives beyond the allow-list.
	InheritEnv []string
	// Secrets are the exec command's variables read from Secrets Manager or SSM, by name
	// (handler.secrets): references only, like a model policy's APIKey.
	Secrets   map[string]*APIKey
	URL       string
	System    string
	Tools     []string
	MaxTokens int
	// MaxIterations caps the llm tool-use loop (0: the worker's default).
	MaxIterations int
}

// Idempotency is the class's work-key policy.
type Idempotency struct {
	Window time.Duration
	Key    []string // detail fields; empty means the event id
	Path   string
}

// Scaling bounds a class's workers.
type Scaling struct {
	Min, Max        int
	PerReplica      int // concurrent steps per worker
	Cooldown        time.Duration
	Activation      int
	ScaleOnInFlight bool
	Path            string
}

// Fairness is a class's per-tenant cap: a worker runs at most MaxInFlight steps of one value
// of detail.<Key> at once (docs/fairness.md).
type Fairness struct {
	Key         string
	MaxInFlight int
	Cardinality int // distinct keys active at once; 0 when not declared
	Path        string
}

// FairShare is the default per-key cap: half a worker's concurrency, rounded up, so a lone
// tenant's burst leaves the other half of every worker to the others.
func FairShare(perReplica int) int { return (perReplica + 1) / 2 }

// Tool marks an agent-facing tool class. An async class gets the tools start_<class> and
// get_<class>_status ('-' becomes '_'), served by the fleet's Tools function.
type Tool struct {
	Async           bool
	StatusPollAfter time.Duration
	StartName       string
	StatusName      string
	Notify          *Notify
	Path            string
}

// Notify is where an async class's completion events are pushed.
type Notify struct {
	APIDestination string // ARN; "" when Queue is set
	Queue          string // queue fleetc creates; "" when APIDestination is set
	Rule           string // the EventBridge rule that pushes them
	Path           string
}

// Tools is the agent side of the async tools: one Lambda function of the worker image
// (fleet-worker --mode tools) serving start_*, get_*_status and list_my_jobs for every async
// class, under its own role, which can do nothing a worker role can.
type Tools struct {
	FunctionName string
	RoleName     string
	ConfigPath   string // tools/tools.json
	Classes      []*Agent
	Path         string // the first async class's tool
}

// AsyncToolClasses are the async classes a's llm handler names ("async:<class>"), in the
// fleet's class order, each once. A name that is not an async class of the fleet is left out:
// rule T002 reports it.
func (f *Fleet) AsyncToolClasses(a *Agent) []*Agent {
	if a.Handler.Kind != "llm" || f.Tools == nil {
		return nil
	}
	named := map[string]bool{}
	for _, t := range a.Handler.Tools {
		if class, ok, err := rc.ParseAsyncTool(t); ok && err == nil {
			named[class] = true
		}
	}
	var out []*Agent
	for _, c := range f.Tools.Classes {
		if named[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// ListJobsTool is the name of the session-scoped job list tool.
const ListJobsTool = "list_my_jobs"

// Queue is an SQS queue.
type Queue struct {
	Name        string
	FIFO        bool
	Retention   time.Duration
	Visibility  time.Duration
	LongPoll    time.Duration
	Delay       time.Duration
	MaxReceives int // redrive maxReceiveCount; 0 for DLQs
	Path        string
}

// Delivery is an EventBridge target RetryPolicy.
type Delivery struct {
	Attempts       int
	MaxAge         time.Duration
	MaxAgeExplicit bool // written in the spec (E009 asks for it on v2 buses)
	Path           string
}

// Rule routes the consumed event to the class queue.
type Rule struct {
	Name     string
	TargetID string
	Pattern  map[string]any
}

// Lambda is the function and event source mapping of a lambda class.
type Lambda struct {
	FunctionName   string
	Timeout        time.Duration
	BatchSize      int
	BatchingWindow time.Duration
	Memory         int
	Path           string
	// Pollers is the provisioned mode the class asks for (nil: on-demand scaling). A zero
	// bound was not stated: the Terraform backend fills it (capacity's heuristic, Lambda's
	// default).
	Pollers *Pollers
}

// Pollers bounds a provisioned event source mapping's pollers.
type Pollers struct {
	Min, Max int
}

// AgentCore is the AgentCore runtime of an agentcore class.
type AgentCore struct {
	RuntimeName string
	Session     time.Duration
	Instances   bool
	Path        string
}

// K8s names the Kubernetes objects of an eks class.
type K8s struct {
	Namespace      string
	Deployment     string
	ServiceAccount string
}

// Workflow is one state machine.
type Workflow struct {
	Name             string
	Description      string
	Path             string
	Type             string // standard | express
	StateMachineName string
	RoleName         string
	LogGroup         string
	Steps            []*Step
	Agents           []*Agent // every class the workflow dispatches to, sorted
	ItemsPerRun      float64  // items per fan_out run (capacity); 0: not stated
	Rollout          *Rollout // nil: the state machine is updated in place, no version or alias
}

// Step is one state of a workflow: an agent task, a fan-out of agent tasks, or an approval
// (Agent nil) that waits for a person.
type Step struct {
	Name      string
	Path      string
	Agent     *Agent
	Timeout   time.Duration
	Heartbeat time.Duration // 0: none
	Retries   int
	FanOut    *FanOut
	Approval  *Approval
}

// Approval is a step that waits for `fleetc approve` or `fleetc reject`: its task token is
// recorded in the idempotency table by the fleet's approval recorder (ApprovalRecorderName),
// and Notify goes on the bus without it. The step's Timeout is the wait's TimeoutSeconds.
type Approval struct {
	Notify    *Event
	OnTimeout spec.OnTimeout
}

// HasApprovals says whether any workflow of f has an approval step (and so the fleet needs
// its approval recorder).
func (f *Fleet) HasApprovals() bool {
	for _, w := range f.Workflows {
		if w.HasApprovals() {
			return true
		}
	}
	return false
}

// HasApprovals says whether w has an approval step.
func (w *Workflow) HasApprovals() bool {
	for _, st := range w.Steps {
		if st.Approval != nil {
			return true
		}
	}
	return false
}

// ApprovalRecorderName is the Express state machine that records an approval's task token
// and puts its notify event on the bus: "<fleet>-approvals".
func ApprovalRecorderName(f *Fleet) string { return f.Name + "-approvals" }

// StateMachineRoleName is the IAM role of state machine machine (a workflow's, or the
// approval recorder).
func StateMachineRoleName(machine string) string { return machine + "-sfn" }

// StateMachineLogGroup is the log group state machine machine logs to, under the
// /aws/vendedlogs/ prefix AWS recommends for logs a service delivers.
func StateMachineLogGroup(machine string) string { return "/aws/vendedlogs/states/" + machine }

// Templatefile() variables of the approval states: the recorder's ARN in a workflow that
// asks for approvals; the idempotency table and the bus name in the recorder's definition.
const (
	ApprovalRecorderVar = "approval_recorder_arn"
	IdempotencyTableVar = "idempotency_table"
	BusNameVar          = "bus_name"
)

// ApprovalSortKey is the idempotency table's sort key of an approval's record; the partition
// key is ApprovalPartitionKey(execution ARN). Class names (the other sort keys) cannot contain '#', so an
// approval record never meets a work-key claim.
func ApprovalSortKey(state string) string { return ApprovalKeyPrefix + state }

// ApprovalKeyPrefix starts an approval record's partition key (ApprovalPartitionKey) and
// sort key. Worker roles may not touch items whose partition key starts with it
// (dynamodb:LeadingKeys): a class's worker would otherwise read the token of its own
// workflow's approval and answer it.
const ApprovalKeyPrefix = "approval#"

// ApprovalPartitionKey is the partition key of the approval records of execution execARN.
func ApprovalPartitionKey(execARN string) string { return ApprovalKeyPrefix + execARN }

// IdempotencyExpiresAttr is the idempotency table's TTL attribute (N, epoch seconds): work-key
// claims and approval records both carry it, so DynamoDB deletes what nobody will read again.
const IdempotencyExpiresAttr = contract.IdempotencyExpiresAttr

// ApprovalRecordGrace is how long an approval record outlives its approval's timeout: a
// late `fleetc approve` still finds the token and hears from Step Functions that the step
// timed out, rather than that nothing ever waited.
const ApprovalRecordGrace = 24 * time.Hour

// FanOut is a Distributed Map over Items.
type FanOut struct {
	Items                   string
	MaxConcurrency          int
	ToleratedFailurePercent int    // whole percent, 0–100: ASL ToleratedFailurePercentage is an integer
	ExecutionType           string // STANDARD | EXPRESS
	BatchInputBytes         int64
}

// Traffic is what the fleet is sized for.
type Traffic struct {
	ConversationsPerMinute  float64
	StepsPerConversation    float64
	StepDuration            time.Duration
	ConcurrentConversations int
	FanOutItems             float64 // items per fan_out run; 0 when not stated
	Path                    string
}

// StepsPerSecond is the fleet-wide step arrival rate.
func (t *Traffic) StepsPerSecond() float64 {
	return t.ConversationsPerMinute * t.StepsPerConversation / 60
}

// Agent returns the named class or nil.
func (f *Fleet) Agent(name string) *Agent {
	for _, a := range f.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Event returns the named event or nil.
func (f *Fleet) Event(detailType string) *Event {
	for _, e := range f.Events {
		if e.DetailType == detailType {
			return e
		}
	}
	return nil
}

// QueueURLVar is the templatefile() variable through which Terraform hands a class's queue
// URL to the state machine definitions (statemachines/*.asl.json hold "${queue_url_<class>}").
func QueueURLVar(a *Agent) string {
	return "queue_url_" + strings.ReplaceAll(a.Name, "-", "_")
}

// FunctionARNVar is the templatefile() variable through which Terraform hands a lambda
// class's function ARN to state machines that invoke it synchronously (ir.Step.Synchronous).
func FunctionARNVar(a *Agent) string {
	return "function_arn_" + strings.ReplaceAll(a.Name, "-", "_")
}

// ClaimCheckOutputPrefix is the key prefix under which a class's workers write the outputs
// they offload to the claim-check bucket: "outputs/<class>/" (runtime/claimcheck.OutputKey).
// Terraform grants the class's role s3:PutObject under it and nowhere else.
func ClaimCheckOutputPrefix(a *Agent) string { return claimCheckOutputRoot + a.Name + "/" }

// fanOutPrefix holds every fan-out result of workflow w.
func fanOutPrefix(w *Workflow) string { return claimCheckFanOutRoot + w.Name + "/" }

const (
	claimCheckOutputRoot = "outputs/"
	claimCheckFanOutRoot = "fanout/"
)

// ClaimCheckRoots are the key prefixes every claim-check payload lives under: producers'
// inputs, classes' outputs, fan-out results. The bucket's lifecycle expires exactly these, so
// the generated config objects it also holds (under another prefix) never expire.
func ClaimCheckRoots() []string {
	return []string{ClaimCheckInputPrefix, claimCheckOutputRoot, claimCheckFanOutRoot}
}

// ClaimCheckInputPrefix is where producers outside the fleet put the payloads they reference
// (payload_ref), one prefix per consumer-facing name: ClaimCheckEventInputPrefix for an
// event's payloads, ClaimCheckWorkflowInputPrefix for a workflow's input. A class reads only
// the inputs of what it consumes.
const ClaimCheckInputPrefix = "inputs/"

// ClaimCheckEventInputPrefix holds producers' payloads for events of ev's detail-type:
// "inputs/events/<detail-type>/".
func ClaimCheckEventInputPrefix(ev *Event) string {
	return ClaimCheckInputPrefix + "events/" + ev.DetailType + "/"
}

// ClaimCheckWorkflowInputPrefix holds the payloads a workflow's execution input references:
// "inputs/workflows/<workflow>/".
func ClaimCheckWorkflowInputPrefix(w *Workflow) string {
	return ClaimCheckInputPrefix + "workflows/" + w.Name + "/"
}

// ClaimCheckReadPrefixes are the claim-check key prefixes a class's workers may read, sorted:
// producers' inputs for the event it consumes and its workflows' inputs, the outputs of the
// classes whose events it consumes, and the fan-out results of its workflows. The worker
// refuses a payload_ref elsewhere (runtime config claim_check.read_prefixes) and its role may
// read nothing else, so class A cannot load class B's outputs, nor the inputs of events it
// does not consume, by naming them in a message.
func ClaimCheckReadPrefixes(a *Agent) []string {
	set := map[string]bool{}
	if a.Consumes != nil && a.Consumes.Event != nil {
		set[ClaimCheckEventInputPrefix(a.Consumes.Event)] = true
		for _, p := range a.Consumes.Event.Producers {
			set[ClaimCheckOutputPrefix(p)] = true
		}
	}
	for _, w := range a.Workflows {
		set[ClaimCheckWorkflowInputPrefix(w)] = true
		set[fanOutPrefix(w)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// ClaimCheckBucketVar is the templatefile() variable holding the claim-check bucket name,
// where every Distributed Map writes its results.
const ClaimCheckBucketVar = "claim_check_bucket"

// ResultPrefix is the S3 prefix under which a fan-out step's Map Runs write their results
// ("<prefix>/<map run id>/manifest.json", SUCCEEDED_n.json, ...). Terraform scopes the state
// machine role's S3 permissions to "<prefix>/*".
func ResultPrefix(w *Workflow, st *Step) string {
	return fanOutPrefix(w) + st.Name
}
