package verifytest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Schema is a provider schema as printed by `terraform providers schema -json`, merged over
// every provider in the document (resource type names are unique across providers).
type Schema struct {
	Resources   map[string]*SchemaBlock // resource type -> block
	DataSources map[string]*SchemaBlock
	Providers   map[string]*SchemaBlock // provider local name ("aws") -> provider config block
	Sources     []string                // provider source addresses in the document, sorted
}

// SchemaBlock is one block's schema.
type SchemaBlock struct {
	Attributes map[string]*SchemaAttribute   `json:"attributes"`
	BlockTypes map[string]*SchemaNestedBlock `json:"block_types"`
}

// SchemaAttribute is one attribute's schema. Type is the cty type in JSON form.
type SchemaAttribute struct {
	Type       json.RawMessage `json:"type"`
	NestedType json.RawMessage `json:"nested_type"`
	Required   bool            `json:"required"`
	Optional   bool            `json:"optional"`
	Computed   bool            `json:"computed"`
	Deprecated bool            `json:"deprecated"`
}

// SchemaNestedBlock is a nested block type: nesting_mode is single, group, list, set or map.
type SchemaNestedBlock struct {
	NestingMode string       `json:"nesting_mode"`
	MinItems    int          `json:"min_items"`
	MaxItems    int          `json:"max_items"`
	Block       *SchemaBlock `json:"block"`
}

type schemaDoc struct {
	ProviderSchemas map[string]struct {
		Provider          *struct{ Block *SchemaBlock }           `json:"provider"`
		ResourceSchemas   map[string]struct{ Block *SchemaBlock } `json:"resource_schemas"`
		DataSourceSchemas map[string]struct{ Block *SchemaBlock } `json:"data_source_schemas"`
	} `json:"provider_schemas"`
}

// DefaultSchemaPath is <shared>/terraform/aws-provider-schema.json (see SharedDir).
func DefaultSchemaPath() (string, error) {
	shared, err := SharedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(shared, "terraform", "aws-provider-schema.json"), nil
}

// SupplementSchemaPath is <shared>/terraform/aws-provider-schema-5.100.0.json, the released
// 5.100.0 provider's schema of the fleet's services. The default schema (a 6.48 subset) lacks
// some types fleetc generates (aws_eks_pod_identity_association); they come from here.
func SupplementSchemaPath() (string, error) {
	shared, err := SharedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(shared, "terraform", "aws-provider-schema-5.100.0.json"), nil
}

// ProviderSchema loads a `terraform providers schema -json` document. An empty path means
// DefaultSchemaPath, supplemented with the resource and data source types only
// SupplementSchemaPath defines (types the default defines are never replaced). A missing file
// wraps ErrToolMissing.
func ProviderSchema(path string) (*Schema, error) {
	if path != "" {
		return loadSchema(path)
	}
	p, err := DefaultSchemaPath()
	if err != nil {
		return nil, err
	}
	s, err := loadSchema(p)
	if err != nil {
		return nil, err
	}
	sp, err := SupplementSchemaPath()
	if err != nil {
		return nil, err
	}
	more, err := loadSchema(sp)
	if err != nil {
		return nil, err
	}
	for name, r := range more.Resources {
		if _, ok := s.Resources[name]; !ok {
			s.Resources[name] = r
		}
	}
	for name, d := range more.DataSources {
		if _, ok := s.DataSources[name]; !ok {
			s.DataSources[name] = d
		}
	}
	return s, nil
}

