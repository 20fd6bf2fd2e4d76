package check

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/asl/refpath"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec/diag"
)

var workflowRules = []Rule{
	{
		ID: "S001", Category: "workflows", Severity: diag.Error,
		Summary: "express workflow: Σ(step p95 × retry safety) ≤ 300 s, and no LLM step",
		Explain: `Express workflows stop at 5 minutes (300 s). A 12-step chain at 30 s per step is 360 s:
over the ceiling before a single tool call misbehaves. The math that bites is
chain_steps × p95_step_latency × retry_safety against 300 s, not the average case.
Formula: Σ over steps of step.p95 × (1 + retries) ≤ 300 s.
Anything with a model call inside (a model policy or an llm handler) belongs on Standard,
where the 1-year execution ceiling and per-transition persistence exist for it.
Fix: set the workflow's type: standard.`,
		Check: checkExpressBudget,
	},
	{
		ID: "S002", Category: "workflows", Severity: diag.Error,
		Summary: "every waitForTaskToken task has TimeoutSeconds",
		Explain: `A .waitForTaskToken task waits for SendTaskSuccess up to the one-year service quota. If
the worker holding the token dies, the execution stays parked: TimeoutSeconds is what
fails the state so a retry can dispatch fresh work with a new token.
fleetc defaults the timeout to 2 × step.max + visibility; writing timeout: 0s removes it.
Fix: set the step's timeout (e.g. 1h), or leave it to fleetc's default.`,
		Check: checkTaskTimeout,
	},
	{
		ID: "S003", Category: "workflows", Severity: diag.Error,
		Summary: "HeartbeatSeconds < TimeoutSeconds, ≥ 2 × the worker's heartbeat cadence, above the longest model call",
		Explain: `A missed heartbeat fails the task with States.HeartbeatTimeout even though the worker is
alive. fleet-worker sends SendTaskHeartbeat once per visibility extension (the class's
step.heartbeat, default visibility / 3); lambda classes have no cadence and send none.
The clock starts at dispatch: a FIFO message can first wait behind its group's running
step (≈ step.max) and the first heartbeat comes one cadence after the worker starts.
The window must also exceed the longest model call (the policy's and fallbacks' timeout).
Formula: heartbeat ≥ 2 × cadence, > longest model timeout, < timeout; any heartbeat on a
class with cadence 0 (lambda) is an error; warning when heartbeat < step.max + cadence
on a FIFO group the step shares with other steps.
Fix: raise the step's heartbeat, drop it on lambda classes (timeout alone bounds them) or
run the class on eks.`,
		Check: checkTaskHeartbeat,
	},
	{
		ID: "S004", Category: "workflows", Severity: diag.Error,
		Summary: "state kept by a workflow (input + step results) may exceed 256 KiB without claim-check",
		Explain: `Step Functions caps every state's input and output at 256 KiB (262,144 bytes). fleetc keeps
each step's result at $.steps.<Name> and every dispatch resends the whole state, so the
state grows by every result: 200 sub-queries × 2 KB would overflow (hence ResultWriter).
Formula: input (the first step class's inline payload, else ~1 KiB of ids) + Σ over agent
steps of min(payload.max, payload.claim_check_over) + 1 KiB per fan-out (only a
ResultWriter reference stays in state) ≤ 262,144 bytes. Classes without payload.max are
not summed (unknown); any one class inlining above 256 KiB is an error on its own.
Fix: lower payload.claim_check_over of the workflow's classes (e.g. 64KiB) so larger
results travel as S3 references, or split the workflow.`,
		Check: checkStatePayload,
	},
	{
		ID: "S005", Category: "workflows", Severity: diag.Error,
		Summary: "estimated history events per execution ≤ 25,000",
		Explain: `A Standard execution's history holds at most 25,000 events; past it the execution fails.
Estimate: 2 (execution started/ended) + Σ over steps of 6 events per attempt (state
entered, scheduled, started, submitted, succeeded/failed, exited) × (1 + retries).
Distributed Map children run as separate executions with their own histories.
Fix: split the workflow (start a child execution per phase), or lower step retries.`,
		Check: checkHistory,
	},
	{
		ID: "S006", Category: "workflows", Severity: diag.Error,
		Summary: "fan-out max concurrency ≤ 10,000; open Map Runs (concurrent conversations) ≤ 1,000",
		Explain: `A Distributed Map drives up to 10,000 concurrent child executions per Map Run, and an
account holds 1,000 open Map Runs; neither is adjustable. A fan-out per conversation opens
a Map Run per conversation, so 1,000 concurrent conversations exhaust the account cap.
Formula: traffic.concurrent_conversations ≤ 1,000 when a workflow fans out.
Fix: lower fan_out.max_concurrency; queue the fan-outs or share Map Runs across
conversations before you reach 1,000.`,
		Check: checkMapLimits,
	},
	{
		ID: "S007", Category: "workflows", Severity: diag.Error,
		Summary: "projected SendTaskSuccess/Failure/Heartbeat within 500/s (big-3) or 300/s",
		Explain: `SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat each have a token bucket of
3,000 refilling at 500/s in us-east-1, us-west-2 and eu-west-1 (1,500 / 300 elsewhere).
fleet-worker heartbeats every task-token message it holds once per visibility extension,
whatever the step's HeartbeatSeconds, so the class's cadence sets the rate.
Formula: callbacks/s = Σ over classes of their task-token steps/s (a class's steps/s ×
its workflow dispatches' share of its weight; rule-fed steps and synchronous Express
invokes make none); heartbeats/s = Σ of those steps in flight (steps/s × duration) ÷ the
class's step.heartbeat (lambda: none).
The seed's fleet calls back 125/s: 4× headroom.
Fix: batch callbacks per execution, lengthen step.heartbeat, shard across accounts, or
request a quota increase.`,
		Check: checkCallbackRate,
	},
	{
		ID: "S008", Category: "workflows", Severity: diag.Error,
		Summary: "projected transitions ≤ 5,000/s (Standard); StartExecution ≤ 6,000/s (Express)",
		Explain: `Standard workflows get 5,000 state transitions/s in the big-3 regions (the seed quotes no
other region; fleetc uses 5,000 everywhere as an upper bound); Express gets 6,000
StartExecution/s per region.
Formula: executions/s = conversations_per_minute ÷ 60 (each conversation runs the
workflow once); transitions/s = executions/s × (1 + Σ steps × (1 + retries)).
Distributed Map children are not counted (their item count is not in the spec).
Fix: request a quota increase, or move high-rate choreography off the state machine.`,
		Check: checkSFNRates,
	},
	{
		ID: "S009", Category: "workflows", Severity: diag.Error,
		Summary: "express executions: agent steps only on lambda classes (synchronous lambda:invoke), step.max ≤ 300 s",
		Explain: `Express executions (type: express, and fan-out children with execution_type: EXPRESS)
support only request-response integrations: no .waitForTaskToken, no .sync. There a step
on a lambda class invokes the class's function synchronously (lambda:invoke, no task
token) and gets the handler result as the response. A queue-fed class (eks, agentcore)
is reached only through its queue with a task token, so Express cannot dispatch it.
The execution stops at 5 minutes: a synchronous step whose class step.max exceeds 300 s
cannot finish inside it (fleetc caps the task's TimeoutSeconds at 300).
Fix: run queue-fed classes in a standard workflow (fan_out.execution_type: STANDARD), and
keep step.max of synchronously invoked lambda classes ≤ 5m.`,
		Check: checkExpressCallbacks,
	},
	{
		ID: "S010", Category: "workflows", Severity: diag.Error,
		Summary: "fan-out: DISTRIBUTED with an ExecutionType, batch input ≤ 262,144 bytes, tolerance 0–100 %, items a reference path",
		Explain: `A Distributed Map's ItemProcessor needs ProcessorConfig Mode DISTRIBUTED with an
ExecutionType (STANDARD or EXPRESS). Its ItemBatcher BatchInput is capped at 256 KiB
(262,144 bytes), like every state payload, and ToleratedFailurePercentage takes a whole
percent 0–100 (fleet.yaml's tolerated_failure_percent is an integer for that reason).
Its ItemsPath is a reference path: $ then fields (.name, ['name']) and indexes ([0]);
wildcards, deep scan (..), filters, slices, unions and functions make CreateStateMachine
fail, and $ alone is the state input, an object.
Fix: set fan_out.execution_type: STANDARD, keep batch_input ≤ 256KiB,
tolerated_failure_percent within 0–100, and items a path such as $.field.`,
		Check: checkFanOut,
	},
	{
		ID: "S011", Category: "models", Severity: diag.Error,
		Summary: "projected tokens/min of a model policy (class steps/s × traffic.tokens_per_step) within its tokens_per_minute",
		Explain: `A model policy's tokens_per_minute is the provider's token bucket. Traffic that needs more
tokens a minute than the bucket refills does not go faster: it "converts a backlog into a
wall of 429s, each of which costs a retry", and the queue grows without end (the seed:
size concurrency to the token budget, not the CPU).
Formula: Σ over the classes whose default policy it is of class steps/s (as fleetc capacity
splits the traffic) × agents.<class>.traffic.tokens_per_step × 60 ≤ tokens_per_minute.
Classes without tokens_per_step are not counted; fleetc capacity notes them.
Fix: raise the provider quota and tokens_per_minute, move classes to another policy, or
cut their tokens per step.`,
		Check: checkTokenBudget,
	},
	{
		ID: "S012", Category: "workflows", Severity: diag.Error,
		Summary: "approval timeout within 1 s – 365 d (the one-year task and Standard execution limit)",
		Explain: `An approval step is a .waitForTaskToken task: Step Functions fails it with States.Timeout
after its TimeoutSeconds, and no task waits, nor a Standard execution runs, longer than
one year (365 days; CreateStateMachine refuses a larger TimeoutSeconds). A zero timeout
would park the execution for the whole year if nobody answers.
Formula: 1 s ≤ approval.timeout ≤ 365 d (an error otherwise); a warning when the
approval's timeout plus every other step's timeout × (1 + retries) exceeds 365 d, since
the execution itself ends at one year, before the approval can time out.
Fix: shorten approval.timeout (e.g. 7d) and set on_timeout: continue if the workflow
should go on without an answer.`,
		Check: checkApprovalTimeout,
	},
	{
		ID: "S013", Category: "workflows", Severity: diag.Error,
		Summary: "approval steps only in standard workflows (Express cannot wait for a task token)",
		Explain: `Express executions support only request-response integrations: no .waitForTaskToken,
and they stop at 5 minutes. An approval waits for a person through a task token, so it
can only live in a Standard workflow.
Fix: set the workflow's type: standard, or move the approval into a standard workflow that
starts the express one.`,
		Check: checkApprovalExpress,
	},
}

