package registry_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/schemas"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/compiler/registry"
	"github.com/fleetc/fleetc/compiler/registry/registrytest"
	"github.com/fleetc/fleetc/spec/diag"
)

// These tests run against registrytest's httptest server: no local emulator implements the
// Schemas API, so the server asserts each request's method, path, query and body as the API
// reference documents them and answers as AWS does.

func client(srv *registrytest.Server) *schemas.Client {
	return schemas.New(schemas.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
}

func research(t *testing.T, edit func(string) string) []compat.Contract {
	t.Helper()
	src, err := os.ReadFile("../../examples/research-fleet/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	if edit != nil {
		s = edit(s)
	}
	cs, ds := compat.FromFleet(irtest.LoadSource(t, s))
	if ds.HasErrors() || len(cs) != 2 {
		t.Fatalf("contracts: %d, %v", len(cs), ds)
	}
	return cs
}

var opts = registry.Options{Registry: "research-contracts", Tool: "fleetc test", Digest: "0123456789ab", Tags: map[string]string{"team": "platform"}}

func publish(t *testing.T, srv *registrytest.Server, o registry.Options, cs []compat.Contract) *registry.Result {
	t.Helper()
	res, err := registry.Publish(context.Background(), client(srv), o, cs)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

func actions(res *registry.Result) string {
	var out []string
	for _, it := range res.Items {
		out = append(out, it.Schema+"="+it.Action+":"+it.Version)
	}
	return strings.Join(out, " ")
}

const (
	completed = "fleet.workers@agent.step.completed"
	requested = "fleet.coordinator@agent.step.requested"
)

func addField(s string) string {
	return strings.Replace(s, "        ttl_seconds: { type: integer, minimum: 1 }\n", "        ttl_seconds: { type: integer, minimum: 1 }\n        priority: { type: integer }\n", 1)
}

// removeField drops ttl_seconds' minimum: new events may carry 0, which old consumers refuse.
func removeField(s string) string {
	return strings.Replace(s, "        ttl_seconds: { type: integer, minimum: 1 }\n", "        ttl_seconds: { type: integer }\n", 1)
}

func TestPublishLifecycle(t *testing.T) {
	srv := registrytest.New(t)
	srv.Throttle["DescribeRegistry"] = 1 // the first call is throttled; the SDK retries it
	srv.Throttle["CreateSchema"] = 2

	// First publish: the registry and both schemas are created, with tags and description.
	res := publish(t, srv, opts, research(t, nil))
	if got, want := actions(res), completed+"=created:1 "+requested+"=created:1"; got != want {
		t.Fatalf("first publish: %s, want %s", got, want)
	}
	if !res.RegistryCreated || res.Writes != 3 || srv.Writes() != 3+2 /* two throttled CreateSchema retried */ {
		t.Fatalf("first publish: registry created %v, writes %d, server writes %d (%v)", res.RegistryCreated, res.Writes, srv.Writes(), srv.Calls)
	}
	if srv.RegTags[opts.Registry]["team"] != "platform" || srv.Registries[opts.Registry][completed].Tags["team"] != "platform" {
		t.Error("tags not set on registry and schema")
	}
	v := srv.Latest(opts.Registry, requested)
	if v.Type != "JSONSchemaDraft4" || !strings.Contains(v.Description, "contract version 1") || !strings.Contains(v.Description, "sha256:0123456789ab") {
		t.Errorf("stored version: %+v", v)
	}
	for _, c := range research(t, nil) {
		if got := srv.Latest(opts.Registry, c.Name).Content; got != string(c.Content) {
			t.Errorf("%s: stored content differs from the generated schema", c.Name)
		}
	}

	// No-op republish: reads only.
	before := srv.Writes()
	res = publish(t, srv, opts, research(t, nil))
	if srv.Writes() != before || res.Writes != 0 || actions(res) != completed+"=unchanged:1 "+requested+"=unchanged:1" {
		t.Fatalf("republish wrote: %s, %d writes", actions(res), srv.Writes()-before)
	}

	// Additive change: a new version of that schema only, the change listed as safe.
	res = publish(t, srv, opts, research(t, addField))
	if got := actions(res); got != completed+"=unchanged:1 "+requested+"=updated:2" {
		t.Fatalf("additive: %s", got)
	}
	if f := res.Items[1].Findings; len(f) != 1 || f[0].Kind != compat.PropertyAdded || f[0].Breaking {
		t.Fatalf("additive findings: %+v", f)
	}

	// Breaking change without a version bump: refused, nothing written, consumers named.
	before = srv.Writes()
	res = publish(t, srv, opts, research(t, removeField))
	if !res.Refused() || srv.Writes() != before || res.Items[1].Action != registry.Refused {
		t.Fatalf("breaking: %s, %d writes", actions(res), srv.Writes()-before)
	}
	var removed *compat.Finding
	for i, f := range res.Items[1].Findings {
		if f.Kind == compat.BoundLoosened {
			removed = &res.Items[1].Findings[i]
		}
	}
	if removed == nil || removed.Severity != diag.Error || strings.Join(removed.Consumers, ",") != "coder,researcher" {
		t.Fatalf("breaking findings: %+v", res.Items[1].Findings)
	}

	// Dry run of an allowed change: reported, zero writes.
	o := opts
	o.DryRun, o.AllowBreaking = true, true
	res = publish(t, srv, o, research(t, removeField))
	if srv.Writes() != before || res.Items[1].Action != "would-update" {
		t.Fatalf("dry run: %s, %d writes", actions(res), srv.Writes()-before)
	}

	// --allow-breaking publishes it.
	o.DryRun = false
	res = publish(t, srv, o, research(t, removeField))
	if res.Items[1].Action != registry.Updated || res.Items[1].Version != "3" || res.Items[1].Previous != "2" {
		t.Fatalf("allow-breaking: %s", actions(res))
	}

	// A bumped version makes the same kind of break a warning, and it is published.
	bumped := func(s string) string {
		return strings.Replace(strings.Replace(s, "        step: { type: integer, minimum: 0 }\n", "", 1),
			"    version: 1\n    source: fleet.coordinator", "    version: 2\n    source: fleet.coordinator", 1)
	}
	res = publish(t, srv, opts, research(t, func(s string) string { return bumped(removeField(s)) }))
	if res.Items[1].Action != registry.Updated || res.Items[1].Findings[0].Severity != diag.Warning {
		t.Fatalf("bumped: %s %+v", actions(res), res.Items[1].Findings)
	}
}

func TestPublishResumesAfterFailure(t *testing.T) {
	srv := registrytest.New(t)
	srv.FailOp, srv.FailAfter = "CreateSchema", 1 // the second CreateSchema fails
	res, err := registry.Publish(context.Background(), client(srv), opts, research(t, nil))
	if err == nil || !strings.Contains(err.Error(), requested) {
		t.Fatalf("want a failure on %s, got %v", requested, err)
	}
	if got := actions(res); got != completed+"=created:1 "+requested+"=not-written:" {
		t.Fatalf("partial run: %s", got)
	}
	srv.FailAfter = -1
	res = publish(t, srv, opts, research(t, nil))
	if got := actions(res); got != completed+"=unchanged:1 "+requested+"=created:1" || !res.RegistryExisted || res.RegistryCreated {
		t.Fatalf("re-run: %s existed %v", got, res.RegistryExisted)
	}
}

// A schema created by someone else between our read and our write (ConflictException on
// CreateSchema) is updated instead; a registry created meanwhile (ConflictException on
// CreateRegistry) is used.
func TestPublishConflicts(t *testing.T) {
	srv := registrytest.New(t)
	cs := research(t, nil)
	api := &racingAPI{Client: client(srv), srv: srv, content: string(cs[0].Content)}
	res, err := registry.Publish(context.Background(), api, opts, cs)
	if err != nil {
		t.Fatal(err, srv.Calls)
	}
	if got := actions(res); got != completed+"=created:1 "+requested+"=created:1" {
		t.Fatalf("conflicts: %s (%v)", got, srv.Calls)
	}
}

// racingAPI creates the registry and the first schema behind Publish's back, just before
// Publish's own create calls.
type racingAPI struct {
	*schemas.Client
	srv     *registrytest.Server
	content string
}

func (r *racingAPI) CreateRegistry(ctx context.Context, in *schemas.CreateRegistryInput, o ...func(*schemas.Options)) (*schemas.CreateRegistryOutput, error) {
	if _, err := r.Client.CreateRegistry(ctx, in, o...); err != nil {
		return nil, err
	}
	return r.Client.CreateRegistry(ctx, in, o...) // ConflictException
}

func (r *racingAPI) CreateSchema(ctx context.Context, in *schemas.CreateSchemaInput, o ...func(*schemas.Options)) (*schemas.CreateSchemaOutput, error) {
	if aws.ToString(in.SchemaName) == completed {
		if _, err := r.Client.CreateSchema(ctx, in, o...); err != nil {
			return nil, err
		}
	}
	return r.Client.CreateSchema(ctx, in, o...)
}

func TestLimitsRefusedBeforeAnyCall(t *testing.T) {
	srv := registrytest.New(t)
	cs := research(t, nil)
	big := cs[0]
	big.Content = []byte(`{"description":"` + strings.Repeat("x", registry.MaxContent) + `"}`)
	long := cs[1]
	long.Name = strings.Repeat("a", registry.MaxSchemaName+1)
	bad := opts
	bad.Registry = "has space"
	bad.Tags = map[string]string{"aws:owner": "x", "k": strings.Repeat("v", registry.MaxTagValue+1)}
	bad.Tool = strings.Repeat("t", registry.MaxDescription)
	_, err := registry.Publish(context.Background(), client(srv), bad, []compat.Contract{big, long})
	if err == nil {
		t.Fatal("limits not enforced")
	}
	for _, want := range []string{"registry name", "content is", "schema name", "aws: prefix", "value longer", "description is"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(srv.Calls) != 0 {
		t.Fatalf("calls made despite limit errors: %v", srv.Calls)
	}
}
