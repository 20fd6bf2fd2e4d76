package contract

import "encoding/json"

// DryRunCommand is fleet-worker's subcommand that runs a class's handler once on one step
// input and judges the result with the worker's own code: `fleetc invoke`'s engine. fleetc
// runs it as a process so that fleetc links no worker runtime.
const DryRunCommand = "dry-run"

// DryRun is what `fleet-worker dry-run` prints on stdout: the handler's result and how the
// worker would judge it.
type DryRun struct {
	Result json.RawMessage `json:"result,omitempty"`
	// Events are the completion events the worker would publish, each checked against its
	// schema.
	Events []DryRunEvent `json:"events"`
	// Code is the dead-letter or retry code the step would end with ("" = it would finish).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Retryable: the failure would release the work for another attempt, not dead-letter it.
	Retryable bool `json:"retryable,omitempty"`
}

// DryRunEvent is one completion event of a dry run.
type DryRunEvent struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail_type"`
	Detail     json.RawMessage `json:"detail"`
}
