// Package putevents is EventBridge's PutEvents arithmetic (limits and entry size) under the
// names the worker's batcher (runtime/events) uses; both are schemas/awslimits', which the
// compiler reads too.
package putevents

import "github.com/fleetc/fleetc/schemas/awslimits"

// Limits from the EventBridge PutEvents documentation (schemas/awslimits).
const (
	// MaxEntriesClassic is the per-request entry cap on a classic bus.
	MaxEntriesClassic = awslimits.PutEventsMaxEntriesClassic
	// MaxEntriesV2 is the per-request entry cap on an EventsV2 bus.
	MaxEntriesV2 = awslimits.PutEventsMaxEntriesV2
	// MaxRequestBytes is the PutEvents request size limit (1 MB). The
	// entries of one request total at most this; a single entry may use
	// all of it when it is alone.
	MaxRequestBytes = awslimits.PutEventsMaxRequestBytes
)

// EntrySize is an entry's size as AWS computes it for the request limit
// (awslimits.PutEventsEntrySize).
func EntrySize(source, detailType string, detail []byte, resources []string, timed bool) int {
	return awslimits.PutEventsEntrySize(source, detailType, detail, resources, timed)
}