func loadSchema(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%w: provider schema %s not found (CI expects shared/ at ../shared from the repo root)", ErrToolMissing, path)
	}
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	var doc schemaDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("verify: provider schema %s: %w", path, err)
	}
	if len(doc.ProviderSchemas) == 0 {
		return nil, fmt.Errorf("verify: provider schema %s: no provider_schemas", path)
	}
	s := &Schema{Resources: map[string]*SchemaBlock{}, DataSources: map[string]*SchemaBlock{}, Providers: map[string]*SchemaBlock{}}
	for src, p := range doc.ProviderSchemas {
		s.Sources = append(s.Sources, src)
		if p.Provider != nil && p.Provider.Block != nil {
			s.Providers[src[strings.LastIndex(src, "/")+1:]] = p.Provider.Block
		}
		for name, r := range p.ResourceSchemas {
			s.Resources[name] = orEmpty(r.Block)
		}
		for name, d := range p.DataSourceSchemas {
			s.DataSources[name] = orEmpty(d.Block)
		}
	}
	sort.Strings(s.Sources)
	return s, nil
}

func orEmpty(b *SchemaBlock) *SchemaBlock {
	if b == nil {
		return &SchemaBlock{}
	}
	return b
}

// CheckTerraformAgainstSchema checks every resource, data and provider block in the .tf files
// under dir against the provider schema at schemaPath ("" = DefaultSchemaPath), without
// running terraform: the type exists; every argument is known and settable (not computed-only);
// every nested block type exists, with the right number of labels and no more than max_items;
// every required argument and min_items block is present. Meta-arguments are skipped and
// dynamic blocks are checked through their content block. Each error is a *Problem with
// file:line:col; an error loading the schema comes back alone.
func CheckTerraformAgainstSchema(dir string, schemaPath string) []error {
	s, err := ProviderSchema(schemaPath)
	if err != nil {
		return []error{err}
	}
	files, err := tfFiles(dir)
	if err != nil {
		return []error{err}
	}
	c := &schemaChecker{schema: s}
	for _, f := range files {
		body, diags, err := parseTF(f)
		if err != nil {
			return []error{err}
		}
		for _, d := range diags {
			c.addDiag(d)
		}
		if body != nil {
			c.file(body)
		}
	}
	ps := sortProblems(c.problems)
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

type schemaChecker struct {
	schema   *Schema
	problems Problems
}

func (c *schemaChecker) add(rng hcl.Range, summary, detail string) {
	c.problems = append(c.problems, &Problem{
		Tool: "provider schema", Severity: "error", File: rng.Filename,
		Line: rng.Start.Line, Column: rng.Start.Column, Summary: summary, Detail: detail,
	})
}

func (c *schemaChecker) addDiag(d *hcl.Diagnostic) {
	p := &Problem{Tool: "hcl", Severity: "error", Summary: d.Summary, Detail: d.Detail}
	if d.Severity == hcl.DiagWarning {
		p.Severity = "warning"
	}
	if d.Subject != nil {
		p.File, p.Line, p.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
	}
	c.problems = append(c.problems, p)
}

// Meta-arguments Terraform itself handles, per top-level block kind.
var (
	metaAttrs  = map[string]bool{"count": true, "for_each": true, "depends_on": true, "provider": true}
	metaBlocks = map[string]bool{"lifecycle": true, "provisioner": true, "connection": true}
	// provider blocks: alias (and the legacy version argument) belong to Terraform.
	providerMetaAttrs = map[string]bool{"alias": true, "version": true}
)

func (c *schemaChecker) file(body *hclsyntax.Body) {
	for _, b := range body.Blocks {
		switch b.Type {
		case "resource", "data":
			if len(b.Labels) != 2 {
				continue // hclsyntax accepted it; terraform validate reports the label count
			}
			kind, table := "resource", c.schema.Resources
			if b.Type == "data" {
				kind, table = "data source", c.schema.DataSources
			}
			sb, ok := table[b.Labels[0]]
			if !ok {
				names := make([]string, 0, len(table))
				for n := range table {
					names = append(names, n)
				}
				c.add(b.LabelRanges[0], fmt.Sprintf("unknown %s type %q", kind, b.Labels[0]),
					fmt.Sprintf("not in provider schema (%s)%s", strings.Join(c.schema.Sources, ", "), suggest(b.Labels[0], names)))
				continue
			}
			c.block(b.Body, sb, b.Labels[0]+"."+b.Labels[1], metaAttrs, metaBlocks, b.OpenBraceRange)
		case "provider":
			if len(b.Labels) != 1 {
				continue
			}
			if sb, ok := c.schema.Providers[b.Labels[0]]; ok {
				c.block(b.Body, sb, "provider "+b.Labels[0], providerMetaAttrs, nil, b.OpenBraceRange)
			}
		}
	}
}

// block checks one block body against its schema. where names the block for messages; skipAttrs
// and skipBlocks are the meta-arguments allowed at this level; open locates "missing" errors.
func (c *schemaChecker) block(body *hclsyntax.Body, sb *SchemaBlock, where string, skipAttrs, skipBlocks map[string]bool, open hcl.Range) {
	known := append(slices.Sorted(maps.Keys(sb.Attributes)), slices.Sorted(maps.Keys(sb.BlockTypes))...)
	c.arguments(body, sb, where, skipAttrs, known)
	counts, dynamic := c.nested(body, sb, where, skipBlocks, known)
	c.required(body, sb, where, open, counts, dynamic)
}

// arguments checks each argument of body: known to the schema, an argument rather than a
// block, and settable (not computed-only).
func (c *schemaChecker) arguments(body *hclsyntax.Body, sb *SchemaBlock, where string, skipAttrs map[string]bool, known []string) {
	for _, name := range slices.Sorted(maps.Keys(body.Attributes)) {
		a := body.Attributes[name]
		if skipAttrs[name] {
			continue
		}
		sa, ok := sb.Attributes[name]
		if !ok {
			if _, isBlock := sb.BlockTypes[name]; isBlock {
				c.add(a.NameRange, fmt.Sprintf("%s: %q is a block, not an argument", where, name),
					fmt.Sprintf("write it as `%s { ... }`", name))
				continue
			}
			c.add(a.NameRange, fmt.Sprintf("%s: unsupported argument %q", where, name), "not in the provider schema"+suggest(name, known))
			continue
		}
		if sa.Computed && !sa.Optional && !sa.Required {
			c.add(a.NameRange, fmt.Sprintf("%s: %q is computed-only", where, name), "the provider sets it; remove the argument")
		}
	}
}

// nested checks each nested block of body (a dynamic block as the block it generates) and
// recurses into it; it returns how many blocks of each type there are and which types a
// dynamic block generates, whose count is unknown until Terraform expands it.
func (c *schemaChecker) nested(body *hclsyntax.Body, sb *SchemaBlock, where string, skipBlocks map[string]bool, known []string) (counts map[string]int, dynamic map[string]bool) {
	counts, dynamic = map[string]int{}, map[string]bool{}
	for _, nb := range body.Blocks {
		if skipBlocks[nb.Type] {
			continue
		}
		typeName, content, typeRange := nb.Type, nb.Body, nb.TypeRange
		if nb.Type == "dynamic" {
			var ok bool
			if typeName, content, typeRange, ok = c.dynamicContent(nb, where); !ok {
				continue
			}
			dynamic[typeName] = true
		}
		child := where + "." + typeName
		bt, ok := sb.BlockTypes[typeName]
		if !ok {
			if sa, isAttr := sb.Attributes[typeName]; isAttr {
				// Terraform accepts block syntax for list/set-of-object arguments (blocktoattr).
				if obj := objectElemAttrs(sa.Type); obj != nil && !(sa.Computed && !sa.Optional && !sa.Required) {
					c.block(content, &SchemaBlock{Attributes: obj}, child, nil, nil, nb.OpenBraceRange)
					continue
				}
				c.add(typeRange, fmt.Sprintf("%s: %q is an argument, not a block", where, typeName),
					fmt.Sprintf("write it as `%s = ...`", typeName))
				continue
			}
			c.add(typeRange, fmt.Sprintf("%s: unsupported block type %q", where, typeName), "not in the provider schema"+suggest(typeName, known))
			continue
		}
		wantLabels := 0
		if bt.NestingMode == "map" {
			wantLabels = 1
		}
		if nb.Type != "dynamic" && len(nb.Labels) != wantLabels {
			c.add(typeRange, fmt.Sprintf("%s: block %q takes %d label(s), has %d", where, typeName, wantLabels, len(nb.Labels)), "")
		}
		counts[typeName]++
		if bt.Block != nil {
			c.block(content, bt.Block, child, nil, nil, nb.OpenBraceRange)
		}
		max := bt.MaxItems
		if bt.NestingMode == "single" || bt.NestingMode == "group" {
			max = 1
		}
		if max > 0 && counts[typeName] == max+1 {
			c.add(typeRange, fmt.Sprintf("%s: too many %q blocks", where, typeName), fmt.Sprintf("at most %d allowed", max))
		}
	}
	return counts, dynamic
}

// dynamicContent is what a dynamic block generates: the block type its label names and
// its content body, checked as that block's body.
func (c *schemaChecker) dynamicContent(nb *hclsyntax.Block, where string) (typeName string, content *hclsyntax.Body, typeRange hcl.Range, ok bool) {
	if len(nb.Labels) != 1 {
		c.add(nb.TypeRange, where+": dynamic block needs exactly one label", "the nested block type name")
		return "", nil, hcl.Range{}, false
	}
	typeName, typeRange = nb.Labels[0], nb.LabelRanges[0]
	for _, inner := range nb.Body.Blocks {
		if inner.Type == "content" {
			content = inner.Body
		}
	}
	if content == nil {
		c.add(nb.OpenBraceRange, fmt.Sprintf("%s: dynamic %q has no content block", where, typeName), "")
		return "", nil, hcl.Range{}, false
	}
	return typeName, content, typeRange, true
}

// required reports the required arguments body lacks, and the blocks with fewer than their
// minimum (but for those a dynamic block may generate).
func (c *schemaChecker) required(body *hclsyntax.Body, sb *SchemaBlock, where string, open hcl.Range, counts map[string]int, dynamic map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(sb.Attributes)) {
		if sb.Attributes[name].Required {
			if _, ok := body.Attributes[name]; !ok {
				c.add(open, fmt.Sprintf("%s: missing required argument %q", where, name), "")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sb.BlockTypes)) {
		bt := sb.BlockTypes[name]
		if bt.MinItems > 0 && counts[name] < bt.MinItems && !dynamic[name] {
			c.add(open, fmt.Sprintf("%s: missing required block %q", where, name), fmt.Sprintf("at least %d required", bt.MinItems))
		}
	}
}

// objectElemAttrs returns optional attributes for the object element of a list/set(object)
// type in cty JSON form (["list", ["object", {...}]]), or nil for any other type.
func objectElemAttrs(typ json.RawMessage) map[string]*SchemaAttribute {
	var outer []json.RawMessage
	if json.Unmarshal(typ, &outer) != nil || len(outer) != 2 {
		return nil
	}
	var kind string
	if json.Unmarshal(outer[0], &kind) != nil || (kind != "list" && kind != "set") {
		return nil
	}
	var inner []json.RawMessage
	if json.Unmarshal(outer[1], &inner) != nil || len(inner) < 2 {
		return nil
	}
	if json.Unmarshal(inner[0], &kind) != nil || kind != "object" {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(inner[1], &fields) != nil {
		return nil
	}
	attrs := make(map[string]*SchemaAttribute, len(fields))
	for k, t := range fields {
		attrs[k] = &SchemaAttribute{Type: t, Optional: true}
	}
	return attrs
}

// suggest returns "; did you mean \"x\"?" for the closest candidate within a small edit
// distance; a candidate that extends the name (visibility_timeout -> visibility_timeout_seconds)
// counts as close.
func suggest(name string, candidates []string) string {
	best, bestD := "", 4
	for _, c := range candidates {
		d := editDistance(name, c)
		if len(name) >= 4 && (strings.HasPrefix(c, name) || strings.HasPrefix(name, c)) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > len(name)/2 {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
