// Package asl generates one Amazon States Language definition per workflow:
// statemachines/<workflow>.asl.json.
//
// Each agent step is an SQS "sendMessage.waitForTaskToken" Task. The message body is the shape
// the worker expects (runtime-config contract, "Step Functions task"):
//
//	{"TaskToken": ..., "execution_id": ..., "state": ..., "trace_id": ..., "detail": <state input>}
//
// detail is the whole state input, so a claim-check reference (payload_ref: {type, bucket, key})
// placed in the workflow input travels inside detail untouched, and so do earlier results.
//
// Inside Express executions (type: express, and EXPRESS fan-out children) no task token can be
// awaited: a step on a lambda class is then a request-response "lambda:invoke" Task whose
// Payload is the same message minus TaskToken, bounded by the 5-minute Express limit; its
// result lands at $.steps.<StateName>.Payload. Steps on queue-fed classes there are refused (S009).
//
// Data convention: a step's result (the worker's SendTaskSuccess output, i.e. the handler result)
// lands at ResultPath "$.steps.<StateName>", so the input (trace_id, payload_ref, group key) stays
// intact for later steps and every later step sees every earlier result. A fan-out's item results
// never enter the state: its Distributed Map has a ResultWriter that exports them to the
// claim-check bucket under ResultPrefix ("fanout/<workflow>/<state>/<map run id>/"), and a
// ResultSelector keeps only {"ResultWriterDetails": {"Bucket", "Key"}} (the manifest.json
// reference) at $.steps.<StateName>. 200 items x 2 KB inline would pass the 256 KiB state limit
// (States.DataLimitExceeded); the reference is ~150 bytes whatever the fan-out.
//
// The files are Terraform templates: QueueUrl holds "${queue_url_<class>}" (ir.QueueURLVar) and
// the ResultWriter bucket "${claim_check_bucket}" (ir.ClaimCheckBucketVar); Terraform fills both
// with templatefile(). Strings that come from the spec are escaped for templatefile
// ("${" → "$${", "%{" → "%%{") so they cannot be read as template syntax.
//
// Diagnostics: the S0xx codes are compiler/check rule IDs (S002, S003, S006, S009, S010) reported
// again here because the generator refuses to write what AWS would refuse; P008 is the spec
// loader's "invalid value"; S000 alone is this package's own (see Codes).
package asl

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/asl/refpath"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/genjson"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

// Resource is the optimized SQS integration with the callback pattern.
const Resource = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"

// InvokeResource is the optimized Lambda integration, request-response: the synchronous form
// of an agent step on a lambda class inside an Express execution (ir.Step.Synchronous).
const InvokeResource = "arn:aws:states:::lambda:invoke"

// Errors of the Lambda integration that a retry can fix (service faults, throttling), and the
// error type fleet-worker's Lambda mode reports for a step it would have released for retry.
var (
	lambdaTransient = []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"}
	// ErrWorkerRetry is what fleet-worker's Lambda mode reports for a step to retry.
	ErrWorkerRetry = contract.ErrorRetry
)

// ResultWriterResource is the S3 export of a Distributed Map's child results.
const ResultWriterResource = "arn:aws:states:::s3:putObject"

// Code is one diagnostic code this package emits that is neither a compiler/check rule ID
// nor a spec loader code (spec.Codes).
type Code = diag.Code

// Codes lists this package's own diagnostic codes. The other codes it emits (S002, S003,
// S006, S009, S010 and P008) are documented by compiler/check.Rules and spec.Codes.
func Codes() []Code {
	return []Code{{
		ID: "S000", Severity: diag.Error,
		Summary: "state machine definition cannot be encoded",
		Explain: "fleetc built the workflow's Amazon States Language definition but could not serialise it to JSON, so no statemachines/<workflow>.asl.json is written. " +
			"This is a compiler bug (the definition is built from typed values); report it with the spec that caused it.",
	}}
}

// Errors the optimized SQS integration raises when SendMessage itself fails: service errors
// (throttling "Request is throttled", 5xx) and client-side failures (connection, I/O).
const (
	ErrSQSService = "SQS.AmazonSQSException"
	ErrSQSClient  = "SQS.SdkClientException"
)

