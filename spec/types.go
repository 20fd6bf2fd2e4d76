// Package spec is the fleet.yaml language: its Go types, and a loader that keeps every
// value's source position so diagnostics can point at it.
package spec

import "encoding/json"

// Fleet is one fleet.yaml document, version 1.
type Fleet struct {
	Version   int                  `json:"version"`
	Fleet     string               `json:"fleet"`
	Region    string               `json:"region"`
	Tags      map[string]string    `json:"tags,omitempty"`
	Bus       Bus                  `json:"bus"`
	Worker    *Worker              `json:"worker,omitempty"`
	State     *State               `json:"state,omitempty"`
	Defaults  *Defaults            `json:"defaults,omitempty"`
	Events    map[string]*Event    `json:"events"`
	Models    map[string]*Model    `json:"models,omitempty"`
	Agents    map[string]*Agent    `json:"agents"`
	Workflows map[string]*Workflow `json:"workflows,omitempty"`
	Schedules map[string]*Schedule `json:"schedules,omitempty"`
	Traffic   *Traffic             `json:"traffic,omitempty"`
	Alarms    *Alarms              `json:"alarms,omitempty"`
	// Environments are the deployments of this fleet (dev, staging, prod), each the spec
	// with its overrides merged in; File.Select applies one.
	Environments map[string]Environment `json:"environments,omitempty"`
}

// NotifyCreate is the alarms.notify value that asks fleetc to create the SNS topic.
const NotifyCreate = "create"

// Alarms says where the fleet's alarms notify.
type Alarms struct {
	// Notify is "create" (fleetc creates an SNS topic) or the ARN of an existing topic.
	Notify string `json:"notify,omitempty"`
}

// Environment is one environment's overrides: a partial fleet.yaml of the fields that may
// differ between deployments (definitions/environment of the schema says which). It is kept
// as the document's values because it is merged over the document, before decoding.
type Environment map[string]any

// Bus is the fleet's EventBridge bus.
type Bus struct {
	Name    string   `json:"name"`
	Model   string   `json:"model,omitempty"` // classic | v2
	Archive *Archive `json:"archive,omitempty"`
}

// Archive keeps events for replay.
type Archive struct {
	Retention *Duration `json:"retention,omitempty"` // absent: kept indefinitely
}

