package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/compiler/registry"
	"github.com/fleetc/fleetc/spec"
	"github.com/fleetc/fleetc/spec/diag"
)

func newSchemasCmd(s *streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "schemas",
		Short: "Check event contracts for breaking changes, publish them to the Schema Registry",
		Long: `The EventBridge Schema Registry stores versions of a schema but checks no compatibility,
so fleetc does: schemas check compares the contracts of a spec with a base (a git
revision, a file or the registry), schemas publish writes them to a registry, refusing
breaking changes without a version bump.`,
		Example: `  fleetc schemas check fleet.yaml --base origin/main
  fleetc schemas publish fleet.yaml --registry my-contracts --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(s.stderr)
			_ = c.Help()
			return exitCode(exitUsage)
		},
	}
	c.AddCommand(newSchemasCheckCmd(s), newSchemasPublishCmd(s))
	return c
}

// side is one loaded spec: its fleet, its contracts and where its paths are.
type side struct {
	name      string
	src       []byte
	fleet     *ir.Fleet
	contracts []compat.Contract
}

// loadSide loads a spec and generates its contracts. It returns the spec's diagnostics
// whether or not it loaded (nil side: it has errors); the command prints them.
func loadSide(name string, src []byte, env string) (*side, diag.Diagnostics) {
	_, fleet, ds := compiler.LoadContractsBytes(name, src, env)
	if fleet == nil || ds.HasErrors() {
		return nil, ds
	}
	var cds diag.Diagnostics
	s := &side{name: name, src: src, fleet: fleet}
	s.contracts, cds = compat.FromFleet(fleet)
	if fleet.Index != nil {
		fleet.Index.Locate(cds)
	}
	ds = append(ds, cds...).Sorted()
	if ds.HasErrors() {
		return nil, ds
	}
	return s, ds
}

// readSide is loadSide for a file; an unreadable file is reported on stderr (nil side, no
// diagnostics).
func readSide(path, env string, stderr io.Writer) (*side, diag.Diagnostics) {
	src, err := spec.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc schemas: %v\n", err)
		return nil, nil
	}
	return loadSide(path, src, env)
}

// sideDiagnostics prints a side's diagnostics in a text format at once, as a compiler
// does; a JSON document carries them instead (its header), so they are kept for it.
func sideDiagnostics(format string, all *diag.Diagnostics, ds diag.Diagnostics, stderr io.Writer) {
	if format == view.JSON {
		*all = append(*all, ds...)
		return
	}
	view.Aside(stderr, ds)
}

// schemasCheckOptions are schemas check's flags.
type schemasCheckOptions struct {
	base, baseFile, against, endpoint string
	format                            *formatFlag
}

func newSchemasCheckCmd(s *streams) *cobra.Command {
	o := schemasCheckOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "check FILE (--base REF | --base-file F | --against-registry NAME) [--endpoint-url URL] [--format text|json]",
		Short: "Compare a spec's event contracts with a base and report breaking changes",
		Long: `Schemas check compares the event contracts FILE generates with those of a base: the same
file at a git revision (--base), another spec (--base-file) or the latest versions in an
EventBridge schema registry (--against-registry), and says per change whom it breaks.

Arguments:
  FILE  the fleet.yaml whose contracts to check

Exit 0 no breaking change without a version bump, 1 breaking change(s) without a bump or
an invalid spec, 2 usage error, an unreadable base or a failed AWS call.`,
		Example: `  fleetc schemas check fleet.yaml --base origin/main
  fleetc schemas check fleet.yaml --base-file old/fleet.yaml --format json`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runSchemasCheck(args, s.env, o, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVar(&o.base, "base", "", "compare with the spec at this git revision (e.g. origin/main)")
	c.Flags().StringVar(&o.baseFile, "base-file", "", "compare with this spec file")
	c.Flags().StringVar(&o.against, "against-registry", "", "compare with the latest versions in this EventBridge schema registry")
	c.Flags().StringVar(&o.endpoint, "endpoint-url", "", "Schemas API endpoint (default: the AWS configuration chain, AWS_ENDPOINT_URL_SCHEMAS)")
	addFormat(c, o.format, "")
	return c
}

func runSchemasCheck(files []string, env string, o schemasCheckOptions, stdout, stderr io.Writer) int {
	base, baseFile, against, endpoint, format := &o.base, &o.baseFile, &o.against, &o.endpoint, o.format
	n := 0
	for _, s := range []string{*base, *baseFile, *against} {
		if s != "" {
			n++
		}
	}
	if len(files) != 1 || n != 1 {
		fmt.Fprintln(stderr, "fleetc schemas check: name one fleet.yaml and exactly one of --base REF, --base-file F, --against-registry NAME")
		return exitUsage
	}
	var all diag.Diagnostics // for the JSON document: the head's, then the base's
	head, ds := readSide(files[0], env, stderr)
	sideDiagnostics(format.value, &all, ds, stderr)
	if head == nil {
		if format.value == view.JSON && ds != nil {
			view.Stopped(view.JSON, stdout, stderr, all)
		}
		return exitInvalid
	}
	var baseContracts []compat.Contract
	var b *side
	baseName := ""
	switch {
	case *base != "":
		name, src, err := gitShow(*base, files[0])
		if err != nil {
			fmt.Fprintf(stderr, "fleetc schemas check: %v\n", err)
			return exitUsage
		}
		b, ds = loadSide(name, src, env)
		baseName = name
	case *baseFile != "":
		if _, err := os.Stat(*baseFile); err != nil {
			fmt.Fprintf(stderr, "fleetc schemas check: cannot read --base-file: %v\n", err)
			return exitUsage
		}
		b, ds = readSide(*baseFile, env, stderr)
		baseName = *baseFile
	default:
		ctx := context.Background()
		api, err := registry.NewClient(ctx, *endpoint)
		if err == nil {
			baseContracts, err = registry.Latest(ctx, api, *against, head.contracts)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fleetc schemas check: %v\n", err)
			return exitUsage
		}
		baseName = "registry " + *against
	}
	if *base != "" || *baseFile != "" {
		sideDiagnostics(format.value, &all, ds, stderr)
		if b == nil {
			if format.value == view.JSON {
				view.Stopped(view.JSON, stdout, stderr, all)
			}
			fmt.Fprintf(stderr, "fleetc schemas check: the base spec %s does not build\n", baseName)
			return exitUsage
		}
		baseContracts = b.contracts
	}
	r := compat.Compare(baseContracts, head.contracts)
	if format.value == view.JSON {
		_ = view.WriteJSON(stdout, schemasCheckDoc{Header: jsonreport.NewHeader(all), Base: baseName, Head: files[0],
			Errors: r.Errors(), Breaking: len(r.Breaking()), Findings: located(r.Findings, b, head)})
	} else {
		printFindings(stdout, r.Findings, b, head, "")
		printVerdict(stdout, r, baseName)
	}
	if r.Errors() > 0 {
		return exitInvalid
	}
	return exitOK
}

// schemasCheckDoc is schemas check's JSON document (schemas/output/schemas-check.schema.json).
type schemasCheckDoc struct {
	jsonreport.Header
	Base string `json:"base"`
	Head string `json:"head"`
	// Errors counts the breaking changes without a version bump (each fails the check).
	Errors   int              `json:"errors"`
	Breaking int              `json:"breaking"`
	Findings []locatedFinding `json:"findings"`
}

// locatedFinding is a finding with the source position of its spec path.
type locatedFinding struct {
	compat.Finding
	Range *diag.Range `json:"range,omitempty"`
}

func located(fs []compat.Finding, base, head *side) []locatedFinding {
	out := []locatedFinding{}
	for _, f := range fs {
		out = append(out, locatedFinding{f, position(f, base, head)})
	}
	return out
}

func position(f compat.Finding, base, head *side) *diag.Range {
	s := head
	if f.Side == compat.Base {
		s = base
	}
	if s == nil || s.fleet.Index == nil || f.Path == "" {
		return nil
	}
	return s.fleet.Index.Subject(f.Path)
}

func printFindings(w io.Writer, fs []compat.Finding, base, head *side, indent string) {
	for _, f := range fs {
		label := "safe"
		if f.Severity == diag.Warning {
			label = "warning" // needs care, or breaking with a bump (below)
		}
		if f.Breaking {
			label = "BREAKING"
			if f.Bumped {
				label = "breaking"
			}
		}
		fmt.Fprintf(w, "%s%-8s  %s: %s\n", indent, label, f.Event, f.Summary)
		if f.Breaking || f.Direction != "" {
			bump := "not bumped"
			if f.Bumped {
				bump = "bumped"
			}
			fmt.Fprintf(w, "%s          breaks %s; consumers: %s; version %d → %d (%s)\n", indent, f.Direction, consumers(f), f.BaseVersion, f.HeadVersion, bump)
		}
		if r := position(f, base, head); r != nil {
			fmt.Fprintf(w, "%s          at %s\n", indent, r)
		}
	}
}

func consumers(f compat.Finding) string {
	parts := append([]string{}, f.Consumers...)
	for _, wf := range f.Workflows {
		parts = append(parts, "workflow "+wf)
	}
	if len(parts) == 0 {
		return "none in this fleet"
	}
	return strings.Join(parts, ", ")
}

func printVerdict(w io.Writer, r compat.Report, base string) {
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "event contracts unchanged since %s\n", base)
		return
	}
	breaking, care := len(r.Breaking()), 0
	for _, f := range r.Findings {
		if !f.Breaking && f.Severity == diag.Warning {
			care++
		}
	}
	fmt.Fprintf(w, "%d breaking change(s) since %s, %d without a version bump; %d to check; %d safe\n", breaking, base, r.Errors(), care, len(r.Findings)-breaking-care)
}

// schemasPublishOptions are schemas publish's flags.
type schemasPublishOptions struct {
	registry, endpoint string
	dryRun, allow      bool
	format             *formatFlag
}

func newSchemasPublishCmd(s *streams) *cobra.Command {
	o := schemasPublishOptions{format: newFormat("text", "text", "json")}
	c := &cobra.Command{
		Use:   "publish FILE --registry NAME [--dry-run] [--allow-breaking] [--endpoint-url URL] [--format text|json]",
		Short: "Publish a spec's event contracts to an EventBridge schema registry",
		Long: `Schemas publish sends the generated draft-04 schemas to the registry NAME (created when
missing), a registry outside the fleet: the fleet's own, <fleet>-events, belongs to its
generated Terraform, and publish refuses it so that no schema has two writers. It reads the latest version of every schema first and writes nothing at all if
any change is breaking without a version bump (unless --allow-breaking). Unchanged
schemas are not written; a run that stopped halfway finishes on re-run.

Arguments:
  FILE  the fleet.yaml whose contracts to publish

Credentials and region come from the standard AWS chain. Exit 0 published (or nothing to
do), 1 refused (breaking change, or a limit), 2 usage error or a failed AWS call.`,
		Example: `  fleetc schemas publish fleet.yaml --registry my-contracts --dry-run
  fleetc schemas publish fleet.yaml --registry my-contracts`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runSchemasPublish(args, s.env, o, s.stdout, s.stderr))
		},
	}
	c.Flags().StringVar(&o.registry, "registry", "", "EventBridge schema registry to publish to (created when missing)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "read the registry and report what would change; write nothing")
	c.Flags().BoolVar(&o.allow, "allow-breaking", false, "publish breaking changes even without a version bump")
	c.Flags().StringVar(&o.endpoint, "endpoint-url", "", "Schemas API endpoint (default: the AWS configuration chain, AWS_ENDPOINT_URL_SCHEMAS)")
	addFormat(c, o.format, "")
	return c
}

func runSchemasPublish(files []string, env string, o schemasPublishOptions, stdout, stderr io.Writer) int {
	reg, dryRun, allow, endpoint, format := &o.registry, &o.dryRun, &o.allow, &o.endpoint, o.format
	if len(files) != 1 || *reg == "" {
		fmt.Fprintln(stderr, "fleetc schemas publish: name one fleet.yaml and --registry NAME")
		return exitUsage
	}
	if envs := compiler.Environments(files[0]); env == "" && len(envs) > 0 {
		// The contracts are the same everywhere, but the fleet's managed registry is each
		// environment's own.
		fmt.Fprintf(stderr, "fleetc schemas publish: %s declares environments %s, each with its own registry: name one with --env\n", files[0], strings.Join(envs, ", "))
		return exitUsage
	}
	head, ds := readSide(files[0], env, stderr)
	if format.value != view.JSON {
		view.Aside(stderr, ds) // the JSON document carries them
	}
	if head == nil {
		if format.value == view.JSON && ds != nil {
			view.Stopped(view.JSON, stdout, stderr, ds)
		}
		return exitInvalid
	}
	sum := sha256.Sum256(head.src)
	opts := registry.Options{Registry: *reg, DryRun: *dryRun, AllowBreaking: *allow, Managed: head.fleet.SchemaRegistry,
		Tool: "fleetc " + Version, Digest: hex.EncodeToString(sum[:])[:12], Tags: map[string]string{}}
	for _, t := range head.fleet.Tags {
		opts.Tags[t.Key] = t.Value
	}
	if err := registry.Check(opts, head.contracts); err != nil {
		fmt.Fprintf(stderr, "fleetc schemas publish: refused before any call:\n%v\n", err)
		return exitInvalid
	}
	ctx := context.Background()
	api, err := registry.NewClient(ctx, *endpoint)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc schemas publish: %v\n", err)
		return exitUsage
	}
	res, err := registry.Publish(ctx, api, opts, head.contracts)
	if res != nil && !(err != nil && *dryRun) { // a dry run that failed has nothing to show
		if format.value == "json" {
			for i := range res.Items {
				if res.Items[i].Findings == nil {
					res.Items[i].Findings = []compat.Finding{}
				}
			}
			_ = view.WriteJSON(stdout, schemasPublishDoc{jsonreport.NewHeader(ds), res})
		} else {
			printPublish(stdout, res, head)
		}
	}
	switch {
	case err != nil && (*dryRun || res == nil || res.Writes == 0):
		fmt.Fprintf(stderr, "fleetc schemas publish: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "fleetc schemas publish: %v\nRe-run to finish: schemas already published are left as they are.\n", err)
		return exitUsage
	case res.Refused():
		fmt.Fprintln(stderr, "fleetc schemas publish: breaking changes refused, nothing written; bump the events' version, or pass --allow-breaking")
		return exitInvalid
	}
	return exitOK
}

// schemasPublishDoc is schemas publish's JSON document (schemas/output/schemas-publish.schema.json).
type schemasPublishDoc struct {
	jsonreport.Header
	*registry.Result
}

func printPublish(w io.Writer, res *registry.Result, head *side) {
	state := "exists"
	switch {
	case res.RegistryCreated:
		state = "created"
	case !res.RegistryExisted && res.DryRun:
		state = "would be created"
	case !res.RegistryExisted:
		state = "missing"
	}
	fmt.Fprintf(w, "registry %s: %s\n", res.Registry, state)
	for _, it := range res.Items {
		version := ""
		switch {
		case it.Action == registry.Unchanged:
			version = "version " + it.Version + " (already published)"
		case it.Previous != "" && it.Version != "":
			version = "version " + it.Previous + " → " + it.Version
		case it.Version != "":
			version = "version " + it.Version
		case it.Previous != "":
			version = "latest version " + it.Previous
		}
		fmt.Fprintf(w, "%-12s %s  %s\n", it.Action, it.Schema, version)
		printFindings(w, it.Findings, nil, head, "    ")
	}
	if res.DryRun {
		fmt.Fprintln(w, "dry run: nothing written")
		return
	}
	fmt.Fprintf(w, "%d write(s)\n", res.Writes)
}
