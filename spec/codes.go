package spec

import "github.com/fleetc/fleetc/spec/diag"

// Code documents one diagnostic code.
type Code = diag.Code

// Codes lists the input-error codes the loader and lowering report, sorted by ID. Rule IDs
// live in compiler/check.
func Codes() []Code {
	codes := []Code{
		{ID: "P000", Severity: "error", Summary: "internal error", Explain: "fleetc itself failed (for example its embedded schema did not compile). This is a bug: report it with the spec that caused it."},
		{ID: "P001", Severity: "error", Summary: "YAML syntax error", Explain: "The file is not well-formed YAML, holds more than one document, is nested too deeply, or expands aliases past fleetc's limits (a \"billion laughs\"). Fix the YAML at the position shown; indent with spaces, never tabs."},
		{ID: "P002", Severity: "error", Summary: "unknown field", Explain: "The field is not part of fleet.yaml version 1 at this place. Usually a typo: the message suggests the closest known field, and the detail lists every field allowed here. Unknown fields are errors so that a misspelt setting never silently falls back to a default."},
		{ID: "P003", Severity: "error", Summary: "wrong type", Explain: "The value has the wrong type (a string where a number belongs, a list where a map belongs), is a number fleetc cannot represent exactly (beyond ±2^53, infinite, NaN), or uses a YAML tag fleetc does not accept."},
		{ID: "P004", Severity: "error", Summary: "bad duration or size", Explain: "Durations are a whole number and a unit: ms, s, m, h, d (90s, 15m, 4d), at most 10 years. Sizes are a whole number and a unit: B, KB, KiB, MB, MiB, GB, GiB (256KiB), at most 1TiB. Nothing else is accepted: no fractions, no spaces, no bare numbers, so every timeout and limit means exactly one thing."},
		{ID: "P005", Severity: "error", Summary: "undefined reference", Explain: "A class, workflow or model policy names an event, agent or model policy that the spec does not define. The message suggests the closest defined name."},
		{ID: "P006", Severity: "error", Summary: "duplicate", Explain: "A key appears twice in one YAML map (YAML would silently keep only one), two workflow states would get the same name, or two spec names derive one AWS name (class researcher's dead-letter queue and class researcher-dlq's queue are both <fleet>-researcher-dlq; a class named delivery has the fleet's delivery DLQ as its DLQ). A clash of AWS names is reported on both spec names and names the resource that would be created twice; rename one of them."},
		{ID: "P007", Severity: "error", Summary: "name AWS would refuse", Explain: "A name, or a name fleetc derives from it, breaks an AWS naming rule: SQS queue names are at most 80 characters of [A-Za-z0-9_-] (.fifo included), rule and IAM role and Lambda names at most 64, state machines at most 80, S3 buckets 3-63 lower-case characters, ASL state names at most 80 (fleetc adds a <step>Failed state to every step and a <step>Item state inside fan-outs, so step names must leave room for the suffix). Generated names are <fleet>-<class>[-suffix]: shorten the fleet or class name."},
		{ID: "P008", Severity: "error", Summary: "invalid value", Explain: "The value is outside what fleet.yaml accepts here: a missing required field, a value not in the allowed set, a number out of range, or a block that needs exactly one of several fields."},
		{ID: "P009", Severity: "error", Summary: "unreadable file", Explain: "The spec could not be read: it does not exist, is a directory or another non-regular file (a device, a named pipe), is a symlink (or lies under one) that leads outside the working directory, is empty, is larger than 4 MiB, or is not UTF-8 text. Specs in pull requests may come from forks: fleetc reads only regular files inside the checkout, and at most 4 MiB of each."},
		{ID: "P010", Severity: "warning", Summary: "checks postponed", Explain: "The spec has input errors, so some checks could not run yet. fleetc still lowers and checks every part of the spec that parsed (each event, model policy, agent class and workflow is a part): references and rules are reported for them. Rules that involve a part with errors, fleet-wide rules and generation run once the errors are fixed; when the syntax or a top-level field is broken, nothing else can be checked. The note's detail says which parts wait."},
		{ID: "P011", Severity: "error", Summary: "past fleetc's input limits", Explain: "The spec asks for more work than fleetc accepts from one file: more than 2,000 events or agent classes, 500 model policies or workflows, 1,000 steps in a workflow, or an event detail or handler output schema of more than 5,000 values or 24 levels of nesting (20,000 values over all of them). Specs in pull requests can come from forks, so fleetc bounds what one file can cost a CI machine; real fleets stay far below these limits."},
	}
	return codes
}