// Worker is where the fleet-worker binary comes from and where its pods run.
type Worker struct {
	Image     string     `json:"image,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	EKS       *WorkerEKS `json:"eks,omitempty"`
}

// WorkerEKS names the cluster the eks classes run on and the KEDA operator that scales them.
type WorkerEKS struct {
	Cluster          string `json:"cluster"`
	KEDAOperatorRole string `json:"keda_operator_role"`
}

// State overrides the names of the state-plane stores.
type State struct {
	IdempotencyTable string    `json:"idempotency_table,omitempty"`
	JobsTable        string    `json:"jobs_table,omitempty"`
	ClaimCheckBucket string    `json:"claim_check_bucket,omitempty"`
	ClaimCheckExpiry *Duration `json:"claim_check_expiry,omitempty"`
	// KMSKey is the customer-managed key of the bucket, tables, queues and log groups:
	// KMSKeyCreate, or a key ARN. Empty: AWS-managed encryption.
	KMSKey string `json:"kms_key,omitempty"`
}

// KMSKeyCreate as state.kms_key has fleetc create the key (and alias/<fleet>).
const KMSKeyCreate = "create"

// Defaults are inherited by every agent class unless it says otherwise.
type Defaults struct {
	Queue       *Queue       `json:"queue,omitempty"`
	Delivery    *Delivery    `json:"delivery,omitempty"`
	Idempotency *Idempotency `json:"idempotency,omitempty"`
}

// Queue tunes a class's SQS queue and its dead-letter queue.
type Queue struct {
	Retention    *Duration `json:"retention,omitempty"`
	Visibility   *Duration `json:"visibility,omitempty"`
	LongPoll     *Duration `json:"long_poll,omitempty"`
	Delay        *Duration `json:"delay,omitempty"`
	MaxReceives  *int      `json:"max_receives,omitempty"`
	DLQRetention *Duration `json:"dlq_retention,omitempty"`
}

// Delivery is the EventBridge rule target's RetryPolicy.
type Delivery struct {
	Attempts *int      `json:"attempts,omitempty"`
	MaxAge   *Duration `json:"max_age,omitempty"`
}

// Idempotency says how long work keys are remembered and which detail fields make the key.
type Idempotency struct {
	Window *Duration `json:"window,omitempty"`
	Key    []string  `json:"key,omitempty"`
}

// Event is a contract between agents; Detail is the JSON Schema of the event's detail.
type Event struct {
	Version     int            `json:"version"`
	Source      string         `json:"source"`
	Description string         `json:"description,omitempty"`
	Detail      map[string]any `json:"detail"`
}

// Model is a routing policy: workers ask a policy, never a model id.
type Model struct {
	Targets         []string  `json:"targets"`
	Fallbacks       []string  `json:"fallbacks,omitempty"`
	Retries         *int      `json:"retries,omitempty"`
	SDKRetries      *int      `json:"sdk_retries,omitempty"`
	Timeout         *Duration `json:"timeout,omitempty"`
	AllowedFails    *int      `json:"allowed_fails,omitempty"`
	Cooldown        *Duration `json:"cooldown,omitempty"`
	MaxInFlight     *int      `json:"max_in_flight,omitempty"`
	TokensPerMinute *int      `json:"tokens_per_minute,omitempty"`
	// BaseURL is the endpoint of openai/<model> targets (an OpenAI-compatible API).
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding base_url's API key; never the key.
	// Nothing sets it in a deployed function: it is for fleetc dev and local runs.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is where a deployed worker reads base_url's API key; nil: nowhere.
	APIKey *APIKey `json:"api_key,omitempty"`
	// ContextWindowFallbacks are policies tried when the input exceeds a target's context window.
	ContextWindowFallbacks []string `json:"context_window_fallbacks,omitempty"`
	// Price overrides fleetc's list price of the policy's first target in fleetc capacity.
	Price *ModelPrice `json:"price,omitempty"`
}

// ModelPrice is a model's price in US dollars per million input and output tokens.
type ModelPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// APIKey references a model API key held in AWS: a Secrets Manager secret (its whole
// string, or one field of a JSON string) or an SSM SecureString parameter. fleet.yaml
// holds the reference only; the worker reads the value at start and again after a 401.
type APIKey struct {
	Secret  string `json:"secret,omitempty"`   // secret name or ARN
	JSONKey string `json:"json_key,omitempty"` // field of the secret's JSON string
	SSM     string `json:"ssm,omitempty"`      // parameter name or ARN
	// KMSKey is the customer-managed key encrypting the secret or parameter (its ARN);
	// empty: the service's AWS-managed key, which needs no grant.
	KMSKey string `json:"kms_key,omitempty"`
}

// Agent is one agent class: a queue, its workers and their contract.
type Agent struct {
	Description string    `json:"description,omitempty"`
	Runtime     string    `json:"runtime"` // lambda | eks | agentcore
	Consumes    *Consumes `json:"consumes,omitempty"`
	Emits       []string  `json:"emits,omitempty"`
	Ordering    *Ordering `json:"ordering,omitempty"`
	Fairness    *Fairness `json:"fairness,omitempty"`
	Step        Step      `json:"step"`
	Model       Policies  `json:"model,omitempty"`
	Handler     Handler   `json:"handler"`
	// Output is the JSON Schema of what the handler returns (same dialect and limits as an
	// event detail); nil when the class does not declare it.
	Output      map[string]any `json:"output,omitempty"`
	SideEffects string         `json:"side_effects,omitempty"` // idempotent | non_idempotent
	Idempotency *Idempotency   `json:"idempotency,omitempty"`
	Scaling     *Scaling       `json:"scaling,omitempty"`
	Payload     *Payload       `json:"payload,omitempty"`
	Traffic     *AgentTraffic  `json:"traffic,omitempty"`
	Tool        *Tool          `json:"tool,omitempty"`
	Queue       *Queue         `json:"queue,omitempty"`
	Delivery    *Delivery      `json:"delivery,omitempty"`
	Lambda      *Lambda        `json:"lambda,omitempty"`
	AgentCore   *AgentCore     `json:"agentcore,omitempty"`
	Image       string         `json:"image,omitempty"`
	Rollout     *Rollout       `json:"rollout,omitempty"`
}

// Policies is a class's model: one policy name, or the list of policies it allows (the first
// is its default). YAML writes either `model: fast` or `model: [fast, long]`.
type Policies []string

// UnmarshalJSON accepts a string or a list of strings.
func (p *Policies) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*p = Policies{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*p = many
	return nil
}

// Default is the policy a step uses unless its event names another allowed one ("" when none).
func (p Policies) Default() string {
	if len(p) == 0 {
		return ""
	}
	return p[0]
}

// Consumes names the event a class works on and the detail values it matches.
type Consumes struct {
	Event string           `json:"event"`
	Match map[string][]any `json:"match,omitempty"`
}

// Ordering chooses a FIFO lane per group key instead of a standard queue.
type Ordering struct {
	FIFO           bool   `json:"fifo"`
	GroupBy        string `json:"group_by,omitempty"`
	HighThroughput bool   `json:"high_throughput,omitempty"`
}

// Fairness caps how many of a class's steps one tenant (one value of a detail field) runs at
// once in a worker, so one tenant's burst cannot take every slot (docs/fairness.md).
type Fairness struct {
	Key               string `json:"key"`
	MaxInFlightPerKey *int   `json:"max_in_flight_per_key,omitempty"`
	// Cardinality is how many distinct keys are expected at once (0: not declared).
	Cardinality *int `json:"cardinality,omitempty"`
}

// Step is how long one unit of work takes.
type Step struct {
	P95       Duration  `json:"p95"`
	Max       Duration  `json:"max"`
	Heartbeat *Duration `json:"heartbeat,omitempty"`
	Deadline  *Duration `json:"deadline,omitempty"`
}

// Handler is the code that does a step: exactly one of Exec, HTTP, LLM.
type Handler struct {
	Exec []string `json:"exec,omitempty"`
	HTTP string   `json:"http,omitempty"`
	LLM  *LLM     `json:"llm,omitempty"`
	// InheritEnv names the worker's environment variables an exec command also receives.
	InheritEnv []string `json:"inherit_env,omitempty"`
	// Secrets are variables an exec command receives whose values fleet-worker reads at
	// start from Secrets Manager or SSM (the same sources as a model policy's api_key),
	// by the variable's name.
	Secrets map[string]APIKey `json:"secrets,omitempty"`
}

// LLM is a model-driven handler run by the worker's router.
type LLM struct {
	System    string   `json:"system"`
	Tools     []string `json:"tools,omitempty"`
	MaxTokens int      `json:"max_tokens,omitempty"`
	// MaxIterations caps the tool-use loop (default 8).
	MaxIterations int `json:"max_iterations,omitempty"`
}

// Scaling bounds the class's worker count (KEDA for eks, reserved concurrency for lambda).
type Scaling struct {
	Min        int       `json:"min"`
	Max        int       `json:"max"`
	PerReplica int       `json:"per_replica,omitempty"`
	Cooldown   *Duration `json:"cooldown,omitempty"`
	Activation *int      `json:"activation,omitempty"`
	InFlight   *bool     `json:"scale_on_in_flight,omitempty"`
}

// Payload sizes a class's messages.
type Payload struct {
	ClaimCheckOver *Size `json:"claim_check_over,omitempty"`
	Max            *Size `json:"max,omitempty"`
}

// Tool marks a class as a tool behind an agent; async tools follow start + status.
type Tool struct {
	Async           bool      `json:"async"`
	StatusPollAfter *Duration `json:"status_poll_after,omitempty"`
	Notify          *Notify   `json:"notify,omitempty"`
}

// Notify pushes an async tool's completion events to the client instead of (or besides)
// polling: an EventBridge API destination, or a queue fleetc creates.
type Notify struct {
	APIDestination string `json:"api_destination,omitempty"`
	Queue          string `json:"queue,omitempty"`
}

// Lambda tunes the SQS event source mapping of a lambda class.
type Lambda struct {
	BatchSize      *int      `json:"batch_size,omitempty"`
	BatchingWindow *Duration `json:"batching_window,omitempty"`
	Memory         *int      `json:"memory,omitempty"`
	// ProvisionedPollers puts the event source mapping in provisioned mode with this many
	// pollers (min defaults to the seed's sizing heuristic, max to Lambda's 200).
	ProvisionedPollers *Pollers `json:"provisioned_pollers,omitempty"`
}

// Pollers bounds a provisioned event source mapping's pollers.
type Pollers struct {
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

// AgentCore tunes an AgentCore runtime class.
type AgentCore struct {
	Session   *Duration `json:"session,omitempty"`
	Instances bool      `json:"instances,omitempty"`
}

// Workflow is a Step Functions state machine over agent steps.
type Workflow struct {
	Type        string          `json:"type,omitempty"` // standard | express
	Description string          `json:"description,omitempty"`
	Steps       []*WorkflowStep `json:"steps"`
	// ItemsPerRun is the items one run of this workflow's fan_out steps processes, for
	// capacity (overrides traffic.fan_out_items).
	ItemsPerRun *float64 `json:"items_per_run,omitempty"`
	// Rollout publishes each definition as a version behind an alias (all_at_once only).
	Rollout *Rollout `json:"rollout,omitempty"`
}

// WorkflowStep is an agent step (a task-token callback) or a fan-out.
type WorkflowStep struct {
	Name      string    `json:"name,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Timeout   *Duration `json:"timeout,omitempty"`
	Heartbeat *Duration `json:"heartbeat,omitempty"`
	Retries   *int      `json:"retries,omitempty"`
	FanOut    *FanOut   `json:"fan_out,omitempty"`
	Approval  *Approval `json:"approval,omitempty"`
}