func checkApprovalTimeout(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		var others time.Duration
		for _, st := range w.Steps {
			if st.Approval == nil {
				others += st.Timeout * time.Duration(1+st.Retries)
			}
		}
		for _, st := range w.Steps {
			if st.Approval == nil {
				continue
			}
			p := st.Path + "/approval/timeout"
			switch {
			case st.Timeout < time.Second:
				r.Add(p, fmt.Sprintf("workflow %s approval %s has no timeout: unanswered, it parks the execution for a year", w.Name, st.Name),
					"Set approval.timeout, e.g. 7d.")
			case st.Timeout > ir.TaskTokenMax:
				r.Add(p, fmt.Sprintf("workflow %s approval %s waits %s, past Step Functions' one-year (365d) task limit", w.Name, st.Name, dur(st.Timeout)),
					"Set approval.timeout to 365d or less.")
			case st.Timeout+others > ir.TaskTokenMax:
				r.Warn(p, fmt.Sprintf("workflow %s: approval %s (%s) plus its other steps' timeouts (%s) exceed the one-year Standard execution limit: the execution may end before the approval times out", w.Name, st.Name, dur(st.Timeout), dur(others)),
					"Shorten approval.timeout or the other steps' timeouts.")
			}
		}
	}
}

func checkApprovalExpress(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		if !w.IsExpress() {
			continue
		}
		for _, st := range w.Steps {
			if st.Approval != nil {
				r.Add(st.Path+"/approval",
					fmt.Sprintf("express workflow %s has approval step %s: Express executions cannot wait for a task token", w.Name, st.Name),
					"Set the workflow's type: standard.")
			}
		}
	}
}