// Retry shape of SendMessage failures: exponential backoff with full jitter, capped, so a
// throttled queue is not hammered in lockstep by every parked execution.
const (
	sqsRetryInterval = 1
	sqsRetryAttempts = 5
	sqsRetryMaxDelay = 30
	backoffRate      = 2
	// timeoutRetryInterval is short: the timed-out attempt already waited TimeoutSeconds.
	timeoutRetryInterval = 1
)

// maxBatchBytes is ItemBatcher's MaxInputBytesPerBatch ceiling (256 KiB).
const maxBatchBytes = awslimits.SFNMaxBatchInputBytes

// Path is the artifact path of a workflow's definition.
func Path(w *ir.Workflow) string { return "statemachines/" + w.Name + ".asl.json" }

// Generate returns one definition per workflow that can be expressed. A workflow that cannot
// (queue-fed steps in Express executions, heartbeat ≥ timeout, ...) gets error
// diagnostics and no file: the backend never writes a definition AWS would refuse.
func Generate(f *ir.Fleet) ([]artifact.File, diag.Diagnostics) {
	var files []artifact.File
	var ds diag.Diagnostics
	for _, w := range f.Workflows {
		def, wds := build(w)
		ds = append(ds, wds...)
		if wds.HasErrors() {
			continue
		}
		b, err := encode(def)
		if err != nil {
			ds.Errorf("S000", w.Path, "workflow %q: cannot encode its state machine: %v", w.Name, err)
			continue
		}
		files = append(files, artifact.File{Path: Path(w), Bytes: b})
	}
	if f.HasApprovals() && !ds.HasErrors() {
		b, err := encode(recorder())
		if err != nil {
			ds.Errorf("S000", "/workflows", "approval recorder: cannot encode its state machine: %v", err)
		} else {
			files = append(files, artifact.File{Path: RecorderPath, Bytes: b})
		}
	}
	if f.Index != nil {
		f.Index.Locate(ds)
	}
	return files, ds.Sorted()
}

// definition is a state machine (or a Distributed Map's item processor without ProcessorConfig).
type definition struct {
	Comment       string `json:"Comment,omitempty"`
	QueryLanguage string `json:"QueryLanguage"`
	StartAt       string `json:"StartAt"`
	States        states `json:"States"`
}

type itemProcessor struct {
	ProcessorConfig processorConfig `json:"ProcessorConfig"`
	StartAt         string          `json:"StartAt"`
	States          states          `json:"States"`
}

type processorConfig struct {
	Mode          string `json:"Mode"`
	ExecutionType string `json:"ExecutionType"`
}

// state is every field fleetc emits for Task, Map and Fail states, in review order.
type state struct {
	Type                       string            `json:"Type"`
	QueryLanguage              string            `json:"QueryLanguage,omitempty"` // a JSONata state in a JSONPath machine
	Comment                    string            `json:"Comment,omitempty"`
	Resource                   string            `json:"Resource,omitempty"`
	Parameters                 any               `json:"Parameters,omitempty"` // *sendParams | *invokeParams
	ItemsPath                  string            `json:"ItemsPath,omitempty"`
	ItemSelector               map[string]string `json:"ItemSelector,omitempty"`
	ItemBatcher                *itemBatcher      `json:"ItemBatcher,omitempty"`
	MaxConcurrency             *int              `json:"MaxConcurrency,omitempty"`
	ToleratedFailurePercentage *int              `json:"ToleratedFailurePercentage,omitempty"`
	Label                      string            `json:"Label,omitempty"`
	ItemProcessor              *itemProcessor    `json:"ItemProcessor,omitempty"`
	ResultWriter               *resultWriter     `json:"ResultWriter,omitempty"`
	TimeoutSeconds             int64             `json:"TimeoutSeconds,omitempty"`
	HeartbeatSeconds           int64             `json:"HeartbeatSeconds,omitempty"`
	ResultSelector             map[string]string `json:"ResultSelector,omitempty"`
	ResultPath                 string            `json:"ResultPath,omitempty"`
	Retry                      []retrier         `json:"Retry,omitempty"`
	Catch                      []catcher         `json:"Catch,omitempty"`
	Error                      string            `json:"Error,omitempty"`
	ErrorPath                  string            `json:"ErrorPath,omitempty"`
	Cause                      string            `json:"Cause,omitempty"`
	CausePath                  string            `json:"CausePath,omitempty"`
	Output                     string            `json:"Output,omitempty"` // JSONata states only
	Next                       string            `json:"Next,omitempty"`
	End                        bool              `json:"End,omitempty"`
}

