// Package registry publishes a fleet's event contracts to an EventBridge Schema Registry.
//
// The registry stores versions but checks no compatibility, so Publish is the gate: it reads
// the latest version of every schema first, judges each change with package compat, and
// writes nothing when any change is refused. Writes are idempotent: content is compared as
// canonical JSON, an unchanged schema is not written, and a run that stopped halfway
// finishes the rest on the next run (what it finds already published it reports as such).
package registry

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/schemas"
	"github.com/aws/aws-sdk-go-v2/service/schemas/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/spec/diag"
)

// SchemaType is the only content type fleetc publishes.
const SchemaType = "JSONSchemaDraft4"

// API is the part of the Schemas client Publish uses (*schemas.Client implements it).
type API interface {
	DescribeRegistry(context.Context, *schemas.DescribeRegistryInput, ...func(*schemas.Options)) (*schemas.DescribeRegistryOutput, error)
	CreateRegistry(context.Context, *schemas.CreateRegistryInput, ...func(*schemas.Options)) (*schemas.CreateRegistryOutput, error)
	DescribeSchema(context.Context, *schemas.DescribeSchemaInput, ...func(*schemas.Options)) (*schemas.DescribeSchemaOutput, error)
	CreateSchema(context.Context, *schemas.CreateSchemaInput, ...func(*schemas.Options)) (*schemas.CreateSchemaOutput, error)
	UpdateSchema(context.Context, *schemas.UpdateSchemaInput, ...func(*schemas.Options)) (*schemas.UpdateSchemaOutput, error)
}

// Options say where and how to publish.
type Options struct {
	Registry      string
	DryRun        bool              // read the registry, report, write nothing
	AllowBreaking bool              // publish breaking changes without a version bump
	Tool          string            // "fleetc <version>", recorded in each description
	Digest        string            // sha256 of the spec, recorded in each description
	Tags          map[string]string // the fleet's tags, set on created registries and schemas
	// Managed is the registry the fleet's generated Terraform owns (ir.Fleet.SchemaRegistry):
	// publish refuses it, so that no schema ever has two writers.
	Managed string
}

// Actions of a schema in a Result.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	Refused   = "refused"     // breaking; nothing written
	WouldDo   = "would-"      // prefix of dry-run actions: would-create, would-update
	Pending   = "not-written" // planned, not reached because an earlier write failed
)

// Item is what happened to one schema.
type Item struct {
	Schema   string           `json:"schema"`
	Event    string           `json:"event"`
	Action   string           `json:"action"`
	Version  string           `json:"version,omitempty"`  // the registry's version after the run
	Previous string           `json:"previous,omitempty"` // the registry's version before
	Findings []compat.Finding `json:"findings"`
}

// Result is the outcome of a run.
type Result struct {
	Registry        string `json:"registry"`
	RegistryExisted bool   `json:"registry_existed"`
	RegistryCreated bool   `json:"registry_created"`
	DryRun          bool   `json:"dry_run"`
	Items           []Item `json:"schemas"`
	Writes          int    `json:"writes"`
}

// Refused reports whether breaking changes stopped the run.
func (r *Result) Refused() bool {
	for _, it := range r.Items {
		if it.Action == Refused {
			return true
		}
	}
	return false
}

// Limits of the Schemas API (API reference: CreateSchema, CreateRegistry; tagging rules).
const (
	MaxContent      = 100000 // characters of schema content
	MaxSchemaName   = 385
	MaxRegistryName = 64
	MaxDescription  = 256
	MaxTags         = 50
	MaxTagKey       = 128
	MaxTagValue     = 256
)

var nameChars = regexp.MustCompile(`^[A-Za-z0-9_.@-]+$`)

// Check verifies every limit Publish would hit, so a bad name or an oversized schema is a
// clear error before any call. It returns every violation, joined.
func Check(opts Options, contracts []compat.Contract) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if n := opts.Registry; n == "" || len(n) > MaxRegistryName || !nameChars.MatchString(n) {
		bad("registry name %q: 1 to %d characters of letters, digits and . _ - @", n, MaxRegistryName)
	}
	if opts.Managed != "" && opts.Registry == opts.Managed {
		bad("registry %s is the fleet's own: its generated Terraform manages it and every schema in it (terraform apply publishes them); "+
			"publish into a registry outside the fleet, such as a shared contracts registry", opts.Registry)
	}
	if len(opts.Tags) > MaxTags {
		bad("%d tags: the registry allows at most %d", len(opts.Tags), MaxTags)
	}
	for k, v := range opts.Tags {
		switch {
		case k == "" || utf8.RuneCountInString(k) > MaxTagKey:
			bad("tag key %q: 1 to %d characters", k, MaxTagKey)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			bad("tag key %q: the aws: prefix is reserved", k)
		case utf8.RuneCountInString(v) > MaxTagValue:
			bad("tag %q: value longer than %d characters", k, MaxTagValue)
		}
	}
	for _, c := range contracts {
		if len(c.Name) > MaxSchemaName || !nameChars.MatchString(c.Name) {
			bad("schema name %q (event %s): 1 to %d characters of letters, digits and . _ - @", c.Name, c.DetailType, MaxSchemaName)
		}
		if n := utf8.RuneCount(c.Content); n > MaxContent {
			bad("schema %s: content is %d characters, the registry takes at most %d", c.Name, n, MaxContent)
		}
		if d := Description(opts, c); utf8.RuneCountInString(d) > MaxDescription {
			bad("schema %s: description is %d characters, the registry takes at most %d", c.Name, utf8.RuneCountInString(d), MaxDescription)
		}
	}
	return errors.Join(errs...)
}