// stepPath is the path of a step field, inside fan_out for fan-out steps.
func stepPath(st *ir.Step, field string) string {
	if st.FanOut != nil {
		return st.Path + "/fan_out/" + field
	}
	return st.Path + "/" + field
}

func checkExpressBudget(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		if w.Type != "express" {
			continue
		}
		var sum time.Duration
		for _, st := range w.Steps {
			if st.Agent == nil {
				continue
			}
			sum += st.Agent.StepP95 * time.Duration(1+st.Retries)
			if usesModel(st.Agent) {
				r.Add(stepPath(st, "agent"),
					fmt.Sprintf("express workflow %s runs model-calling class %s; LLM steps belong on Standard", w.Name, st.Agent.Name),
					"Set the workflow's type: standard.")
			}
		}
		if sum > expressMax {
			r.Add(at(f, w.Path+"/type", w.Path),
				fmt.Sprintf("express workflow %s needs Σ(p95 × (1 + retries)) = %s (%s), over the 300 s Express ceiling", w.Name, dur(sum), secs(sum)),
				"Set type: standard (1-year executions) or shorten the chain.")
		}
	}
}

func checkTaskTimeout(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			if st.Agent != nil && st.Timeout <= 0 {
				r.Add(stepPath(st, "timeout"),
					fmt.Sprintf("workflow %s step %s waits for a task token with no TimeoutSeconds: a dead worker parks the execution for up to a year", w.Name, st.Name),
					"Set the step's timeout (e.g. 1h), or omit it for fleetc's default (2 × step.max + visibility).")
			}
		}
	}
}

