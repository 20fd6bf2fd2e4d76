package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetc/fleetc/compiler/ir"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
	"github.com/fleetc/fleetc/spec/diag"
)

var idempotencyRules = []Rule{
	{
		ID: "I001", Category: "idempotency", Severity: diag.Error,
		Summary: "idempotency window ≥ bus max event age + queue retention",
		Explain: `Every hop delivers at least once: EventBridge retries a target for up to delivery.max_age,
and the queue redelivers for up to its retention. The idempotency record must outlive
both: "a record that expires while retries still reference it is a duplicate you
approved".
Formula: idempotency.window ≥ delivery.max_age + queue.retention (workflow-only classes:
queue.retention). With fleetc's defaults: 1h + 4d.
Fix: raise idempotency.window, or omit it for fleetc's default (exactly that sum).`,
		Check: checkIdempotencyWindow,
	},
	{
		ID: "I002", Category: "idempotency", Severity: diag.Error,
		Summary: "non_idempotent classes name an idempotency key, made of required event fields",
		Explain: `A worker that crashes after a tool ran but before the result was recorded runs the step
again: harmless for reads, an incident for send_invoice or refund_order. The key must
identify the work, not the delivery (never the SQS message id, which differs per
redelivery), and derive from things that do not change between attempts.
A non_idempotent class must name idempotency.key; every key field must be a required
property of the consumed event's detail, or the worker cannot build the key. A workflow
task step's detail is the execution input, whose generated schema requires the key fields;
a fan-out child's is only its item (index, item, trace_id, the FIFO group field; batched:
Items, BatchInput), so every key field must be one of those.
Fix: idempotency: { key: [<stable detail fields, e.g. jobId or trace_id, step>] }.`,
		Check: checkIdempotencyKey,
	},
	{
		ID: "T001", Category: "idempotency", Severity: diag.Warning,
		Summary: "synchronous tools with p95 above ~10 s should be async (start + status)",
		Explain: `A blocking tool that runs for minutes holds the agent session: the user stares at a
spinner, action timeouts fire, and retries start duplicate jobs. Tools that regularly
exceed ~5–10 s should be split into start_* (enqueue, return a job id) and
get_*_status (a narrow read of the jobs table).
Check: tool.async is false and step.p95 > 10 s.
Fix: set tool: { async: true } (fleetc creates the jobs table and status contract).`,
		Check: checkSyncTools,
	},
	{
		ID: "T002", Category: "idempotency", Severity: diag.Error,
		Summary: "an llm handler's async:<class> tool names an async tool class of the fleet",
		Explain: `An llm handler offers its model start_<class>, get_<class>_status and list_my_jobs with
handler.llm.tools: ["async:<class>"], and runs them in-process on the jobs table and the bus.
fleetc gives the class exactly what those tools need: the tools config of the named
classes (runtime config async_tools), PutEvents of their request events only, and job
items read and written as principal class:<its class>. A name that is not a class, or a
class without tool.async (no jobs, no start tool: the seed's split of start_* from the
worker applies only to async tools), leaves the worker nothing to run: it would refuse
to start. async:<class> takes no name=: the tools keep their class's names.
Fix: name a class of this fleet that has tool: { async: true }, or set it on that class.`,
		Check: checkAsyncToolRefs,
	},
}

func checkIdempotencyWindow(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		need := a.Queue.Retention
		formula := "queue retention " + dur(a.Queue.Retention)
		if a.Rule != nil {
			need += a.Delivery.MaxAge
			formula = "delivery max_age " + dur(a.Delivery.MaxAge) + " + " + formula
		}
		if a.Idempotency.Window >= need {
			continue
		}
		r.Add(idempotencyField(f, a, "window"),
			fmt.Sprintf("class %s: idempotency window %s is shorter than %s = %s; late retries become approved duplicates",
				a.Name, dur(a.Idempotency.Window), formula, dur(need)),
			fmt.Sprintf("Set idempotency.window to at least %s, or omit it for fleetc's default.", dur(need)))
	}
}

