// Package jsonreport holds what every machine-readable document fleetc prints has in common.
package jsonreport

// FormatVersion is the one version of every JSON document fleetc prints (validate, build,
// rules, plan, diff, schemas check and publish). It is an integer, and changes only when a
// field is removed or changes meaning; added fields keep it.
const FormatVersion = 1