// Approval is a step that waits for a person: `fleetc approve` or `fleetc reject` completes it.
type Approval struct {
	Notify    string    `json:"notify"` // declared event put on the bus when the approval is requested
	Timeout   *Duration `json:"timeout"`
	OnTimeout OnTimeout `json:"on_timeout,omitempty"`
}

// OnTimeout is what a timed-out approval does.
type OnTimeout string

// The on_timeout values; the schema's enum lists the same two.
const (
	OnTimeoutFail     OnTimeout = "fail"     // the execution fails (the default)
	OnTimeoutContinue OnTimeout = "continue" // the next step runs, the timeout recorded
)

// FanOut runs one agent step per item as a Distributed Map.
type FanOut struct {
	Items                   string    `json:"items"`
	Agent                   string    `json:"agent"`
	MaxConcurrency          *int      `json:"max_concurrency,omitempty"`
	ToleratedFailurePercent *int      `json:"tolerated_failure_percent,omitempty"`
	ExecutionType           string    `json:"execution_type,omitempty"` // STANDARD | EXPRESS
	Timeout                 *Duration `json:"timeout,omitempty"`
	Heartbeat               *Duration `json:"heartbeat,omitempty"`
	BatchInputBytes         *Size     `json:"batch_input,omitempty"`
}