func checkTaskHeartbeat(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			a := st.Agent
			if st.Heartbeat <= 0 || a == nil {
				continue
			}
			path := stepPath(st, "heartbeat")
			if st.Timeout > 0 && st.Heartbeat >= st.Timeout {
				r.Add(path,
					fmt.Sprintf("step %s: heartbeat %s is not below its timeout %s", st.Name, dur(st.Heartbeat), dur(st.Timeout)),
					"Set the heartbeat below the timeout (the seed: 900 s heartbeat, 3,600 s timeout).")
			}
			if a.Heartbeat <= 0 {
				r.Add(path,
					fmt.Sprintf("step %s: heartbeat %s, but class %s (%s) sends no task heartbeats; a step not finished %s after dispatch fails with States.HeartbeatTimeout",
						st.Name, dur(st.Heartbeat), a.Name, a.Runtime, dur(st.Heartbeat)),
					fmt.Sprintf("Drop heartbeat from the step (its timeout %s still bounds a dead worker), or run class %s on eks.", dur(st.Timeout), a.Name))
				continue
			}
			cadenceOK := st.Heartbeat >= 2*a.Heartbeat
			if !cadenceOK {
				r.Add(path,
					fmt.Sprintf("step %s: heartbeat %s is below 2 × class %s's heartbeat cadence %s (%s); a live worker misses it",
						st.Name, dur(st.Heartbeat), a.Name, dur(a.Heartbeat), dur(2*a.Heartbeat)),
					fmt.Sprintf("fleet-worker sends SendTaskHeartbeat once per visibility extension (every %s). Raise the heartbeat to at least %s, or lower the class's step.heartbeat.",
						dur(a.Heartbeat), dur(2*a.Heartbeat)))
			}
			if call, m := longestModelCall(a, stepDeadline(a)); m != nil && st.Heartbeat <= call {
				r.Add(path,
					fmt.Sprintf("step %s: heartbeat %s is not above the longest model call (%s, policy %s); a live worker misses it", st.Name, dur(st.Heartbeat), dur(call), m.Name),
					fmt.Sprintf("Raise the heartbeat above %s, or lower the model policy's timeout.", dur(call)))
			}
			if first := a.StepMax + a.Heartbeat; cadenceOK && sharesFIFOGroup(st) && st.Heartbeat < first {
				r.Warn(path,
					fmt.Sprintf("step %s: heartbeat %s may expire before the first heartbeat: FIFO queue %s can hold the message behind its group's running step (step.max %s), then the worker beats after %s (%s)",
						st.Name, dur(st.Heartbeat), a.Queue.Name, dur(a.StepMax), dur(a.Heartbeat), dur(first)),
					fmt.Sprintf("The heartbeat clock starts when the message is sent. Raise the heartbeat to at least %s.", dur(first)))
			}
		}
	}
}

