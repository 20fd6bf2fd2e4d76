package terraform

import (
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"

	"github.com/fleetc/fleetc/schemas/jobs"
)

// state emits the state plane: the idempotency table, the async-tool jobs table and the
// claim-check bucket.
func (g *gen) state() {
	st := g.f.State
	fl := g.file("state.tf").owner(PartState, "/state")
	g.kmsKey(fl)

	g.claim("aws_dynamodb_table", "idempotency", "/state")
	t := fl.resource("aws_dynamodb_table", "idempotency",
		"pk = work key, sk = class; conditional puts claim a step, expires_at (TTL) ends the window.")
	t.set("name", str(st.IdempotencyTable))
	t.set("billing_mode", str("PAY_PER_REQUEST"))
	t.set("hash_key", str("pk"))
	t.set("range_key", str("sk"))
	for _, k := range []string{"pk", "sk"} {
		at := t.nested("attribute")
		at.set("name", str(k))
		at.set("type", str("S"))
	}
	g.tableHardening(t, true)

	if st.JobsTable != "" {
		g.claim("aws_dynamodb_table", "jobs", "/state/jobs_table")
		j := fl.resource("aws_dynamodb_table", "jobs",
			"Async tool jobs (schemas/jobs.Record), "+jobs.KeyPrefix+"<id>; "+jobs.OwnerIndex+" lists a principal's jobs in a session,",
			"newest first; "+jobs.AttrExpiresAt+" (epoch seconds, the class's idempotency window) expires them.")
		j.set("name", str(st.JobsTable))
		j.set("billing_mode", str("PAY_PER_REQUEST"))
		j.set("hash_key", str(jobs.AttrPK))
		for _, k := range []string{jobs.AttrPK, jobs.AttrOwner, jobs.AttrCreatedAt} {
			at := j.nested("attribute")
			at.set("name", str(k))
			at.set("type", str("S"))
		}
		gsi := j.nested("global_secondary_index")
		// hash_key, not key_schema: key_schema is newer than the 5.100 floor of the constraint.
		gsi.set("name", str(jobs.OwnerIndex))
		gsi.set("hash_key", str(jobs.AttrOwner))
		gsi.set("range_key", str(jobs.AttrCreatedAt))
		gsi.set("projection_type", str("ALL"))
		tt := j.nested("ttl")
		tt.set("attribute_name", str(jobs.AttrExpiresAt))
		tt.set("enabled", boolean(true))
		g.tableHardening(j, false)
	}

	g.claim("aws_s3_bucket", "claimcheck", "/state")
	b := fl.resource("aws_s3_bucket", "claimcheck",
		"Claim-check payloads: anything over a class's threshold travels as an S3 reference.")
	b.set("bucket", str(st.ClaimCheckBucket))

	g.claim("aws_s3_bucket_public_access_block", "claimcheck", "/state")
	pab := fl.resource("aws_s3_bucket_public_access_block", "claimcheck")
	pab.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
	for _, k := range []string{"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"} {
		pab.set(k, boolean(true))
	}

	g.claim("aws_s3_bucket_server_side_encryption_configuration", "claimcheck", "/state")
	if k := g.keyARN(); k != nil {
		sse := fl.resource("aws_s3_bucket_server_side_encryption_configuration", "claimcheck")
		sse.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
		rule := sse.nested("rule")
		def := rule.nested("apply_server_side_encryption_by_default")
		def.set("sse_algorithm", str("aws:kms"))
		def.set("kms_master_key_id", k)
		// One data key per bucket, not per object: fewer KMS calls for many small payloads.
		rule.set("bucket_key_enabled", boolean(true))
	} else {
		sse := fl.resource("aws_s3_bucket_server_side_encryption_configuration", "claimcheck",
			tfsecIgnore(TfsecCustomerKey, "SSE-S3 (AES256) unless state.kms_key names a customer-managed key: payloads expire, and no key policy is needed."))
		sse.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
		sse.nested("rule").nested("apply_server_side_encryption_by_default").set("sse_algorithm", str("AES256"))
	}

	g.tlsOnly(fl)

	days := int64((st.ClaimCheckExpiry + 24*time.Hour - 1) / (24 * time.Hour))
	if days < 1 {
		days = 1
	}
	g.claim("aws_s3_bucket_lifecycle_configuration", "claimcheck", "/state")
	lc := fl.resource("aws_s3_bucket_lifecycle_configuration", "claimcheck",
		"Payloads are transient: they expire, so the bucket is not versioned (no noncurrent copies to keep).",
		"Only the payload prefixes expire: the config objects under "+configPrefix+" live as long as their functions.")
	lc.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
	for _, root := range ir.ClaimCheckRoots() {
		rule := lc.nested("rule")
		rule.set("id", str("expire-claim-checks-"+strings.TrimSuffix(root, "/")))
		rule.set("status", str("Enabled"))
		rule.nested("filter").set("prefix", str(root))
		rule.nested("expiration").set("days", num(days))
	}
	g.retainedConfigs(lc)
}

// tlsOnly denies every request to the claim-check bucket that does not arrive over TLS
// (aws:SecureTransport false), whoever sends it: payloads never travel in clear text.
func (g *gen) tlsOnly(fl *file) {
	bucket := ref("aws_s3_bucket", "claimcheck", "arn")
	doc := g.policyDoc(fl, "claimcheck_tls_only", "/state", []stmt{{
		sid: "DenyInsecureTransport", deny: true, actions: []string{"s3:*"},
		resources:  []tokens{bucket, tmpl(interp(bucket), lit("/*"))},
		principal:  &principal{typ: "*", ids: []string{"*"}},
		conditions: []condition{{"Bool", "aws:SecureTransport", []tokens{str("false")}}},
	}})
	g.claim("aws_s3_bucket_policy", "claimcheck", "/state")
	p := fl.resource("aws_s3_bucket_policy", "claimcheck", "TLS only: any request over plain HTTP is denied.")
	p.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
	p.set("policy", doc)
	// S3 refuses a policy while the public access block is being set up (409 OperationAborted).
	p.set("depends_on", list(ref("aws_s3_bucket_public_access_block", "claimcheck")))
}

// TfsecCustomerKey is tfsec's check for a bucket without a customer-managed key.
const TfsecCustomerKey = "aws-s3-encryption-customer-key"

// tableHardening adds point-in-time recovery, encryption at rest (with the fleet's key when
// it has one) and (optionally) the TTL.
func (g *gen) tableHardening(t block, ttl bool) {
	if ttl {
		tt := t.nested("ttl")
		tt.set("attribute_name", str(ir.IdempotencyExpiresAttr))
		tt.set("enabled", boolean(true))
	}
	t.nested("point_in_time_recovery").set("enabled", boolean(true))
	sse := t.nested("server_side_encryption")
	sse.set("enabled", boolean(true))
	if k := g.keyARN(); k != nil {
		sse.set("kms_key_arn", k)
	}
}
