package ir_test

import (
	"strings"
	"testing"

	"github.com/fleetc/fleetc/compiler"
)

// TestClaimCheckBucketLength: a claim-check bucket as an environment names it
// (<bucket>-<env>) is held to S3's 3-63 characters at the boundary; the schema holds the
// written name to the same pattern, so only the qualified name can overflow.
func TestClaimCheckBucketLength(t *testing.T) {
	const body = `version: 1
fleet: demo
region: us-east-1
bus:
  name: demo
events:
  job.requested:
    version: 1
    source: demo.app
    detail:
      type: object
      required: [trace_id]
      properties:
        trace_id: { type: string }
models:
  fast:
    targets: [bedrock/us.anthropic.claude-haiku-4-5]
agents:
  worker:
    runtime: eks
    consumes: { event: job.requested }
    step: { p95: 30s, max: 2m }
    model: fast
    handler: { exec: ["/app/worker"] }
state:
  claim_check_bucket: BUCKET
environments:
  dev: {}
`
	bucket := func(n int) string { return "b" + strings.Repeat("a", n-1) }
	for _, c := range []struct {
		bucket  string
		invalid bool
	}{
		{bucket(59), false}, // 63 characters with -dev
		{bucket(60), true},  // 64
		{"b1", false},       // 6
	} {
		_, _, ds := compiler.LoadBytesEnv("fleet.yaml", []byte(strings.Replace(body, "BUCKET", c.bucket, 1)), "dev")
		var refused []string
		for _, d := range ds {
			if strings.Contains(d.Summary, "claim-check bucket name") {
				refused = append(refused, d.String())
			}
		}
		if got := len(refused) > 0; got != c.invalid {
			t.Errorf("bucket of %d characters in dev: refused %v, want %v (%v)", len(c.bucket), got, c.invalid, ds)
		}
		if c.invalid && !strings.Contains(strings.Join(refused, ""), "S3 allows 3-63 characters") {
			t.Errorf("message %v does not state S3's 3-63", refused)
		}
	}
}
