package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Key builds the work key from detail fields (in config order); with no
// fields it is the fallback (EventBridge event id, or SFN execution id +
// "/" + state). A field that is missing or empty is an error: a key that
// silently degrades would merge unrelated work.
func Key(detail json.RawMessage, fields []string, fallback string) (string, error) {
	if len(fields) == 0 {
		if fallback == "" {
			return "", fmt.Errorf("no idempotency key: the message has no event id / execution id and idempotency.key is empty")
		}
		return fallback, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(detail, &m); err != nil {
		return "", fmt.Errorf("idempotency key: detail is not an object: %w", err)
	}
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		raw, ok := m[f]
		if !ok || len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
			return "", fmt.Errorf("idempotency key: detail.%s is missing", f)
		}
		var sv string
		if err := json.Unmarshal(raw, &sv); err == nil {
			parts = append(parts, sv)
		} else {
			parts = append(parts, string(raw))
		}
	}
	if len(parts) == 1 && len(parts[0]) <= 512 {
		return parts[0], nil
	}
	// A JSON array is unambiguous whatever the values contain.
	joined, _ := json.Marshal(parts)
	if len(joined) <= 512 {
		return string(joined), nil
	}
	// DynamoDB keys are at most 2 KB; long compound keys are hashed.
	sum := sha256.Sum256(joined)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