// Description is the registry description of a contract: the contract version (read back by
// Publish to tell a bumped version), the tool and the spec digest.
func Description(opts Options, c compat.Contract) string {
	d := fmt.Sprintf("%s contract version %d", c.DetailType, c.Version)
	if opts.Tool != "" {
		d += "; published by " + opts.Tool
	}
	if opts.Digest != "" {
		d += "; spec sha256:" + opts.Digest
	}
	return d
}

var versionInDescription = regexp.MustCompile(`contract version (\d+)`)

// plan is one schema's state in the registry and what to do with it.
type plan struct {
	c       compat.Contract
	item    Item
	current *schemas.DescribeSchemaOutput // nil: not in the registry
}

// Publish brings the registry up to date with the contracts. The error is non-nil when a
// call failed; Result then says what was done before the failure.
func Publish(ctx context.Context, api API, opts Options, contracts []compat.Contract) (*Result, error) {
	if err := Check(opts, contracts); err != nil {
		return nil, err
	}
	res := &Result{Registry: opts.Registry, DryRun: opts.DryRun}
	exists, err := registryExists(ctx, api, opts.Registry)
	if err != nil {
		return res, err
	}
	res.RegistryExisted = exists
	// Read everything first: a refused change must leave the registry untouched.
	var plans []*plan
	for _, c := range contracts {
		p := &plan{c: c, item: Item{Schema: c.Name, Event: c.DetailType, Findings: []compat.Finding{}}}
		if exists {
			if p.current, err = describe(ctx, api, opts.Registry, c.Name); err != nil {
				return res, err
			}
		}
		p.judge(opts)
		plans = append(plans, p)
		res.Items = append(res.Items, p.item)
	}
	if res.Refused() || opts.DryRun {
		for i, p := range plans {
			if opts.DryRun && (p.item.Action == Created || p.item.Action == Updated) {
				res.Items[i].Action = WouldDo + strings.TrimSuffix(p.item.Action, "d")
			}
		}
		return res, nil
	}
	if !exists {
		if err := createRegistry(ctx, api, opts); err != nil {
			return res, err
		}
		res.RegistryCreated = true
		res.Writes++
	}
	for i, p := range plans {
		if p.item.Action == Unchanged {
			continue
		}
		version, err := write(ctx, api, opts, p)
		if err != nil {
			for j := i; j < len(plans); j++ {
				if res.Items[j].Action != Unchanged {
					res.Items[j].Action = Pending
				}
			}
			return res, fmt.Errorf("schema %s: %w", p.c.Name, err)
		}
		res.Writes++
		res.Items[i].Version = version
	}
	return res, nil
}

// judge decides a schema's action from its current registry version.
func (p *plan) judge(opts Options) {
	if p.current == nil {
		p.item.Action = Created
		return
	}
	p.item.Previous = aws.ToString(p.current.SchemaVersion)
	content := []byte(aws.ToString(p.current.Content))
	if compat.Equal(content, p.c.Content) {
		p.item.Action, p.item.Version = Unchanged, p.item.Previous
		return
	}
	old, err := stored(p.c, p.current)
	if err != nil { // not a JSON document fleetc can read: every difference is a break
		p.item.Action = Refused
		p.item.Findings = []compat.Finding{{Kind: compat.ConstraintChanged, Breaking: true, Direction: compat.Both, Severity: diag.Error,
			Event: p.c.DetailType, Schema: p.c.Name, Summary: "the registry's latest version is not a JSON Schema fleetc can compare: " + err.Error()}}
		if opts.AllowBreaking {
			p.item.Action = Updated
		}
		return
	}
	r := compat.Compare([]compat.Contract{old}, []compat.Contract{p.c})
	p.item.Findings = append(p.item.Findings, r.Findings...)
	p.item.Action = Updated
	if r.Errors() > 0 && !opts.AllowBreaking {
		p.item.Action = Refused
	}
}

func registryExists(ctx context.Context, api API, name string) (bool, error) {
	_, err := api.DescribeRegistry(ctx, &schemas.DescribeRegistryInput{RegistryName: aws.String(name)})
	switch {
	case err == nil:
		return true, nil
	case hasCode(err, "NotFoundException"):
		return false, nil
	}
	return false, fmt.Errorf("describe registry %s: %w", name, err)
}