// sharesFIFOGroup says a step's message can queue behind other steps of its FIFO group:
// every dispatch carrying the group key, except unbatched fan-out items, which get a group
// of their own ("<key>#<index>"). Without group_by the group is the execution's name.
func sharesFIFOGroup(st *ir.Step) bool {
	a := st.Agent
	if !a.FIFO || a.GroupBy == "" {
		return false
	}
	return st.FanOut == nil || st.FanOut.BatchInputBytes > 0
}

// resultWriterRef is what a fan-out keeps in state once ResultWriter exports its results.
const resultWriterRef = 1 << 10

// controlInput estimates a workflow input that carries only ids and a payload_ref.
const controlInput = 1 << 10

func kib(n int64) string { return num(float64(n)/1024) + " KiB" }

func checkStatePayload(f *ir.Fleet, r *Reporter) {
	over := map[*ir.Agent]bool{}
	for _, a := range f.Agents {
		if len(a.Workflows) == 0 {
			continue
		}
		if n := inline(a); n > sfnMaxPayload {
			over[a] = true
			r.Add(at(f, a.Path+"/payload/claim_check_over", a.Path+"/payload/max", a.Path+"/payload"),
				fmt.Sprintf("class %s (workflow %s): payloads up to %s travel inline, above Step Functions' 256 KiB (262,144 bytes) state limit", a.Name, a.Workflows[0].Name, bytesOf(n)),
				"Set payload.claim_check_over to 256KiB or less (200KiB is fleetc's default).")
		}
	}
	for _, w := range f.Workflows {
		if len(w.Steps) == 0 || w.Steps[0].Agent == nil {
			continue
		}
		first := w.Steps[0].Agent
		input, inputNote := int64(controlInput), "~1 KiB of ids"
		if first.MaxPayload > 0 {
			input, inputNote = inline(first), "class "+first.Name+"'s inline payload"
		}
		total, declared, skip := input, false, false
		parts := []string{"input " + kib(input) + " (" + inputNote + ")"}
		var unknown []string
		for _, st := range w.Steps {
			a := st.Agent
			switch {
			case a == nil:
				continue
			case over[a]:
				skip = true // reported above: fix the class first
			case st.FanOut != nil:
				total += resultWriterRef
				parts = append(parts, st.Name+" "+kib(resultWriterRef)+" (ResultWriter reference)")
			case a.MaxPayload > 0:
				declared = true
				total += inline(a)
				parts = append(parts, st.Name+" "+kib(inline(a)))
			default:
				unknown = append(unknown, st.Name)
			}
		}
		if skip || !declared || total <= sfnMaxPayload {
			continue
		}
		detail := "Every result stays at $.steps.<Name> and every dispatch resends the whole state. Lower payload.claim_check_over of the workflow's classes (e.g. 64KiB) so larger results travel as S3 references, or split the workflow."
		if len(unknown) > 0 {
			detail += fmt.Sprintf(" Not counted (no payload.max): %s.", strings.Join(unknown, ", "))
		}
		r.Add(at(f, w.Path+"/steps", w.Path),
			fmt.Sprintf("workflow %s keeps up to %s (%s) in state: %s, above Step Functions' 256 KiB (262,144 bytes)",
				w.Name, kib(total), bytesOf(total), strings.Join(parts, " + ")),
			detail)
	}
}

