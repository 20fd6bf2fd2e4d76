package events

// Limits from the EventBridge PutEvents documentation (see the seed
// "Event-Driven AI Agent Fleets": entries per request and request size).
const (
	// MaxEntriesClassic is the per-request entry cap on a classic bus.
	MaxEntriesClassic = 10
	// MaxEntriesV2 is the per-request entry cap on an EventsV2 bus.
	MaxEntriesV2 = 100
	// MaxRequestBytes is the PutEvents request size limit (1 MB). The
	// entries of one request total at most this; a single entry may use
	// all of it when it is alone.
	MaxRequestBytes = 1_048_576
	// timeBytes is what a set Time parameter costs in AWS's arithmetic.
	timeBytes = 14
)

// Size is an entry's size as AWS computes it for the request limit: 14
// bytes when Time is set, plus the UTF-8 byte lengths of Source,
// DetailType, Detail and each Resources entry. TraceHeader and
// EventBusName do not count. (Go strings are UTF-8, so len is the byte
// length.)
func Size(e Entry) int {
	n := len(e.Source) + len(e.DetailType) + len(e.Detail)
	if !e.Time.IsZero() {
		n += timeBytes
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}
