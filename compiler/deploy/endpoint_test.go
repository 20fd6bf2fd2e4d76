package deploy

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/internal/hcltest"
)

// Against an emulator, Terraform never sees a way to real credentials: before, a set
// AWS_PROFILE kept the operator's profile (and a request the override missed reached AWS
// signed by it).
func TestEmulatorEnvironmentHasOnlyDummyCredentials(t *testing.T) {
	environ := []string{
		"AWS_PROFILE=prod", "AWS_DEFAULT_PROFILE=prod", "AWS_ACCESS_KEY_ID=AKIAREALKEY",
		"AWS_SECRET_ACCESS_KEY=real-secret", "AWS_SESSION_TOKEN=real-session",
		"AWS_ROLE_ARN=arn:aws:iam::111122223333:role/ci", "AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/token",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials",
		"AWS_SHARED_CREDENTIALS_FILE=/home/ci/.aws/credentials", "HOME=/home/ci", "PATH=/usr/bin",
		"AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=https://bedrock-agentcore.us-east-1.amazonaws.com",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true",
	}
	env := terraformEnv(environ, "http://127.0.0.1:4566")
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := env[k]; ok && strings.Contains(kv, v) && k != "HOME" && k != "PATH" {
			t.Errorf("%s=%s reaches terraform", k, v)
		}
	}
	if env["AWS_ACCESS_KEY_ID"] != "test" || env["AWS_SECRET_ACCESS_KEY"] != "test" || env["AWS_CONFIG_FILE"] != os.DevNull ||
		env["AWS_EC2_METADATA_DISABLED"] != "true" || env["HOME"] != "/home/ci" || env["AWS_ENDPOINT_URL"] != "http://127.0.0.1:4566" {
		t.Errorf("emulator environment: %v", env)
	}
	// Against AWS the environment passes through.
	env = terraformEnv(environ, "")
	if env["AWS_PROFILE"] != "prod" || env["AWS_SESSION_TOKEN"] != "real-session" || env["AWS_ACCESS_KEY_ID"] != "AKIAREALKEY" {
		t.Errorf("AWS environment changed: %v", env)
	}
}

func TestEndpointMustBeLoopback(t *testing.T) {
	for _, ok := range []string{"", "http://127.0.0.1:4566", "http://localhost:4566", "http://[::1]:4566", "https://127.0.0.2"} {
		if err := CheckEndpoint(ok, false); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.5:4566", "https://s3.amazonaws.com", "http://localhost.evil.example:4566", "ftp://127.0.0.1", "127.0.0.1:4566"} {
		if err := CheckEndpoint(bad, false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckEndpoint("http://10.0.0.5:4566", true); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// The override points at the emulator every service the generated types call, their
// implicit calls (KMS behind DynamoDB encryption) and the provider's own (STS, IAM),
// derived from the configuration: AgentCore included where a class runs on it. Before, a
// fixed list missed bedrockagentcore, and an emulator run reached AWS.
func TestEmulatorEndpointsFollowTheGeneratedTypes(t *testing.T) {
	set := generate(t, "../testdata/kitchen-sink/fleet.yaml")
	o, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	var eps, prov *hcltest.Body
	if p := hcltest.Parse(t, OverrideFile, o.Bytes).Block("provider"); p != nil {
		prov = p.Body
		if e := prov.Block("endpoints"); e != nil {
			eps = e.Body
		}
	}
	if eps == nil {
		t.Fatalf("no endpoints block:\n%s", o.Bytes)
	}
	for _, k := range []string{"bedrockagentcore", "dynamodb", "kms", "sts", "iam", "sqs", "lambda", "sfn", "events", "logs", "s3"} {
		if _, ok := eps.Attrs[k]; !ok {
			t.Errorf("endpoint %s not pointed at the emulator", k)
		}
	}
	// Types a gap drops need no endpoint: the schema registry is left out on kumo.
	if _, ok := eps.Attrs["schemas"]; ok {
		t.Error("schemas endpoint set though every schemas resource is left out")
	}
	if v, ok := prov.Attrs["max_retries"]; !ok {
		t.Error("no max_retries: a missed endpoint would retry for minutes")
	} else if !v.IsKnown() || !v.Equals(cty.NumberIntVal(EmulatorMaxRetries)).True() {
		t.Errorf("max_retries = %#v", v)
	}
	// The minimal fleet runs on the 5.x provider, which has no bedrockagentcore endpoint.
	o, err = EmulatorOverride(generate(t, "../../examples/minimal/fleet.yaml"), "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(o.Bytes), "bedrockagentcore") {
		t.Errorf("bedrockagentcore endpoint without an agentcore class:\n%s", o.Bytes)
	}
}

// A resource type fleetc does not know the service of fails the emulator override, naming
// it, unless a gap leaves it out.
func TestUnknownTypeUnderEndpointIsAnError(t *testing.T) {
	set := generate(t, "testdata/e2e.yaml")
	withBlock(set, artifact.Block{Kind: artifact.KindResource, Type: "aws_route53_zone", Name: "x", File: "terraform/extra.tf",
		Attrs: []artifact.Attr{{Path: "name", Src: `"example.com"`}}})
	_, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps)
	if err == nil || !strings.Contains(err.Error(), "aws_route53_zone.x") {
		t.Fatalf("err = %v, want one naming aws_route53_zone.x", err)
	}
	gaps := append(slices.Clone(KumoGaps), Gap{ID: "no-dns", Resource: "aws_route53_zone", Drop: true})
	if _, err := EmulatorOverride(set, "http://127.0.0.1:4566", gaps); err != nil {
		t.Fatalf("a dropped unknown type: %v", err)
	}
}

// withBlock adds a block to the Terraform module recorded in set.
func withBlock(set *artifact.Set, b artifact.Block) {
	m := *set.Module()
	m.Blocks = append(slices.Clone(m.Blocks), b)
	set.SetModule(m)
}

// A data source is read through the provider too: its type needs an emulator endpoint as a
// resource's does. Only the module the backend recorded is the configuration: files added
// to the set beside it, a .tf file among them, are not read.
func TestOverrideReadsTheConfigurationOnly(t *testing.T) {
	set := generate(t, "testdata/e2e.yaml")
	withBlock(set, artifact.Block{Kind: artifact.KindData, Type: "aws_route53_zone", Name: "x", File: "terraform/zone.tf",
		Attrs: []artifact.Attr{{Path: "name", Src: `"example.com"`}}})
	if _, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps); err == nil || !strings.Contains(err.Error(), "data.aws_route53_zone.x") {
		t.Fatalf("err = %v, want one naming data.aws_route53_zone.x", err)
	}
	set = generate(t, "testdata/e2e.yaml")
	want, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []artifact.File{
		{Path: "terraform/zone.tf", Bytes: []byte("resource \"aws_route53_zone\" \"x\" {\n  name = \"example.com\"\n}\n")},
		{Path: "examples/zone.tf", Bytes: []byte("resource \"aws_route53_zone\" \"x\" {\n  name = \"example.com\"\n}\n")},
		{Path: "terraform/policy.json", Bytes: []byte(`{"Version": "2012-10-17"}`)},
	} {
		if err := set.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := EmulatorOverride(set, "http://127.0.0.1:4566", KumoGaps)
	if err != nil || !bytes.Equal(got.Bytes, want.Bytes) {
		t.Errorf("files outside terraform/*.tf changed the override: %v\n%s", err, got.Bytes)
	}
}
