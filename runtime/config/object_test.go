package config

import (
	"strings"
	"testing"
)

// The reference round-trips, and a malformed one is refused before any call is made.
func TestParseObjectRef(t *testing.T) {
	ref := ObjectRef{Bucket: "fleet-claimcheck-us-east-1", Key: "config/runtime/a.json", Owner: "123456789012", SHA256: strings.Repeat("ab", 32)}
	got, err := ParseObjectRef(EnvConfigS3, ref.String())
	if err != nil || got != ref {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{
		"https://b/k?expected-bucket-owner=123456789012&sha256=" + ref.SHA256,
		"s3://b?expected-bucket-owner=123456789012&sha256=" + ref.SHA256,
		"s3://b/k?expected-bucket-owner=1234&sha256=" + ref.SHA256,
		"s3://b/k?expected-bucket-owner=123456789012&sha256=ABC",
		"s3://b/k?sha256=" + ref.SHA256,
	} {
		if _, err := ParseObjectRef(EnvConfigS3, bad); err == nil || !strings.Contains(err.Error(), EnvConfigS3) {
			t.Errorf("%s: err = %v, want a refusal naming %s", bad, err, EnvConfigS3)
		}
	}
}