// Schedule puts one declared event on the bus on a cron or rate schedule (EventBridge
// Scheduler): exactly one of Cron and Rate.
type Schedule struct {
	Cron           string         `json:"cron,omitempty"` // the six fields inside cron(...)
	Rate           string         `json:"rate,omitempty"` // the value and unit inside rate(...)
	Timezone       string         `json:"timezone,omitempty"`
	Event          string         `json:"event"`
	Detail         map[string]any `json:"detail,omitempty"`
	FlexibleWindow *Duration      `json:"flexible_window,omitempty"`
	Description    string         `json:"description,omitempty"`
}

// Traffic is what the fleet is sized for; quota rules read it.
type Traffic struct {
	ConversationsPerMinute  float64   `json:"conversations_per_minute"`
	StepsPerConversation    float64   `json:"steps_per_conversation"`
	StepDuration            *Duration `json:"step_duration,omitempty"`
	ConcurrentConversations *int      `json:"concurrent_conversations,omitempty"`
	FanOutItems             *float64  `json:"fan_out_items,omitempty"`
}

// AgentTraffic is one class's own traffic assumptions.
type AgentTraffic struct {
	Share         *float64 `json:"share,omitempty"`
	TokensPerStep *int     `json:"tokens_per_step,omitempty"`
	// OutputTokensPerStep is the part of TokensPerStep the model writes (priced as output).
	OutputTokensPerStep *int `json:"output_tokens_per_step,omitempty"`
}