// sendParams are the SendMessage parameters; MessageGroupId only on FIFO queues.
type sendParams struct {
	QueueURL       string      `json:"QueueUrl"`
	MessageBody    messageBody `json:"MessageBody"`
	MessageGroupID string      `json:"MessageGroupId.$,omitempty"`
}

// invokeParams are the lambda:invoke parameters of a synchronous step. Payload is the worker's
// "Step Functions task" shape without a TaskToken: fleet-worker answers with the handler
// result as the function's response (runtime/lambda).
type invokeParams struct {
	FunctionName string        `json:"FunctionName"`
	Payload      invokePayload `json:"Payload"`
}

type invokePayload struct {
	ExecutionID    string `json:"execution_id.$"`
	State          string `json:"state.$"`
	TraceID        string `json:"trace_id.$"`
	Detail         string `json:"detail.$"`
	EnteredTime    string `json:"entered_time.$"`
	TimeoutSeconds int64  `json:"timeout_seconds"`
}

// messageBody is the worker's "Step Functions task" message shape.
type messageBody struct {
	TaskToken   string `json:"TaskToken.$"`
	ExecutionID string `json:"execution_id.$"`
	State       string `json:"state.$"`
	TraceID     string `json:"trace_id.$"`
	Detail      string `json:"detail.$"`
	// EnteredTime and TimeoutSeconds let the worker give the step only what remains of the
	// task's TimeoutSeconds, so it never starts work the state has already given up on.
	EnteredTime    string `json:"entered_time.$"`
	TimeoutSeconds int64  `json:"timeout_seconds"`
}

// resultWriter exports a Distributed Map's child results to S3.
type resultWriter struct {
	Resource   string             `json:"Resource"`
	Parameters resultWriterParams `json:"Parameters"`
}

type resultWriterParams struct {
	Bucket string `json:"Bucket"`
	Prefix string `json:"Prefix"`
}

type itemBatcher struct {
	MaxInputBytesPerBatch int64             `json:"MaxInputBytesPerBatch"`
	BatchInput            map[string]string `json:"BatchInput,omitempty"`
}

type retrier struct {
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds int      `json:"IntervalSeconds"`
	MaxAttempts     int      `json:"MaxAttempts"`
	BackoffRate     float64  `json:"BackoffRate"`
	MaxDelaySeconds int      `json:"MaxDelaySeconds,omitempty"`
	JitterStrategy  string   `json:"JitterStrategy,omitempty"`
}

type catcher struct {
	ErrorEquals []string `json:"ErrorEquals"`
	ResultPath  string   `json:"ResultPath"`
	Next        string   `json:"Next"`
}

// namedState keeps States in flow order (a Go map would sort them alphabetically).
type namedState struct {
	Name  string
	State *state
}

type states []namedState

