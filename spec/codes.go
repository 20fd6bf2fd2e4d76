package spec

// Code is one plain-input diagnostic the loader and lowering report.
type Code struct {
	ID, Summary, Explain string
}

// Codes lists the input-error codes, sorted by ID. Rule IDs live in compiler/check.
func Codes() []Code {
	return []Code{
		{"P000", "internal error", "fleetc itself failed (for example its embedded schema did not compile). This is a bug: report it with the spec that caused it."},
		{"P001", "YAML syntax error", "The file is not well-formed YAML, holds more than one document, is nested too deeply, or expands aliases past fleetc's limits (a \"billion laughs\"). Fix the YAML at the position shown; indent with spaces, never tabs."},
		{"P002", "unknown field", "The field is not part of fleet.yaml version 1 at this place. Usually a typo: the message suggests the closest known field, and the detail lists every field allowed here. Unknown fields are errors so that a misspelt setting never silently falls back to a default."},
		{"P003", "wrong type", "The value has the wrong type (a string where a number belongs, a list where a map belongs), is a number fleetc cannot represent exactly (beyond ±2^53, infinite, NaN), or uses a YAML tag fleetc does not accept."},
		{"P004", "bad duration or size", "Durations are a whole number and a unit: ms, s, m, h, d (90s, 15m, 4d), at most 10 years. Sizes are a whole number and a unit: B, KB, KiB, MB, MiB, GB, GiB (256KiB), at most 1TiB. Nothing else is accepted: no fractions, no spaces, no bare numbers, so every timeout and limit means exactly one thing."},
		{"P005", "undefined reference", "A class, workflow or model policy names an event, agent or model policy that the spec does not define. The message suggests the closest defined name."},
		{"P006", "duplicate", "A key appears twice in one YAML map (YAML would silently keep only one), or two workflow states would get the same name."},
		{"P007", "name AWS would refuse", "A name, or a name fleetc derives from it, breaks an AWS naming rule: SQS queue names are at most 80 characters of [A-Za-z0-9_-] (.fifo included), rule and IAM role and Lambda names at most 64, state machines at most 80, S3 buckets 3-63 lower-case characters. Generated names are <fleet>-<class>[-suffix]: shorten the fleet or class name."},
		{"P008", "invalid value", "The value is outside what fleet.yaml accepts here: a missing required field, a value not in the allowed set, a number out of range, or a block that needs exactly one of several fields."},
		{"P009", "unreadable file", "The spec could not be read: it does not exist, is a directory, is empty, is larger than 4 MiB, or is not UTF-8 text."},
	}
}
