package ir

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetc/fleetc/spec"
)

// ASL limits: state names are at most 80 characters (asl-validator and Step Functions refuse
// longer ones); a Distributed Map's Label at most 40.
const (
	MaxStateName = 80
	MaxMapLabel  = 40
)

// Qualified is a name as environment env creates it: name-env. Every AWS and Kubernetes name
// of an environment goes through it once, here in lowering (the fleet name every derived
// name starts with, and the names the spec writes out: bus, tables, bucket, namespace,
// notify queues), so environments of one fleet never share a resource and the backends
// know nothing of environments. Without an environment, or for an unset name, it is name.
func Qualified(name, env string) string {
	if name == "" || env == "" {
		return name
	}
	return name + "-" + env
}

// SpecName is the fleet's name as the spec writes it, without the environment Qualified
// adds: what handler code sees (generated types), the same in every environment.
func (f *Fleet) SpecName() string {
	if f.Env == "" {
		return f.Name
	}
	return strings.TrimSuffix(f.Name, "-"+f.Env)
}

// StepStates are the ASL states fleetc generates for one workflow step.
type StepStates struct {
	Task   string // the step's own state: its name
	Failed string // the Fail state its Catch leads to: <name>Failed
	Item   string // fan-out only: the task inside the Map's item processor: <name>Item
	Label  string // fan-out only: the Map Run label (≤ 40 characters)
	// TimedOut: an approval that continues on timeout as the workflow's last step ends in
	// this Succeed state (<name>TimedOut), there being no next step to continue to.
	TimedOut string
}

// StateNames names every state of w, index-aligned with w.Steps, unique in the whole
// state machine (Map children included): a generated name that collides with another
// gets a number (AFailed, AFailed2). compiler/asl emits exactly these; validate checks them.
func StateNames(w *Workflow) []StepStates {
	used, labels := taken{}, taken{}
	for _, st := range w.Steps {
		used[st.Name] = true
	}
	out := make([]StepStates, len(w.Steps))
	for i, st := range w.Steps {
		out[i].Task = st.Name
		out[i].Failed = used.take(st.Name + "Failed")
		if st.FanOut != nil {
			out[i].Item = used.take(st.Name + "Item")
			label := st.Name
			if len(label) > MaxMapLabel {
				label = label[:MaxMapLabel-4]
			}
			out[i].Label = labels.take(label)
		}
		if st.Approval != nil && st.Approval.OnTimeout == spec.OnTimeoutContinue && i == len(w.Steps)-1 {
			out[i].TimedOut = used.take(st.Name + "TimedOut")
		}
	}
	return out
}

type taken map[string]bool

func (n taken) take(base string) string {
	name := base
	for i := 2; n[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	n[name] = true
	return name
}

// checkStateNames reports generated ASL state names past the 80-character limit at the spec
// value they derive from: the step's name when written, else the agent it is named after.
func (l *lowerer) checkStateNames() {
	for _, w := range l.f.Workflows {
		for i, names := range StateNames(w) {
			st := w.Steps[i]
			for _, n := range []string{names.Task, names.Failed, names.Item, names.TimedOut} {
				if len(n) <= MaxStateName {
					continue
				}
				path := st.Path + "/name"
				if sw := l.src.Workflows[w.Name]; sw == nil || i >= len(sw.Steps) || sw.Steps[i].Name == "" {
					path = st.Path // named after its agent
				}
				d := l.ds.Errorf("P007", path, "workflow %s: generated state name %q is %d characters; Step Functions allows %d", w.Name, n, len(n), MaxStateName)
				d.Detail = fmt.Sprintf("fleetc adds a Fail state <name>Failed to every step (and <name>Item inside a fan-out): keep step names at most %d characters.", MaxStateName-len("Failed"))
				break
			}
		}
	}
}