func (ss states) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(s.Name)
		if err != nil {
			return nil, err
		}
		v, err := marshal(s.State)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal renders one piece of a definition (a state's name or body); encode a document (a
// definition, an input schema or example). Both are the one generated-JSON encoder's.
var marshal, encode = genjson.Compact, genjson.Encode

// tmpl escapes spec-provided text for Terraform's templatefile().
func tmpl(s string) string {
	return strings.NewReplacer("${", "$${", "%{", "%%{").Replace(s)
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// field is the JSONPath of a field of base: dot notation when it is an identifier, else brackets.
func field(base, name string) string {
	if identRE.MatchString(name) {
		return base + "." + name
	}
	return base + "['" + strings.ReplaceAll(name, "'", `\'`) + "']"
}

// groupPath is the MessageGroupId of a FIFO class: the group_by field, or without one the
// execution name, so that each run keeps its own order. SQS takes only a string group id and
// the group key may be declared as an integer (Q007 accepts both), so the field is always
// formatted as a string: States.Format('{}', 42) is "42".
func groupPath(a *ir.Agent, root string) string {
	if a.GroupBy == "" {
		return "$$.Execution.Name"
	}
	return fmt.Sprintf("States.Format('{}', %s)", field(root, a.GroupBy))
}

// build lowers one workflow to a definition, or explains why it cannot.
func build(w *ir.Workflow) (*definition, diag.Diagnostics) {
	var ds diag.Diagnostics
	if len(w.Steps) == 0 {
		ds.Errorf("P008", w.Path, "workflow %q has no steps", w.Name)
		return nil, ds
	}
	for _, st := range w.Steps {
		checkStep(w, st, &ds)
	}
	if ds.HasErrors() {
		return nil, ds
	}

	stateNames := ir.StateNames(w)
	comment := w.Description
	if comment == "" {
		comment = "Workflow " + w.Name + " (generated by fleetc)."
	}
	def := &definition{Comment: tmpl(comment), QueryLanguage: "JSONPath", StartAt: w.Steps[0].Name}
	var fails states
	for i, st := range w.Steps {
		failName := stateNames[i].Failed
		var s *state
		switch {
		case st.Approval != nil:
			s = approvalState(st)
		case st.FanOut != nil:
			s = fanOutState(w, st, stateNames[i])
		default:
			s = stepTask(w, st, "$")
		}
		s.ResultPath = field("$.steps", st.Name)
		next := stateNames[i].TimedOut
		if i+1 < len(w.Steps) {
			s.Next = w.Steps[i+1].Name
			next = s.Next
		} else {
			s.End = true
		}
		if st.Approval != nil && st.Approval.OnTimeout == spec.OnTimeoutContinue {
			// The timeout ({Error, Cause}) is the step's result; the workflow goes on.
			s.Catch = append(s.Catch, catcher{ErrorEquals: []string{"States.Timeout"}, ResultPath: s.ResultPath, Next: next})
		}
		s.Catch = append(s.Catch, catcher{ErrorEquals: []string{"States.ALL"}, ResultPath: "$.error", Next: failName})
		def.States = append(def.States, namedState{st.Name, s})
		if t := stateNames[i].TimedOut; t != "" {
			fails = append(fails, namedState{t, &state{Type: "Succeed", Comment: tmpl(st.Name + " timed out unanswered; on_timeout: continue ends the workflow here, the last step.")}})
		}
		fails = append(fails, namedState{failName, &state{
			Type:      "Fail",
			Comment:   tmpl(fmt.Sprintf("%s failed after its retries; the error and cause are the step's own.", st.Name)),
			ErrorPath: "$.error.Error",
			CausePath: "$.error.Cause",
		}})
	}
	def.States = append(def.States, fails...)
	return def, ds
}

// checkStep reports step settings that would make the definition invalid.
func checkStep(w *ir.Workflow, st *ir.Step, ds *diag.Diagnostics) {
	if st.Approval != nil {
		checkApproval(w, st, ds)
		return
	}
	p := st.Path
	if st.FanOut != nil {
		p += "/fan_out"
	}
	if st.Express(w) && !st.Synchronous(w) {
		d := ds.Errorf("S009", p+"/agent", "step %q runs in an Express execution on %s class %q, which can only be reached through its queue with a task token", st.Name, st.Agent.Runtime, st.Agent.Name)
		d.Detail = "Express executions support only request-response integrations (no .waitForTaskToken). Only lambda classes can be invoked synchronously; use type: standard (fan_out.execution_type: STANDARD) for queue-fed classes."
	}
	timeout, heartbeat := ir.Seconds(st.Timeout), ir.Seconds(st.Heartbeat)
	if timeout <= 0 {
		d := ds.Errorf("S002", p+"/timeout", "step %q has no positive timeout", st.Name)
		d.Detail = "A task-token task without TimeoutSeconds parks the execution forever when its worker dies."
	}
	if heartbeat > 0 && heartbeat >= timeout {
		d := ds.Errorf("S003", p+"/heartbeat", "step %q: heartbeat %ds is not below its timeout %ds", st.Name, heartbeat, timeout)
		d.Detail = "HeartbeatSeconds must be smaller than TimeoutSeconds; lower the heartbeat or raise the timeout."
	}
	if fo := st.FanOut; fo != nil {
		if fo.ExecutionType != "STANDARD" && fo.ExecutionType != "EXPRESS" {
			ds.Errorf("S010", p+"/execution_type", "fan-out %q: execution type %q is neither STANDARD nor EXPRESS", st.Name, fo.ExecutionType)
		}
		if fo.ToleratedFailurePercent < 0 || fo.ToleratedFailurePercent > 100 {
			ds.Errorf("S010", p+"/tolerated_failure_percent", "fan-out %q: tolerated failure %d%% is outside 0-100", st.Name, fo.ToleratedFailurePercent)
		}
		if fo.BatchInputBytes < 0 || fo.BatchInputBytes > maxBatchBytes {
			ds.Errorf("S010", p+"/batch_input", "fan-out %q: batch input %d bytes is outside 0-%d", st.Name, fo.BatchInputBytes, maxBatchBytes)
		}
		if fo.MaxConcurrency < 0 {
			ds.Errorf("S006", p+"/max_concurrency", "fan-out %q: max concurrency %d is negative", st.Name, fo.MaxConcurrency)
		}
		if segs, err := refpath.Parse(fo.Items); err != nil || len(segs) == 0 {
			ds.Errorf("S010", p+"/items", "fan-out %q: items %q is not a reference path to a field", st.Name, fo.Items)
		}
	}
}

// stepTask is st's agent task: a synchronous Lambda invoke inside Express executions on a
// lambda class, else the SQS callback.
func stepTask(w *ir.Workflow, st *ir.Step, root string) *state {
	a := st.Agent
	if st.Synchronous(w) {
		s := invokeState(st, root)
		s.Comment = tmpl(fmt.Sprintf("Agent step: invoke class %s's function (%s) synchronously; its response is the handler result.", a.Name, a.Lambda.FunctionName))
		return s
	}
	s := taskState(st, root)
	s.Comment = tmpl(fmt.Sprintf("Agent step: send to the %s queue (%s) with a task token and wait for the worker's SendTaskSuccess.", a.Name, a.Queue.Name))
	return s
}

// invokeState is the request-response Lambda task of a synchronous step, bounded by the
// Express 5-minute limit. The result lands at $.steps.<Name> as {"Payload": <handler result>}.
func invokeState(st *ir.Step, root string) *state {
	timeout := min(ir.Seconds(st.Timeout), ir.Seconds(ir.ExpressMax))
	s := &state{
		Type:     "Task",
		Resource: InvokeResource,
		Parameters: &invokeParams{
			FunctionName: "${" + ir.FunctionARNVar(st.Agent) + "}",
			Payload: invokePayload{
				ExecutionID: "$$.Execution.Id", State: "$$.State.Name", TraceID: field(root, "trace_id"),
				Detail: "$", EnteredTime: "$$.State.EnteredTime", TimeoutSeconds: timeout,
			},
		},
		TimeoutSeconds: timeout,
		ResultSelector: map[string]string{"Payload.$": "$.Payload"},
	}
	if st.Retries > 0 {
		s.Retry = append(s.Retry, retrier{
			ErrorEquals:     []string{"States.Timeout", ErrWorkerRetry},
			IntervalSeconds: timeoutRetryInterval, MaxAttempts: st.Retries, BackoffRate: backoffRate,
			JitterStrategy: "FULL",
		})
	}
	s.Retry = append(s.Retry, retrier{
		ErrorEquals:     lambdaTransient,
		IntervalSeconds: sqsRetryInterval, MaxAttempts: sqsRetryAttempts, BackoffRate: backoffRate,
		MaxDelaySeconds: sqsRetryMaxDelay, JitterStrategy: "FULL",
	})
	return s
}

// taskState is the SQS callback task of st; root is where trace_id and the group key live.
func taskState(st *ir.Step, root string) *state {
	a := st.Agent
	params := &sendParams{
		QueueURL: "${" + ir.QueueURLVar(a) + "}",
		MessageBody: messageBody{
			TaskToken:   "$$.Task.Token",
			ExecutionID: "$$.Execution.Id",
			State:       "$$.State.Name",
			TraceID:     field(root, "trace_id"),
			Detail:      "$",

			EnteredTime:    "$$.State.EnteredTime",
			TimeoutSeconds: ir.Seconds(st.Timeout),
		},
	}
	if a.FIFO {
		// Content-based deduplication is on for the queue; each dispatch carries a fresh token,
		// so a retry is never deduplicated away.
		params.MessageGroupID = groupPath(a, root)
	}
	s := &state{
		Type:             "Task",
		Resource:         Resource,
		Parameters:       params,
		TimeoutSeconds:   ir.Seconds(st.Timeout),
		HeartbeatSeconds: ir.Seconds(st.Heartbeat),
	}
	if st.Retries > 0 {
		// A timed-out token is dead: the retry dispatches fresh work with a new token.
		s.Retry = append(s.Retry, retrier{
			ErrorEquals:     []string{"States.Timeout", "States.HeartbeatTimeout"},
			IntervalSeconds: timeoutRetryInterval, MaxAttempts: st.Retries, BackoffRate: backoffRate,
			JitterStrategy: "FULL",
		})
	}
	s.Retry = append(s.Retry, retrier{
		ErrorEquals:     []string{ErrSQSService, ErrSQSClient},
		IntervalSeconds: sqsRetryInterval, MaxAttempts: sqsRetryAttempts, BackoffRate: backoffRate,
		MaxDelaySeconds: sqsRetryMaxDelay, JitterStrategy: "FULL",
	})
	return s
}

// fanOutState is a Distributed Map whose every item is one agent step in a STANDARD child
// execution. Items carry trace_id and, on FIFO classes, the group key next to the item. The
// child results go to S3 (ResultWriter); only the export's reference stays in the state.
func fanOutState(w *ir.Workflow, st *ir.Step, sn ir.StepStates) *state {
	child := sn.Item
	fo, a := st.FanOut, st.Agent
	carry := map[string]string{"trace_id.$": "$.trace_id"}
	if a.FIFO && a.GroupBy != "" {
		carry[a.GroupBy+".$"] = field("$", a.GroupBy)
	}
	item := map[string]string{"item.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"}
	root := "$"
	var batcher *itemBatcher
	if fo.BatchInputBytes > 0 {
		// Batched children receive {"Items": [...], "BatchInput": {...}}.
		batcher = &itemBatcher{MaxInputBytesPerBatch: fo.BatchInputBytes, BatchInput: carry}
		root = "$.BatchInput"
	} else {
		for k, v := range carry {
			item[k] = v
		}
	}
	task := stepTask(w, st, root)
	if sp, ok := task.Parameters.(*sendParams); ok {
		if a.FIFO && a.GroupBy != "" && batcher == nil {
			// One lane per item: the conversation's group alone would serialise the whole fan-out
			// behind one in-flight message (FIFO head-of-line blocking); each item keeps its own order.
			sp.MessageGroupID = fmt.Sprintf("States.Format('{}#{}', %s, $.index)", field("$", a.GroupBy))
		}
		task.Comment = tmpl(fmt.Sprintf("One %s item: send to the %s queue (%s) with a task token and wait for the worker.", st.Name, a.Name, a.Queue.Name))
	} else {
		task.Comment = tmpl(fmt.Sprintf("One %s item: invoke class %s's function (%s) synchronously in an EXPRESS child execution.", st.Name, a.Name, a.Lambda.FunctionName))
	}
	task.End = true

	conc, tol := fo.MaxConcurrency, fo.ToleratedFailurePercent
	return &state{
		Type:                       "Map",
		Comment:                    tmpl(fmt.Sprintf("Fan-out: one %s agent step per item of %s, as %s child executions of a Distributed Map.", a.Name, fo.Items, fo.ExecutionType)),
		ItemsPath:                  tmpl(fo.Items),
		ItemSelector:               item,
		ItemBatcher:                batcher,
		MaxConcurrency:             &conc,
		ToleratedFailurePercentage: &tol,
		Label:                      sn.Label,
		ItemProcessor: &itemProcessor{
			ProcessorConfig: processorConfig{Mode: "DISTRIBUTED", ExecutionType: fo.ExecutionType},
			StartAt:         child,
			States:          states{{child, task}},
		},
		ResultWriter: &resultWriter{
			Resource:   ResultWriterResource,
			Parameters: resultWriterParams{Bucket: "${" + ir.ClaimCheckBucketVar + "}", Prefix: tmpl(ir.ResultPrefix(w, st))},
		},
		// The Map's own output is {MapRunArn, ResultWriterDetails: {Bucket, Key}}; Key is the
		// run's manifest.json, which lists the SUCCEEDED/FAILED/PENDING result files.
		ResultSelector: map[string]string{"ResultWriterDetails.$": "$.ResultWriterDetails"},
	}
}
