// Package putevents is EventBridge's PutEvents arithmetic (limits and entry size) without the
// AWS SDK: the worker's batcher (runtime/events) enforces it and the compiler checks emitted
// events against it, without linking the SDK's EventBridge client into fleetc.
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
	// timeBytes is what a set Time parameter costs in AWS's arithmetic.
	timeBytes = awslimits.PutEventsTimeBytes
)

// EntrySize is an entry's size as AWS computes it for the request limit: 14 bytes when its
// Time is set (timed), plus the UTF-8 byte lengths of Source, DetailType, Detail and each
// Resources entry. TraceHeader and EventBusName do not count. (Go strings are UTF-8, so len
// is the byte length.)
func EntrySize(source, detailType string, detail []byte, resources []string, timed bool) int {
	n := len(source) + len(detailType) + len(detail)
	if timed {
		n += timeBytes
	}
	for _, r := range resources {
		n += len(r)
	}
	return n
}