// historyEvents estimates a Standard execution's history length.
func historyEvents(w *ir.Workflow) int {
	n := 2
	for _, st := range w.Steps {
		n += 6 * (1 + st.Retries)
	}
	return n
}

func checkHistory(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		if w.Type == "express" {
			continue // Express has no history cap
		}
		if n := historyEvents(w); n > sfnMaxHistory {
			r.Add(at(f, w.Path+"/steps", w.Path),
				fmt.Sprintf("workflow %s: an estimated %s history events per execution exceed Standard's 25,000 cap (%d steps)", w.Name, inum(n), len(w.Steps)),
				"Split the workflow into child executions, or lower step retries.")
		}
	}
}

func checkMapLimits(f *ir.Fleet, r *Reporter) {
	fansOut := false
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			if st.FanOut == nil {
				continue
			}
			fansOut = true
			if st.FanOut.MaxConcurrency > capacity.MapMaxConcurrency {
				r.Add(stepPath(st, "max_concurrency"),
					fmt.Sprintf("fan-out %s: max_concurrency %s exceeds Distributed Map's 10,000 child executions per Map Run", st.Name, inum(st.FanOut.MaxConcurrency)),
					"Set fan_out.max_concurrency to 10,000 or less (not adjustable).")
			}
		}
	}
	if fansOut && f.Traffic != nil && f.Traffic.ConcurrentConversations > capacity.OpenMapRuns {
		r.Add(at(f, "/traffic/concurrent_conversations", "/traffic"),
			fmt.Sprintf("%s concurrent conversations each open a Map Run; an account allows 1,000 open Map Runs", inum(f.Traffic.ConcurrentConversations)),
			"Queue the fan-outs or share Map Runs across conversations (the cap is not adjustable).")
	}
}

// checkCallbackRate holds the SendTask* calls, which share one token bucket (answers and
// heartbeats alike), to the bucket's refill.
func checkCallbackRate(f *ir.Fleet, r *Reporter) {
	answers, beats := capacity.Of(f).CallbacksPerSec()
	refill, _ := capacity.CallbackRefill(f.Region)
	if n := answers + beats; n > refill {
		r.Add(at(f, "/traffic/conversations_per_minute", "/traffic"),
			fmt.Sprintf("projected %s SendTask* calls/s (%s SendTaskSuccess/Failure + %s SendTaskHeartbeat) exceed the %s/s refill in %s",
				num(n), num(answers), num(beats), num(refill), f.Region),
			"Batch callbacks per execution, lengthen the classes' step.heartbeat (keeping it below half the visibility), shard state machines across accounts, or request a quota increase.")
	}
}

func checkSFNRates(f *ir.Fleet, r *Reporter) {
	m := capacity.Of(f)
	execs := m.ConversationsPerSec()
	if execs == 0 {
		return
	}
	path := at(f, "/traffic/conversations_per_minute", "/traffic")
	for _, w := range f.Workflows {
		if w.Type == "express" {
			if execs > capacity.ExpressStartPerSec {
				r.Add(path,
					fmt.Sprintf("express workflow %s: projected %s StartExecution/s exceeds 6,000/s", w.Name, num(execs)),
					"Request a quota increase or start executions in batches.")
			}
			continue
		}
		if tr := m.TransitionsPerSec(w); tr > capacity.TransitionsPerSec {
			r.Add(path,
				fmt.Sprintf("workflow %s: projected %s state transitions/s (%s executions/s × %d) exceeds 5,000/s", w.Name, num(tr), num(execs), capacity.TransitionsPerExecution(w)),
				"Request a quota increase, or move high-rate choreography to EventBridge and queues.")
		}
	}
}

