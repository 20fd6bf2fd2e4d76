package terraform

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/spec"
)

// withKMS is the research fleet (queues, tables, bucket, functions, workflows, eks classes)
// with state.kms_key set to key.
func withKMS(t *testing.T, key string) string {
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(src) + "\nstate:\n  kms_key: " + key + "\n"
}

// blocksOf returns the bodies of every resource of typ in the generated files.
func blocksOf(all, kind, typ string) map[string]string {
	out := map[string]string{}
	re := regexp.MustCompile(`(?s)\n` + kind + ` "` + typ + `" "([a-z0-9_-]+)" \{\n(.*?)\n\}\n`)
	for _, m := range re.FindAllStringSubmatch("\n"+all, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// state.kms_key: the bucket (SSE-KMS with a bucket key), both tables, every queue and every
// log group use the key; every role that reads or writes S3 objects or SQS messages may use it
// through those services only; a created key rotates, has an alias and lets CloudWatch Logs
// and EventBridge use it. terraform validate accepts it with the real provider.
func TestKMSKey(t *testing.T) {
	const given = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tc := range []struct{ key, arn string }{{"create", "aws_kms_key.fleet.arn"}, {given, `"` + given + `"`}} {
		t.Run(tc.key[:6], func(t *testing.T) {
			f := irtest.LoadSource(t, withKMS(t, tc.key))
			files, ds := Generate(f, configs(t, f))
			if ds.HasErrors() {
				t.Fatal(ds)
			}
			all := ""
			for _, fl := range files {
				all += string(fl.Bytes) + "\n"
			}
			arn := regexp.QuoteMeta(tc.arn)
			check := func(kind, typ, want string, min int) {
				t.Helper()
				bs := blocksOf(all, kind, typ)
				if len(bs) < min {
					t.Errorf("%d %s %s, want at least %d", len(bs), kind, typ, min)
				}
				for name, b := range bs {
					if !regexp.MustCompile(want).MatchString(b) {
						t.Errorf("%s.%s does not use the key (%s):\n%s", typ, name, want, b)
					}
				}
			}
			check("resource", "aws_sqs_queue", `kms_master_key_id\s+= `+arn, 4)
			check("resource", "aws_cloudwatch_log_group", `kms_key_id\s+= `+arn, 1)
			check("resource", "aws_dynamodb_table", `server_side_encryption \{\n\s+enabled\s+= true\n\s+kms_key_arn = `+arn, 1)
			check("resource", "aws_s3_bucket_server_side_encryption_configuration",
				`sse_algorithm\s+= "aws:kms"\n\s+kms_master_key_id = `+arn+`(?s).*bucket_key_enabled = true`, 1)
			if strings.Contains(all, "sqs_managed_sse_enabled") || strings.Contains(all, `"AES256"`) {
				t.Error("an AWS-managed key is still configured beside the customer-managed one")
			}
			n := 0
			for name, doc := range blocksOf(all, "data", "aws_iam_policy_document") {
				if strings.HasSuffix(name, "_trust") || name == "fleet_key" || strings.Contains(doc, `"Deny"`) || strings.Contains(doc, "principals {") {
					continue // trust, key and resource policies
				}
				n += checkKeyGrants(t, name, doc, arn, "us-east-1")
			}
			if n == 0 {
				t.Error("no role may use the key")
			}
			key := blocksOf(all, "resource", "aws_kms_key")["fleet"]
			if (key != "") != (tc.key == "create") {
				t.Fatalf("aws_kms_key.fleet created: %v, kms_key %s", key != "", tc.key)
			}
			if tc.key == "create" {
				if !strings.Contains(key, "enable_key_rotation     = true") {
					t.Errorf("the key does not rotate:\n%s", key)
				}
				if a := blocksOf(all, "resource", "aws_kms_alias")["fleet"]; !strings.Contains(a, `"alias/research"`) {
					t.Errorf("alias: %s", a)
				}
				pol := blocksOf(all, "data", "aws_iam_policy_document")["fleet_key"]
				for _, want := range []string{`"logs.us-east-1.amazonaws.com"`, `"kms:EncryptionContext:aws:logs:arn"`, `"events.amazonaws.com"`, `:iam::${data.aws_caller_identity.current.account_id}:root"`} {
					if !strings.Contains(pol, want) {
						t.Errorf("key policy lacks %s:\n%s", want, pol)
					}
				}
				root := writeOut(t, f)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				checkFmtAndSchema(t, root+"/"+Dir)
				if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
					verifytest.SkipIfMissing(t, err)
					t.Errorf("terraform validate: %v", err)
				}
			}
		})
	}
}

// A given key must be in the fleet's region: the services refuse a key of another region.
func TestKMSKeyInAnotherRegion(t *testing.T) {
	file, ds := spec.Load("fleet.yaml", []byte(withKMS(t, "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab")))
	if file == nil || ds.HasErrors() {
		t.Fatal(ds)
	}
	_, ds = ir.Lower(file)
	for _, d := range ds {
		if d.Code == "P008" && d.Path == "/state/kms_key" && strings.Contains(d.Summary, "eu-west-1") {
			return
		}
	}
	t.Errorf("no P008 on /state/kms_key: %v", ds)
}

// checkKeyGrants checks that policy name may use the fleet's key (arn, a regexp) in region through
// exactly the services whose encrypted data it reads or writes, each through that service
// alone, with kms:GenerateDataKey only where it writes. It returns the grants found.
func checkKeyGrants(t *testing.T, name, doc, arn, region string) int {
	t.Helper()
	n := 0
	for _, svc := range []struct{ service, read, write string }{
		{"s3", "s3:GetObject", "s3:PutObject"}, {"sqs", "sqs:ReceiveMessage", "sqs:SendMessage"},
	} {
		reads, writes := strings.Contains(doc, `"`+svc.read+`"`), strings.Contains(doc, `"`+svc.write+`"`)
		var grant string
		for _, st := range strings.Split(doc, "statement {")[1:] {
			if strings.Contains(st, `"UseFleetKeyVia`+strings.ToUpper(svc.service)+`"`) {
				grant = st
			}
		}
		if (reads || writes) != (grant != "") {
			t.Errorf("policy %s: reads or writes %s data %v, may use the key through %s %v", name, svc.service, reads || writes, svc.service, grant != "")
			continue
		}
		if grant == "" {
			continue
		}
		n++
		actions := `"kms:Decrypt"`
		if writes {
			actions += `, "kms:GenerateDataKey"`
		}
		want := `(?s)actions\s+= \[` + actions + `\]\n\s+resources = \[` + arn + `\].*"kms:ViaService"\n\s+values\s+= \["` + svc.service + `.` + region + `.amazonaws.com"\]`
		if !regexp.MustCompile(want).MatchString(grant) {
			t.Errorf("policy %s: the key grant through %s is not [%s] on the key via %s alone:\n%s", name, svc.service, actions, svc.service, grant)
		}
	}
	return n
}

// The kitchen-sink fleet (kms_key: create) has roles that only read what the key encrypts
// (the async tools function reads its config object): each role's key grant follows its
// own S3 and SQS actions, so a reader gets kms:Decrypt alone, through one service.
func TestKeyGrantsFollowUse(t *testing.T) {
	all := ""
	for _, fl := range generate(t, lower(t, "../testdata/kitchen-sink/fleet.yaml")) {
		all += string(fl.Bytes) + "\n"
	}
	arn := regexp.QuoteMeta("aws_kms_key.fleet.arn")
	readers := 0
	for name, doc := range blocksOf(all, "data", "aws_iam_policy_document") {
		if strings.HasSuffix(name, "_trust") || name == "fleet_key" || strings.Contains(doc, `"Deny"`) || strings.Contains(doc, "principals {") {
			continue
		}
		checkKeyGrants(t, name, doc, arn, "eu-west-1")
		if strings.Contains(doc, "UseFleetKeyVia") && !strings.Contains(doc, "kms:GenerateDataKey") {
			readers++
		}
	}
	if readers == 0 {
		t.Error("no read-only role: the fixture no longer covers a Decrypt-only grant")
	}
}
