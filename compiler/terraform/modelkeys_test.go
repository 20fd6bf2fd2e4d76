package terraform

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// Statements exactly as the worker role of a class whose policies name these keys must
// hold them (testdata/modelkeys.yaml): the secret by name with the suffix Secrets Manager
// appends, the parameter's ARN, and Decrypt on the secret's key through Secrets Manager.
const (
	readSecret = `  statement {
    sid       = "ReadModelKeySecrets"
    effect    = "Allow"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = ["arn:${data.aws_partition.current.partition}:secretsmanager:us-east-1:${data.aws_caller_identity.current.account_id}:secret:fleet/openai-??????"]
  }
`
	readParameter = `  statement {
    sid       = "ReadModelKeyParameters"
    effect    = "Allow"
    actions   = ["ssm:GetParameter"]
    resources = ["arn:${data.aws_partition.current.partition}:ssm:us-east-1:${data.aws_caller_identity.current.account_id}:parameter/fleet/litellm-key"]
  }
`
	// scraper's exec handler's own secrets (handler.secrets).
	readHandlerSecret = `  statement {
    sid       = "ReadHandlerSecretSecrets"
    effect    = "Allow"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = ["arn:${data.aws_partition.current.partition}:secretsmanager:us-east-1:${data.aws_caller_identity.current.account_id}:secret:fleet/vendor-??????"]
  }
`
	readHandlerParameter = `  statement {
    sid       = "ReadHandlerSecretParameters"
    effect    = "Allow"
    actions   = ["ssm:GetParameter"]
    resources = ["arn:${data.aws_partition.current.partition}:ssm:us-east-1:${data.aws_caller_identity.current.account_id}:parameter/fleet/search-key"]
  }
`
	decryptHandlerSecret = `  statement {
    sid       = "DecryptHandlerSecretSecrets"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = ["arn:aws:kms:us-east-1:111122223333:key/99990000-12ab-34cd-56ef-1234567890ab"]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["secretsmanager.us-east-1.amazonaws.com"]
    }
  }
`
	decryptSecret = `  statement {
    sid       = "DecryptModelKeySecrets"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = ["arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["secretsmanager.us-east-1.amazonaws.com"]
    }
  }
`
)

// A policy's api_key becomes a least-privilege read of exactly that secret or parameter,
// for exactly the classes that may call the policy (directly or as a fallback): writer
// (openai, keyed by a secret, falling back to proxy, keyed by a parameter) reads both and
// may decrypt the secret's customer-managed key through Secrets Manager only; reviewer
// (proxy) reads the parameter only; reader (Bedrock) reads no key, and no other role
// does. scraper's exec handler reads exactly its own secret and parameter (handler.secrets),
// under separate statements, and decrypts its secret's key through Secrets Manager only.
// The files pass terraform fmt, the provider schema and terraform validate, and
// carry the references, never a key (and tfsec finds nothing): the variable api_key_env names holds one in the
// shell that builds, and it appears in no generated file.
func TestModelKeyReads(t *testing.T) {
	const key = "sk-proj-do-not-leak-0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	src, err := os.ReadFile("testdata/modelkeys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := irtest.LoadSource(t, string(src))
	docs := map[string]string{}
	all := ""
	for _, fl := range generate(t, f) {
		all += string(fl.Bytes) + "\n"
	}
	for name, doc := range blocksOf(all, "data", "aws_iam_policy_document") {
		docs[name] = doc + "\n"
	}
	for class, want := range map[string][]string{
		"writer_worker":   {readSecret, readParameter, decryptSecret},
		"reviewer_worker": {readParameter},
		"reader_worker":   {},
		"scraper_worker":  {readHandlerSecret, readHandlerParameter, decryptHandlerSecret},
	} {
		doc, ok := docs[class]
		if !ok {
			t.Fatalf("no policy document %s", class)
		}
		for _, st := range want {
			if !strings.Contains(doc, st) {
				t.Errorf("%s lacks\n%s\nin\n%s", class, st, doc)
			}
		}
		if n := strings.Count(doc, "ModelKey") + strings.Count(doc, "HandlerSecret"); n != len(want) {
			t.Errorf("%s has %d key-read statements, want %d:\n%s", class, n, len(want), doc)
		}
	}
	for name, doc := range docs {
		if !strings.HasPrefix(name, "writer_") && !strings.HasPrefix(name, "reviewer_") && strings.Contains(doc, "ModelKey") {
			t.Errorf("%s grants a model key read:\n%s", name, doc)
		}
		if !strings.HasPrefix(name, "scraper_") && strings.Contains(doc, "HandlerSecret") {
			t.Errorf("%s grants a handler secret read:\n%s", name, doc)
		}
	}

	root := writeOut(t, f)
	err = walkFiles(root, func(path string, b []byte) {
		if strings.Contains(string(b), key) {
			t.Errorf("%s holds the API key", path)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := os.ReadFile(root + "/runtime/writer.json"); err != nil || !strings.Contains(string(cfg), `"secret": "fleet/openai"`) {
		t.Errorf("writer's runtime config does not carry the secret's reference (%v):\n%s", err, cfg)
	}
	if cfg, err := os.ReadFile(root + "/runtime/scraper.json"); err != nil || !strings.Contains(string(cfg), `"ssm": "/fleet/search-key"`) {
		t.Errorf("scraper's runtime config does not carry its handler secrets' references (%v):\n%s", err, cfg)
	}
	checkFmtAndSchema(t, root+"/"+Dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Errorf("terraform validate: %v", err)
	}
	// The name pattern's "?" wildcards are not a finding: tfsec flags "*" in IAM resources.
	findings, err := verifytest.Tfsec(root + "/" + Dir)
	if err != nil {
		verifytest.SkipIfMissing(t, err)
		t.Fatalf("tfsec: %v", err)
	}
	for _, f := range findings {
		t.Errorf("tfsec: %v", f)
	}
}

// walkFiles calls fn with every regular file under root.
func walkFiles(root string, fn func(path string, b []byte)) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := root + "/" + e.Name()
		if e.IsDir() {
			if err := walkFiles(p, fn); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(p, b)
	}
	return nil
}

// A secret named by ARN is granted as written when the ARN is complete (it ends in the
// suffix Secrets Manager appends), and with the suffix pattern when it is partial: IAM
// compares the complete ARN, so a partial one as written would match nothing.
func TestSecretARNPattern(t *testing.T) {
	g := &gen{f: irtest.LoadSource(t, mustRead(t, "testdata/modelkeys.yaml"))}
	for ref, want := range map[string]string{
		"arn:aws:secretsmanager:eu-west-1:111122223333:secret:fleet/openai-AbC123": `"arn:aws:secretsmanager:eu-west-1:111122223333:secret:fleet/openai-AbC123"`,
		"arn:aws:secretsmanager:eu-west-1:111122223333:secret:fleet/openai":        `"arn:aws:secretsmanager:eu-west-1:111122223333:secret:fleet/openai-??????"`,
		"fleet/openai": `"arn:${data.aws_partition.current.partition}:secretsmanager:us-east-1:${data.aws_caller_identity.current.account_id}:secret:fleet/openai-??????"`,
	} {
		if got, _ := inline(g.secretARN(ref)); got != want {
			t.Errorf("secretARN(%q) = %s, want %s", ref, got, want)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
