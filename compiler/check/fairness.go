package check

import (
	"fmt"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

var fairnessRules = []Rule{
	{
		ID: "Q014", Category: "queues", Severity: diag.Error,
		Summary: "fairness: a standard-queue eks/agentcore class, keyed by a required string or integer of the consumed event",
		Explain: `fairness {key} caps the steps of one tenant (one value of detail.<key>) a worker runs at
once; a message over the cap is re-sent to the back of the queue, never released, so
deferral never counts toward max_receives (docs/fairness.md). The cap lives in
fleet-worker's SQS poller (eks, the agentcore dispatcher): a Lambda event source mapping
spreads batches over function instances that share no count, so lambda is refused. A FIFO
class already runs one step per message group at a time (group_by = the tenant gives each
tenant its own lanes) and SQS fair queues are standard queues: FIFO is refused too.
The key must be in every message: a required string or integer of the consumed detail.
Fix: run the class on eks or agentcore with a standard queue; declare the key in the
event's detail properties and required.`,
		Check: checkFairnessKey,
	},
	{
		ID: "Q015", Category: "queues", Severity: diag.Warning,
		Summary: "fairness: max_in_flight_per_key below per_replica, and cardinality × cap fills a worker",
		Explain: `A per-key cap binds only below the worker's concurrency (scaling.per_replica): at or above
it one tenant can still take every slot, which is no fairness at all.
A cap also leaves slots idle when few tenants are active: with cardinality keys active
at once, a worker runs at most cardinality × max_in_flight_per_key steps, and the rest of
per_replica waits while the active tenants' backlogs are deferred.
Formula: max_in_flight_per_key < per_replica; when cardinality is declared,
cardinality × max_in_flight_per_key ≥ per_replica.
Fix: lower max_in_flight_per_key (default: half of per_replica, rounded up), or raise it
(or lower per_replica) so the declared tenants can fill a worker.`,
		Check: checkFairnessCap,
	},
}

func checkFairnessKey(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		fa := a.Fairness
		if fa == nil {
			continue
		}
		switch {
		case a.FIFO:
			r.Add(fa.Path,
				fmt.Sprintf("class %s: fairness on a FIFO class; its message groups already run one step per group at a time", a.Name),
				"Remove fairness and set ordering.group_by to the tenant field, or drop ordering for a standard queue.")
			continue
		case a.Runtime == "lambda":
			r.Add(fa.Path,
				fmt.Sprintf("class %s: fairness on a lambda class; the per-key cap lives in fleet-worker's poller, which Lambda's event source mapping replaces", a.Name),
				"Run the class on eks or agentcore, or remove fairness.")
			continue
		}
		if a.Consumes == nil || a.Consumes.Event == nil {
			continue // dispatched by workflows only: the state input carries the key
		}
		ev := a.Consumes.Event
		prop := requiredDetailKey(r, ev, fa.Path+"/key", "fairness key", fa.Key, "a message without it is never capped")
		if prop == nil {
			continue
		}
		if typ := prop["type"]; typ != "string" && typ != "integer" {
			r.Add(spec.Pointer("events", ev.DetailType, "detail", "properties", fa.Key),
				fmt.Sprintf("fairness key %q of event %s must be a string or an integer, not %v", fa.Key, ev.DetailType, typeName(typ)),
				"Declare the property as {type: string, maxLength: 128} (a longer key is capped but its copies carry no MessageGroupId).")
		}
	}
}

func checkFairnessCap(f *ir.Fleet, r *Reporter) {
	for _, a := range f.Agents {
		fa := a.Fairness
		if fa == nil || a.FIFO || a.Runtime == "lambda" {
			continue // Q014
		}
		slots := a.Scaling.PerReplica
		if fa.MaxInFlight >= slots {
			r.Add(fa.Path+"/max_in_flight_per_key",
				fmt.Sprintf("class %s: max_in_flight_per_key %d is not below the worker's %d slots: one tenant can still take them all", a.Name, fa.MaxInFlight, slots),
				fmt.Sprintf("Set max_in_flight_per_key below scaling.per_replica (%d), e.g. %d.", slots, ir.FairShare(slots)))
			continue
		}
		if n := fa.Cardinality; n > 0 && n*fa.MaxInFlight < slots {
			r.Add(fa.Path+"/cardinality",
				fmt.Sprintf("class %s: %d keys × max_in_flight_per_key %d fill %d of the worker's %d slots; the rest stay idle while those tenants have a backlog", a.Name, n, fa.MaxInFlight, n*fa.MaxInFlight, slots),
				fmt.Sprintf("Raise max_in_flight_per_key to %d, or lower scaling.per_replica to %d.", (slots+n-1)/n, n*fa.MaxInFlight))
		}
	}
}