func checkIdempotencyKey(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.SideEffects == "non_idempotent" && len(a.Idempotency.Key) == 0 {
			r.Add(at(f, a.Path+"/side_effects", a.Path),
				fmt.Sprintf("non_idempotent class %s has no idempotency key: a redelivered step repeats its side effects", a.Name),
				"Set idempotency.key to detail fields that identify the work (e.g. [jobId] or [trace_id, step]).")
			continue
		}
		for i, k := range a.Idempotency.Key {
			path := at(f, a.Path+"/idempotency/key/"+strconv.Itoa(i), "/defaults/idempotency/key/"+strconv.Itoa(i))
			checkFanOutKey(r, a, k, path)
			if a.Consumes == nil || a.Consumes.Event == nil {
				continue
			}
			ev := a.Consumes.Event
			props, _ := ev.Detail["properties"].(map[string]any)
			if _, ok := props[k]; !ok {
				r.Add(path,
					fmt.Sprintf("idempotency key field %q is not a property of event %s (class %s)", k, ev.DetailType, a.Name),
					fmt.Sprintf("Use fields declared in events.%s.detail, or declare %s there and require it.", ev.DetailType, k))
				continue
			}
			if !listed(ev.Detail["required"], k) {
				r.Add(path,
					fmt.Sprintf("idempotency key field %q is not required in event %s (class %s): the key cannot always be built", k, ev.DetailType, a.Name),
					fmt.Sprintf("Add %s to events.%s.detail.required.", k, ev.DetailType))
			}
		}
	}
}

// checkFanOutKey refuses key field k of a class a workflow fans out to when the child's
// detail (the Distributed Map's item) cannot carry it: the worker would dead-letter every
// item (BadIdempotencyKey). A task step's detail is the execution input, whose generated
// schema requires the key fields.
func checkFanOutKey(r *Reporter, a *ir.Agent, k, path string) {
	for _, src := range ir.InputSources(a, a.Workflows) {
		if src.Open || src.Path == a.Path+"/consumes/event" || slices.Contains(src.Fields, k) {
			continue
		}
		r.Add(path,
			fmt.Sprintf("idempotency key field %q is not in the input of %s (%s), a fan-out child's detail: every item would be dead-lettered (BadIdempotencyKey)",
				k, src.What, strings.Join(src.Fields, ", ")),
			fmt.Sprintf("Key class %s on fields its fan-out items carry, or dispatch it as a task step, whose detail is the execution input (the workflow's input schema then requires %s).", a.Name, k))
	}
}

func checkSyncTools(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Tool == nil || a.Tool.Async || a.StepP95 <= syncToolP95 {
			continue
		}
		r.Warn(at(f, a.Path+"/tool/async", a.Path+"/tool"),
			fmt.Sprintf("tool class %s is synchronous with step.p95 %s: the agent session blocks while it runs", a.Name, dur(a.StepP95)),
			"Set tool.async: true: start_* returns a job id, get_*_status reads the jobs table.")
	}
}

// checkAsyncToolRefs reports every async:<class> tool of an llm handler that names no async
// tool class of the fleet, at the list element.
func checkAsyncToolRefs(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		if a.Handler.Kind != "llm" {
			continue
		}
		for i, t := range a.Handler.Tools {
			class, ok, err := rc.ParseAsyncTool(t)
			if !ok {
				continue
			}
			path := a.Path + "/handler/llm/tools/" + strconv.Itoa(i)
			c := f.Agent(class)
			switch {
			case err != nil:
				r.Add(path, fmt.Sprintf("class %s: %v", a.Name, err),
					fmt.Sprintf("Write %s%s: the model sees the class's own start, status and list tools.", rc.AsyncToolPrefix, class))
			case c == nil:
				r.Add(path, fmt.Sprintf("class %s: tool %q names no class of fleet %s", a.Name, t, f.Name),
					"Name a class of this fleet that has tool: { async: true }.")
			case c.Tool == nil || !c.Tool.Async:
				r.Add(path, fmt.Sprintf("class %s: tool %q names class %s, which is not an async tool (tool.async is not true)", a.Name, t, class),
					fmt.Sprintf("Set tool: { async: true } on class %s (fleetc then creates its start and status tools and the jobs table), or use an event: tool.", class))
			}
		}
	}
}
