package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/compat"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/registry"
	"github.com/fleetc/fleetc/spec/diag"
)

// runSchemas is `fleetc schemas check|publish`: the event contracts against a base spec or
// the EventBridge Schema Registry.
func runSchemas(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return runSchemasCheck(args[1:], stdout, stderr)
		case "publish":
			return runSchemasPublish(args[1:], stdout, stderr)
		}
	}
	fmt.Fprint(stderr, "fleetc schemas: name a subcommand:\n"+
		"  fleetc schemas check FILE (--base REF | --base-file F | --against-registry NAME) [--endpoint-url URL] [--format text|json]\n"+
		"  fleetc schemas publish FILE --registry NAME [--dry-run] [--allow-breaking] [--endpoint-url URL] [--format text|json]\n")
	return exitUsage
}

// side is one loaded spec: its fleet, its contracts and where its paths are.
type side struct {
	name      string
	src       []byte
	fleet     *ir.Fleet
	contracts []compat.Contract
}

// loadSide loads a spec and generates its contracts; diagnostics go to stderr.
func loadSide(name string, src []byte, format string, stderr io.Writer) (*side, bool) {
	_, fleet, ds := compiler.LoadBytes(name, src)
	if fleet != nil && !ds.HasErrors() {
		var cds diag.Diagnostics
		s := &side{name: name, src: src, fleet: fleet}
		s.contracts, cds = compat.FromFleet(fleet)
		if fleet.Index != nil {
			fleet.Index.Locate(cds)
		}
		ds = append(ds, cds...).Sorted()
		if !ds.HasErrors() {
			if len(ds) > 0 && format == "text" {
				render(stderr, "text", ds, judge(ds, false))
			}
			return s, true
		}
	}
	render(stderr, format, ds, judge(ds, false))
	return nil, false
}

func readSide(path, format string, stderr io.Writer) (*side, bool) {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc schemas: %v\n", err)
		return nil, false
	}
	return loadSide(path, src, format, stderr)
}

func runSchemasCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schemas check", stderr)
	base := fs.String("base", "", "compare with the spec at this git revision (e.g. origin/main)")
	baseFile := fs.String("base-file", "", "compare with this spec file")
	against := fs.String("against-registry", "", "compare with the latest versions in this EventBridge schema registry")
	endpoint := fs.String("endpoint-url", "", "Schemas API endpoint (default: the AWS configuration chain, AWS_ENDPOINT_URL_SCHEMAS)")
	format := &formatFlag{value: "text", allowed: []string{"text", "json"}}
	fs.Var(format, "format", "output format: text or json")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
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
	head, ok := readSide(files[0], format.value, stderr)
	if !ok {
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
		if b, ok = loadSide(name, src, format.value, stderr); !ok {
			fmt.Fprintf(stderr, "fleetc schemas check: the base spec %s does not build\n", name)
			return exitUsage
		}
		baseContracts, baseName = b.contracts, name
	case *baseFile != "":
		if b, ok = readSide(*baseFile, format.value, stderr); !ok {
			fmt.Fprintf(stderr, "fleetc schemas check: the base spec %s does not build\n", *baseFile)
			return exitUsage
		}
		baseContracts, baseName = b.contracts, *baseFile
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
	r := compat.Compare(baseContracts, head.contracts)
	if format.value == "json" {
		writeJSON(stdout, map[string]any{"format_version": checkFormatVersion, "base": baseName, "head": files[0],
			"errors": r.Errors(), "breaking": len(r.Breaking()), "findings": located(r.Findings, b, head)})
	} else {
		printFindings(stdout, r.Findings, b, head, "")
		printVerdict(stdout, r, baseName)
	}
	if r.Errors() > 0 {
		return exitInvalid
	}
	return exitOK
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
	if f.Side == "base" {
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
		if f.Severity == compat.SevWarning {
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
		if !f.Breaking && f.Severity == compat.SevWarning {
			care++
		}
	}
	fmt.Fprintf(w, "%d breaking change(s) since %s, %d without a version bump; %d to check; %d safe\n", breaking, base, r.Errors(), care, len(r.Findings)-breaking-care)
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// checkFormatVersion versions `schemas check --format json`: 2.0 renamed kinds and set each
// kind's direction from compat.KindTable.
const checkFormatVersion = "2.0"

func runSchemasPublish(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schemas publish", stderr)
	reg := fs.String("registry", "", "EventBridge schema registry to publish to (created when missing)")
	dryRun := fs.Bool("dry-run", false, "read the registry and report what would change; write nothing")
	allow := fs.Bool("allow-breaking", false, "publish breaking changes even without a version bump")
	endpoint := fs.String("endpoint-url", "", "Schemas API endpoint (default: the AWS configuration chain, AWS_ENDPOINT_URL_SCHEMAS)")
	format := &formatFlag{value: "text", allowed: []string{"text", "json"}}
	fs.Var(format, "format", "output format: text or json")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) != 1 || *reg == "" {
		fmt.Fprintln(stderr, "fleetc schemas publish: name one fleet.yaml and --registry NAME")
		return exitUsage
	}
	head, ok := readSide(files[0], format.value, stderr)
	if !ok {
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
	if res != nil {
		if format.value == "json" {
			for i := range res.Items {
				if res.Items[i].Findings == nil {
					res.Items[i].Findings = []compat.Finding{}
				}
			}
			writeJSON(stdout, res)
		} else {
			printPublish(stdout, res, head)
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "fleetc schemas publish: %v\nRe-run to finish: schemas already published are left as they are.\n", err)
		return exitUsage
	case res.Refused():
		fmt.Fprintln(stderr, "fleetc schemas publish: breaking changes refused, nothing written; bump the events' version, or pass --allow-breaking")
		return exitInvalid
	}
	return exitOK
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