func checkExpressCallbacks(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			a := st.Agent
			if a == nil || !st.Express(w) {
				continue
			}
			where, fix := "express workflow "+w.Name, "Set the workflow's type: standard."
			if st.FanOut != nil {
				where, fix = "fan-out "+st.Name+"'s EXPRESS child executions", "Set fan_out.execution_type: STANDARD."
			}
			if !st.Synchronous(w) {
				r.Add(stepPath(st, "agent"),
					fmt.Sprintf("%s cannot run class %s (runtime %s): a queue-fed class is reached only through its queue with a task token (.waitForTaskToken), which Express does not support", where, a.Name, a.Runtime),
					fix+" Only lambda classes can be invoked synchronously in Express executions.")
				continue
			}
			if a.StepMax > expressMax {
				r.Add(at(f, a.Path+"/step/max", stepPath(st, "agent")),
					fmt.Sprintf("%s invokes class %s synchronously, but its step.max %s exceeds the 5-minute Express limit", where, a.Name, dur(a.StepMax)),
					fix+" Or keep class "+a.Name+"'s step.max at 5m or less.")
			}
		}
	}
}

func checkFanOut(f *ir.Fleet, r *Reporter) {
	for _, w := range f.Workflows {
		for _, st := range w.Steps {
			fo := st.FanOut
			if fo == nil {
				continue
			}
			if fo.ExecutionType != "STANDARD" && fo.ExecutionType != "EXPRESS" {
				r.Add(stepPath(st, "execution_type"),
					fmt.Sprintf("fan-out %s has ExecutionType %q; a DISTRIBUTED ItemProcessor needs STANDARD or EXPRESS", st.Name, fo.ExecutionType),
					"Set fan_out.execution_type: STANDARD.")
			}
			if fo.BatchInputBytes > sfnMaxPayload {
				r.Add(stepPath(st, "batch_input"),
					fmt.Sprintf("fan-out %s: batch_input %s exceeds the 262,144-byte BatchInput limit", st.Name, bytesOf(fo.BatchInputBytes)),
					"Set fan_out.batch_input to 256KiB or less.")
			}
			if segs, err := refpath.Parse(fo.Items); err != nil {
				r.Add(stepPath(st, "items"),
					fmt.Sprintf("fan-out %s: items %q is not a reference path: %v", st.Name, fo.Items, err),
					"Write items as $.field or $.steps.<step>.field ($['name'] for names with special characters, [N] for an index).")
			} else if len(segs) == 0 {
				r.Add(stepPath(st, "items"),
					fmt.Sprintf("fan-out %s: items is $, the whole state input, which is an object (trace_id, steps), never the item array", st.Name),
					"Name the field that holds the array: items: $.field.")
			}
			if p := fo.ToleratedFailurePercent; p < 0 || p > maxToleratedPercent {
				r.Add(stepPath(st, "tolerated_failure_percent"),
					fmt.Sprintf("fan-out %s: tolerated_failure_percent %d is outside 0–100", st.Name, p),
					"Set fan_out.tolerated_failure_percent between 0 and 100.")
			}
		}
	}
}

// checkTokenBudget holds each model policy's projected token use, from the declared traffic
// and its classes' tokens_per_step, to the policy's tokens_per_minute.
func checkTokenBudget(f *ir.Fleet, r *Reporter) {
	m := capacity.Of(f)
	for _, p := range f.Models {
		use, classes, _ := m.PolicyTokens(p)
		if p.TokensPerMinute <= 0 || !capacity.Over(use, float64(p.TokensPerMinute)) {
			continue
		}
		var parts []string
		for _, a := range classes {
			if a.TokensPerStep > 0 {
				parts = append(parts, fmt.Sprintf("%s %s steps/s × %s", a.Name, num(m.ClassStepsPerSec(a)), inum(a.TokensPerStep)))
			}
		}
		r.Add(at(f, p.Path+"/tokens_per_minute", p.Path),
			fmt.Sprintf("model policy %s: projected %s tokens/min (%s tokens × 60) exceed its tokens_per_minute %s, %s× the budget",
				p.Name, num(use), strings.Join(parts, " + "), inum(p.TokensPerMinute), num(use/float64(p.TokensPerMinute))),
			fmt.Sprintf("Past the budget every step is a 429 and a retry, and the backlog only grows. Raise the provider quota and tokens_per_minute to at least %s, move classes to another policy, or cut their traffic.tokens_per_step.",
				num(math.Ceil(use))))
	}
}
