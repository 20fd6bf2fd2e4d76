package trace

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/fleetc/fleetc/runtime/claimcheck"
)

// PayloadMaxBytes bounds the body a Payload keeps: enough to read a step's input or result
// on a page or a terminal line, small enough that a 1 MiB event does not flood either.
const PayloadMaxBytes = 4 << 10

// PayloadKind names what a payload is.
type PayloadKind string

// Payload kinds.
const (
	PayloadDetail PayloadKind = "detail" // an event's detail, as the bus carried it
	PayloadInput  PayloadKind = "input"  // what a step's handler read on stdin
	PayloadResult PayloadKind = "result" // what it wrote on stdout
)

// Payload is a message body an entry carries, bounded: Body is the JSON text (or the raw
// text when it is not JSON), cut at PayloadMaxBytes with a marker saying so. A claim-check
// reference the body carries (payload_ref, result_ref) is named in ClaimChecks: the bytes are
// in S3, not here.
type Payload struct {
	Kind        PayloadKind `json:"kind"`
	Body        string      `json:"body"`
	Bytes       int         `json:"bytes"` // the whole body's size
	Truncated   bool        `json:"truncated,omitempty"`
	ClaimChecks []string    `json:"claim_checks,omitempty"` // "payload_ref: s3://bucket/key"
}

// NewPayload bounds body.
func NewPayload(kind PayloadKind, body []byte) Payload {
	return BoundPayload(kind, body, len(body), true)
}

// BoundPayload bounds body, which stands for total bytes: the whole of them (whole), or their
// first part (a capture that kept no more). A redaction may have changed body's length: the
// size and the marker say what was sent.
func BoundPayload(kind PayloadKind, body []byte, total int, whole bool) Payload {
	p := Payload{Kind: kind, Bytes: total, ClaimChecks: claimChecks(body)}
	cut := len(body)
	if cut > PayloadMaxBytes {
		cut = PayloadMaxBytes
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut-- // never half a character
		}
	}
	p.Body = string(body[:cut])
	if cut < len(body) || !whole {
		p.Body += TruncatedMarker(cut, total)
		p.Truncated = true
	}
	return p
}

// TruncatedMarker ends a cut body.
func TruncatedMarker(shown, total int) string {
	return fmt.Sprintf("…[truncated: %d of %d bytes shown]", shown, total)
}

// claimChecks are the references of a JSON object's payload_ref and result_ref fields.
func claimChecks(body []byte) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	var out []string
	for _, field := range []string{claimcheck.RefField, claimcheck.ResultRefField} {
		var r claimcheck.Ref
		if raw, ok := top[field]; ok && json.Unmarshal(raw, &r) == nil && r.Validate() == nil {
			out = append(out, fmt.Sprintf("%s: s3://%s/%s", field, r.Bucket, r.Key))
		}
	}
	return out
}
