// Command tfschemaprovider is a schema-only stand-in for a Terraform provider: it serves the
// resource and data source schemas of a `terraform providers schema -json` document over plugin
// protocol 5, so `terraform validate` can check configuration against a provider build that is
// not installed (hashicorp/aws 6.x with aws_bedrockagentcore_*), offline.
//
// It validates nothing itself (no provider-side value checks) and refuses plan/apply. The schema
// is read from schema.json next to the executable (tools/install.sh lays out the mirror), or from
// $FLEETC_TF_SCHEMA_JSON; the provider address from $FLEETC_TF_SCHEMA_SOURCE
// (default registry.terraform.io/hashicorp/aws). A schema-supplement.json beside schema.json (or
// further paths in $FLEETC_TF_SCHEMA_JSON, a path list) adds the resource and data source types
// the first document lacks: the 6.x subset has no aws_eks_pod_identity_association, which the
// released 5.100.0 schema has. Types the first document defines are never replaced.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func main() {
	source := os.Getenv("FLEETC_TF_SCHEMA_SOURCE")
	if source == "" {
		source = "registry.terraform.io/hashicorp/aws"
	}
	paths := filepath.SplitList(os.Getenv("FLEETC_TF_SCHEMA_JSON"))
	if len(paths) == 0 {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tfschemaprovider:", err)
			os.Exit(1)
		}
		paths = []string{filepath.Join(filepath.Dir(exe), "schema.json")}
		if sup := filepath.Join(filepath.Dir(exe), "schema-supplement.json"); fileExists(sup) {
			paths = append(paths, sup)
		}
	}
	resp, err := load(paths[0], source)
	for _, sup := range paths[1:] {
		if err != nil {
			break
		}
		var more *tfprotov5.GetProviderSchemaResponse
		if more, err = load(sup, source); err == nil {
			supplement(resp, more)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tfschemaprovider:", err)
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "-check" { // used by install.sh: schema converts cleanly
		fmt.Printf("%s: %d resources, %d data sources\n", source, len(resp.ResourceSchemas), len(resp.DataSourceSchemas))
		return
	}
	if err := tf5server.Serve(source, func() tfprotov5.ProviderServer { return &server{schema: resp} }); err != nil {
		fmt.Fprintln(os.Stderr, "tfschemaprovider:", err)
		os.Exit(1)
	}
}

// JSON shapes of `terraform providers schema -json`.
type jsonSchema struct {
	Version int64      `json:"version"`
	Block   *jsonBlock `json:"block"`
}

type jsonBlock struct {
	Attributes map[string]*jsonAttr   `json:"attributes"`
	BlockTypes map[string]*jsonNested `json:"block_types"`
	Deprecated bool                   `json:"deprecated"`
}

type jsonAttr struct {
	Type       json.RawMessage `json:"type"`
	NestedType json.RawMessage `json:"nested_type"`
	Required   bool            `json:"required"`
	Optional   bool            `json:"optional"`
	Computed   bool            `json:"computed"`
	Sensitive  bool            `json:"sensitive"`
	Deprecated bool            `json:"deprecated"`
	WriteOnly  bool            `json:"write_only"`
}

type jsonNested struct {
	NestingMode string     `json:"nesting_mode"`
	MinItems    int64      `json:"min_items"`
	MaxItems    int64      `json:"max_items"`
	Block       *jsonBlock `json:"block"`
}

func load(path, source string) (*tfprotov5.GetProviderSchemaResponse, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		ProviderSchemas map[string]struct {
			Provider          *jsonSchema            `json:"provider"`
			ResourceSchemas   map[string]*jsonSchema `json:"resource_schemas"`
			DataSourceSchemas map[string]*jsonSchema `json:"data_source_schemas"`
		} `json:"provider_schemas"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p, ok := doc.ProviderSchemas[source]
	if !ok {
		return nil, fmt.Errorf("%s: no provider_schemas[%q]", path, source)
	}
	resp := &tfprotov5.GetProviderSchemaResponse{
		ServerCapabilities: &tfprotov5.ServerCapabilities{GetProviderSchemaOptional: false},
		ResourceSchemas:    map[string]*tfprotov5.Schema{},
		DataSourceSchemas:  map[string]*tfprotov5.Schema{},
	}
	if resp.Provider, err = convert(p.Provider, "provider"); err != nil {
		return nil, err
	}
	for name, s := range p.ResourceSchemas {
		if resp.ResourceSchemas[name], err = convert(s, name); err != nil {
			return nil, err
		}
	}
	for name, s := range p.DataSourceSchemas {
		if resp.DataSourceSchemas[name], err = convert(s, "data."+name); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// supplement adds to resp the resource and data source types only more defines.
func supplement(resp, more *tfprotov5.GetProviderSchemaResponse) {
	for name, r := range more.ResourceSchemas {
		if _, ok := resp.ResourceSchemas[name]; !ok {
			resp.ResourceSchemas[name] = r
		}
	}
	for name, d := range more.DataSourceSchemas {
		if _, ok := resp.DataSourceSchemas[name]; !ok {
			resp.DataSourceSchemas[name] = d
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func convert(s *jsonSchema, where string) (*tfprotov5.Schema, error) {
	if s == nil || s.Block == nil {
		return &tfprotov5.Schema{Block: &tfprotov5.SchemaBlock{}}, nil
	}
	blk, err := convertBlock(s.Block, where)
	if err != nil {
		return nil, err
	}
	return &tfprotov5.Schema{Version: s.Version, Block: blk}, nil
}

var nesting = map[string]tfprotov5.SchemaNestedBlockNestingMode{
	"single": tfprotov5.SchemaNestedBlockNestingModeSingle,
	"group":  tfprotov5.SchemaNestedBlockNestingModeGroup,
	"list":   tfprotov5.SchemaNestedBlockNestingModeList,
	"set":    tfprotov5.SchemaNestedBlockNestingModeSet,
	"map":    tfprotov5.SchemaNestedBlockNestingModeMap,
}

// convertBlock keeps attributes and block types sorted by name so the schema is deterministic.
func convertBlock(b *jsonBlock, where string) (*tfprotov5.SchemaBlock, error) {
	out := &tfprotov5.SchemaBlock{Deprecated: b.Deprecated}
	for _, name := range slices.Sorted(maps.Keys(b.Attributes)) {
		a := b.Attributes[name]
		if len(a.NestedType) > 0 {
			return nil, fmt.Errorf("%s.%s: nested attribute types need plugin protocol 6", where, name)
		}
		typ, err := tftypes.ParseJSONType(a.Type) //nolint:staticcheck // the JSON type form is exactly what the document holds
		if err != nil {
			return nil, fmt.Errorf("%s.%s: type %s: %w", where, name, a.Type, err)
		}
		out.Attributes = append(out.Attributes, &tfprotov5.SchemaAttribute{
			Name: name, Type: typ, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
			Sensitive: a.Sensitive, Deprecated: a.Deprecated, WriteOnly: a.WriteOnly,
		})
	}
	for _, name := range slices.Sorted(maps.Keys(b.BlockTypes)) {
		nb := b.BlockTypes[name]
		mode, ok := nesting[nb.NestingMode]
		if !ok {
			return nil, fmt.Errorf("%s.%s: unknown nesting_mode %q", where, name, nb.NestingMode)
		}
		inner := nb.Block
		if inner == nil {
			inner = &jsonBlock{}
		}
		blk, err := convertBlock(inner, where+"."+name)
		if err != nil {
			return nil, err
		}
		out.BlockTypes = append(out.BlockTypes, &tfprotov5.SchemaNestedBlock{
			TypeName: name, Block: blk, Nesting: mode, MinItems: nb.MinItems, MaxItems: nb.MaxItems,
		})
	}
	return out, nil
}

// server answers schema and validation calls; everything that would touch real
// infrastructure fails with a diagnostic saying why.
type server struct {
	schema *tfprotov5.GetProviderSchemaResponse
}

var errSchemaOnly = errors.New("schema-only provider (fleetc tools/tfschemaprovider): validate only, no plan/apply")

func refuse() []*tfprotov5.Diagnostic {
	return []*tfprotov5.Diagnostic{{Severity: tfprotov5.DiagnosticSeverityError, Summary: errSchemaOnly.Error()}}
}

func (s *server) GetMetadata(context.Context, *tfprotov5.GetMetadataRequest) (*tfprotov5.GetMetadataResponse, error) {
	resp := &tfprotov5.GetMetadataResponse{ServerCapabilities: s.schema.ServerCapabilities}
	for _, n := range slices.Sorted(maps.Keys(s.schema.ResourceSchemas)) {
		resp.Resources = append(resp.Resources, tfprotov5.ResourceMetadata{TypeName: n})
	}
	for _, n := range slices.Sorted(maps.Keys(s.schema.DataSourceSchemas)) {
		resp.DataSources = append(resp.DataSources, tfprotov5.DataSourceMetadata{TypeName: n})
	}
	return resp, nil
}

func (s *server) GetProviderSchema(context.Context, *tfprotov5.GetProviderSchemaRequest) (*tfprotov5.GetProviderSchemaResponse, error) {
	return s.schema, nil
}

func (s *server) GetResourceIdentitySchemas(context.Context, *tfprotov5.GetResourceIdentitySchemasRequest) (*tfprotov5.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov5.GetResourceIdentitySchemasResponse{}, nil
}

func (s *server) PrepareProviderConfig(_ context.Context, req *tfprotov5.PrepareProviderConfigRequest) (*tfprotov5.PrepareProviderConfigResponse, error) {
	return &tfprotov5.PrepareProviderConfigResponse{PreparedConfig: req.Config}, nil
}

func (s *server) ConfigureProvider(context.Context, *tfprotov5.ConfigureProviderRequest) (*tfprotov5.ConfigureProviderResponse, error) {
	return &tfprotov5.ConfigureProviderResponse{Diagnostics: refuse()}, nil
}

func (s *server) StopProvider(context.Context, *tfprotov5.StopProviderRequest) (*tfprotov5.StopProviderResponse, error) {
	return &tfprotov5.StopProviderResponse{}, nil
}

func (s *server) ValidateResourceTypeConfig(context.Context, *tfprotov5.ValidateResourceTypeConfigRequest) (*tfprotov5.ValidateResourceTypeConfigResponse, error) {
	return &tfprotov5.ValidateResourceTypeConfigResponse{}, nil
}

func (s *server) UpgradeResourceState(context.Context, *tfprotov5.UpgradeResourceStateRequest) (*tfprotov5.UpgradeResourceStateResponse, error) {
	return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: refuse()}, nil
}

func (s *server) ReadResource(context.Context, *tfprotov5.ReadResourceRequest) (*tfprotov5.ReadResourceResponse, error) {
	return &tfprotov5.ReadResourceResponse{Diagnostics: refuse()}, nil
}

func (s *server) PlanResourceChange(context.Context, *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.PlanResourceChangeResponse, error) {
	return &tfprotov5.PlanResourceChangeResponse{Diagnostics: refuse()}, nil
}

func (s *server) ApplyResourceChange(context.Context, *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.ApplyResourceChangeResponse, error) {
	return &tfprotov5.ApplyResourceChangeResponse{Diagnostics: refuse()}, nil
}

func (s *server) ImportResourceState(context.Context, *tfprotov5.ImportResourceStateRequest) (*tfprotov5.ImportResourceStateResponse, error) {
	return &tfprotov5.ImportResourceStateResponse{Diagnostics: refuse()}, nil
}

func (s *server) MoveResourceState(context.Context, *tfprotov5.MoveResourceStateRequest) (*tfprotov5.MoveResourceStateResponse, error) {
	return &tfprotov5.MoveResourceStateResponse{Diagnostics: refuse()}, nil
}

func (s *server) UpgradeResourceIdentity(context.Context, *tfprotov5.UpgradeResourceIdentityRequest) (*tfprotov5.UpgradeResourceIdentityResponse, error) {
	return &tfprotov5.UpgradeResourceIdentityResponse{Diagnostics: refuse()}, nil
}

func (s *server) GenerateResourceConfig(context.Context, *tfprotov5.GenerateResourceConfigRequest) (*tfprotov5.GenerateResourceConfigResponse, error) {
	return &tfprotov5.GenerateResourceConfigResponse{Diagnostics: refuse()}, nil
}

func (s *server) ValidateDataSourceConfig(context.Context, *tfprotov5.ValidateDataSourceConfigRequest) (*tfprotov5.ValidateDataSourceConfigResponse, error) {
	return &tfprotov5.ValidateDataSourceConfigResponse{}, nil
}

func (s *server) ReadDataSource(context.Context, *tfprotov5.ReadDataSourceRequest) (*tfprotov5.ReadDataSourceResponse, error) {
	return &tfprotov5.ReadDataSourceResponse{Diagnostics: refuse()}, nil
}

func (s *server) CallFunction(context.Context, *tfprotov5.CallFunctionRequest) (*tfprotov5.CallFunctionResponse, error) {
	return &tfprotov5.CallFunctionResponse{Error: &tfprotov5.FunctionError{Text: errSchemaOnly.Error()}}, nil
}

func (s *server) GetFunctions(context.Context, *tfprotov5.GetFunctionsRequest) (*tfprotov5.GetFunctionsResponse, error) {
	return &tfprotov5.GetFunctionsResponse{}, nil
}

func (s *server) ValidateEphemeralResourceConfig(context.Context, *tfprotov5.ValidateEphemeralResourceConfigRequest) (*tfprotov5.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov5.ValidateEphemeralResourceConfigResponse{}, nil
}

func (s *server) OpenEphemeralResource(context.Context, *tfprotov5.OpenEphemeralResourceRequest) (*tfprotov5.OpenEphemeralResourceResponse, error) {
	return &tfprotov5.OpenEphemeralResourceResponse{Diagnostics: refuse()}, nil
}

func (s *server) RenewEphemeralResource(context.Context, *tfprotov5.RenewEphemeralResourceRequest) (*tfprotov5.RenewEphemeralResourceResponse, error) {
	return &tfprotov5.RenewEphemeralResourceResponse{Diagnostics: refuse()}, nil
}

func (s *server) CloseEphemeralResource(context.Context, *tfprotov5.CloseEphemeralResourceRequest) (*tfprotov5.CloseEphemeralResourceResponse, error) {
	return &tfprotov5.CloseEphemeralResourceResponse{Diagnostics: refuse()}, nil
}
