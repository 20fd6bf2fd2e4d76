// Package jsonreport holds what every machine-readable document fleetc prints has in common.
package jsonreport

// FormatVersion is the one version of every JSON document fleetc prints (validate, build,
// rules, plan, diff, capacity, graph, dlq, tools, schemas check and publish). It is an integer, and changes only when a
// field is removed or changes meaning; added fields keep it.
//
// 2: diff's category "breaking" became "contract" (every contract change, breaks set on those
// that break); compat kinds were split by direction (pattern-tightened became pattern-added
// and pattern-changed, type-changed also type-widened and type-narrowed, and so on).
const FormatVersion = 2
