package ir

import "time"

// ExpressMax is how long an Express execution (and an EXPRESS Distributed Map child) may run.
const ExpressMax = 5 * time.Minute

// Synchronous says the step runs as a request-response Lambda invoke (lambda:invoke, no task
// token) instead of an SQS callback: Express executions (an express workflow, or the EXPRESS
// children of a fan-out) cannot wait for a task token, and a lambda class's function can be
// called directly. Queue-fed classes (eks, agentcore) have no synchronous form.
func (st *Step) Synchronous(w *Workflow) bool {
	return st.Agent != nil && st.Agent.Lambda != nil && st.Express(w)
}

// Express says the step's agent work runs inside an Express execution.
func (st *Step) Express(w *Workflow) bool {
	if st.FanOut != nil {
		return st.FanOut.ExecutionType == "EXPRESS"
	}
	return w.IsExpress()
}

// IsExpress says the workflow's state machine is an Express one (no redrive, no task tokens).
func (w *Workflow) IsExpress() bool { return w.Type == "express" }

// TaskTokenMax is the longest a Step Functions task may wait for its task token, and how long
// a Standard execution may run at all: one year. An approval step's timeout is bounded by it.
const TaskTokenMax = 365 * 24 * time.Hour
