package events

import "github.com/fleetc/fleetc/runtime/events/putevents"

// Size is an entry's size as AWS computes it for the request limit (putevents.EntrySize).
func Size(e Entry) int {
	return putevents.EntrySize(e.Source, e.DetailType, e.Detail, e.Resources, !e.Time.IsZero())
}