func createRegistry(ctx context.Context, api API, opts Options) error {
	_, err := api.CreateRegistry(ctx, &schemas.CreateRegistryInput{
		RegistryName: aws.String(opts.Registry),
		Description:  aws.String("Event contracts published by " + orDefault(opts.Tool, "fleetc")),
		Tags:         opts.Tags,
	})
	if hasCode(err, "ConflictException") { // created concurrently or by an earlier, interrupted run
		return nil
	}
	if err != nil {
		return fmt.Errorf("create registry %s: %w", opts.Registry, err)
	}
	return nil
}

func describe(ctx context.Context, api API, registry, name string) (*schemas.DescribeSchemaOutput, error) {
	out, err := api.DescribeSchema(ctx, &schemas.DescribeSchemaInput{RegistryName: aws.String(registry), SchemaName: aws.String(name)})
	if hasCode(err, "NotFoundException") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe schema %s: %w", name, err)
	}
	return out, nil
}

// write creates or updates one schema and returns its new version.
func write(ctx context.Context, api API, opts Options, p *plan) (string, error) {
	content, desc := string(p.c.Content), Description(opts, p.c)
	if p.current == nil {
		out, err := api.CreateSchema(ctx, &schemas.CreateSchemaInput{
			RegistryName: aws.String(opts.Registry), SchemaName: aws.String(p.c.Name),
			Type: types.TypeJSONSchemaDraft4, Content: aws.String(content), Description: aws.String(desc), Tags: opts.Tags,
		})
		if !hasCode(err, "ConflictException") {
			if err != nil {
				return "", fmt.Errorf("create: %w", err)
			}
			return aws.ToString(out.SchemaVersion), nil
		}
		// Someone created it since we looked: update it instead (same content makes no version).
		conflict := err
		if p.current, err = describe(ctx, api, opts.Registry, p.c.Name); err != nil || p.current == nil {
			return "", fmt.Errorf("create: %w", errors.Join(conflict, err))
		}
		if compat.Equal([]byte(aws.ToString(p.current.Content)), p.c.Content) {
			return aws.ToString(p.current.SchemaVersion), nil
		}
	}
	out, err := api.UpdateSchema(ctx, &schemas.UpdateSchemaInput{
		RegistryName: aws.String(opts.Registry), SchemaName: aws.String(p.c.Name),
		Type: types.TypeJSONSchemaDraft4, Content: aws.String(content), Description: aws.String(desc),
	})
	if err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	return aws.ToString(out.SchemaVersion), nil
}

// hasCode matches an AWS error code, modeled or not: the API model lists ConflictException
// for CreateRegistry only, so a ConflictException from CreateSchema (a schema created since
// we looked) arrives as a generic API error.
func hasCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// NewClient returns a Schemas client from the standard AWS configuration chain (environment,
// shared config, SSO, IMDS). endpoint, when set, overrides the service endpoint; so does
// AWS_ENDPOINT_URL_SCHEMAS, which the SDK reads itself.
func NewClient(ctx context.Context, endpoint string) (*schemas.Client, error) {
	// The SDK's own log (an IMDS fallback warning) is not for fleetc's users: the error
	// below says what is missing.
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(logging.Nop{}))
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	// Credentials are resolved before any call, so a run without them stops with one
	// sentence instead of a half-printed result and a chain of provider errors.
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(cctx); err != nil {
		return nil, fmt.Errorf("no AWS credentials: the default chain (environment, shared config and SSO, web identity, container and instance roles) found none; "+
			"set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where a role is attached (%v)", err)
	}
	return schemas.NewFromConfig(cfg, func(o *schemas.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// Latest reads the registry's latest version of each contract's schema, as base contracts
// for compat.Compare: the contract version comes from the description Publish wrote, the
// consumers from the head contract. Schemas missing from the registry (or a missing
// registry) are left out, so they compare as new events.
func Latest(ctx context.Context, api API, registryName string, head []compat.Contract) ([]compat.Contract, error) {
	var out []compat.Contract
	for _, c := range head {
		cur, err := describe(ctx, api, registryName, c.Name)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			continue
		}
		old, err := stored(c, cur)
		if err != nil {
			return nil, err
		}
		out = append(out, old)
	}
	return out, nil
}

// stored is the registry's version of a contract: its content, the contract version from the
// description Publish wrote, and the head's consumers (the registry knows none).
func stored(head compat.Contract, cur *schemas.DescribeSchemaOutput) (compat.Contract, error) {
	old, err := compat.Parse(head.Name, []byte(aws.ToString(cur.Content)))
	if err != nil {
		return old, err
	}
	if m := versionInDescription.FindStringSubmatch(aws.ToString(cur.Description)); m != nil {
		old.Version, _ = strconv.Atoi(m[1])
	}
	old.Consumers, old.Workflows, old.Path = head.Consumers, head.Workflows, head.Path
	return old, nil
}
