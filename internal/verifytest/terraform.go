package verifytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"

	"github.com/fleetc/fleetc/internal/tfmirror"
)

// TerraformFmt runs `terraform fmt -check -recursive -diff` on dir and returns the diff of
// every file that is not in canonical format.
func TerraformFmt(dir string) error {
	tf, err := Tool("terraform")
	if err != nil {
		return err
	}
	// The machine's TF_CLI_CONFIG_FILE names a file that does not exist; fmt needs no config.
	out, code, err := run(context.Background(), envWithout("TF_CLI_CONFIG_FILE"), dir, tf,
		"fmt", "-check", "-recursive", "-diff", "-no-color", ".")
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("terraform fmt -check %s: not canonically formatted (exit %d):\n%s", dir, code, out)
	}
	return nil
}

// ProviderMirror finds a Terraform provider filesystem mirror (a directory holding
// registry.terraform.io/...): where fleetc dev looks (tfmirror.Find: $FLEETC_TF_PROVIDER_MIRROR,
// else /opt/tf-plugins), else the first match of
// `find / -path '*registry.terraform.io/hashicorp/aws'`. Keep in step with tools/terraformrc.sh.
func ProviderMirror() (string, error) {
	m, err := tfmirror.Find()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrToolMissing, err)
	}
	if m != "" {
		return m, nil
	}
	if found := findAWSMirror("/"); found != "" {
		return found, nil
	}
	return "", fmt.Errorf("%w: no Terraform provider mirror with registry.terraform.io/hashicorp/aws (set %s)", ErrToolMissing, tfmirror.EnvMirror)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// findAWSMirror walks the file system for registry.terraform.io/hashicorp/aws, skipping pseudo
// file systems and .terraform directories (symlink farms into a real mirror).
func findAWSMirror(start string) string {
	var found []string
	_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable corners of / are expected
		}
		if !d.IsDir() {
			return nil
		}
		switch p {
		case "/proc", "/sys", "/dev":
			return filepath.SkipDir
		}
		if d.Name() == ".terraform" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "/"+awsProviderSource) {
			found = append(found, tfmirror.Root(p))
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// CLIConfig returns a Terraform CLI config that installs providers only from mirror, so
// `terraform init` never reaches the network (tfmirror.CLIConfig, the one fleetc dev writes).
func CLIConfig(mirror string) string { return tfmirror.CLIConfig(mirror) }

// MirrorCLIConfig writes dir/terraformrc: providers from the mirror (ProviderMirror), and
// returns its path, for TF_CLI_CONFIG_FILE. A missing mirror is ErrToolMissing. From an
// unpacked mirror (/opt/tf-plugins, bin/tf-schema-mirror) init links the provider directory
// into .terraform, so no cache is needed; a packed one (.zip) gets a plugin cache every test
// shares, so the ~700 MB provider is unpacked once. The cache is not safe for concurrent
// inits (Terraform relinks its entry on each: "mkdir …/linux_amd64: file exists" when
// parallel tests init at once), which is why an unpacked mirror goes without it.
func MirrorCLIConfig(dir string) (string, error) {
	mirror, err := ProviderMirror()
	if err != nil {
		return "", err
	}
	cfg := CLIConfig(mirror)
	if zips, _ := filepath.Glob(filepath.Join(mirror, "registry.terraform.io", "*", "*", "*.zip")); len(zips) > 0 {
		cache := filepath.Join(os.TempDir(), "fleetc-tf-plugin-cache")
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return "", err
		}
		cfg += fmt.Sprintf("plugin_cache_dir = %q\n", cache)
	}
	rc := filepath.Join(dir, "terraformrc")
	return rc, os.WriteFile(rc, []byte(cfg), 0o644)
}

// TerraformValidate copies dir to a temporary directory, runs `terraform init -backend=false`
// with providers from the real provider mirror (ProviderMirror), then `terraform validate -json`.
// It returns Problems holding every diagnostic (warnings too: generated code should have none),
// each with its file under dir and line:column. When the configuration's required_providers
// cannot be met by the mirror (e.g. aws >= 6 for aws_bedrockagentcore_* while the mirror holds
// 5.100.0) the error wraps ErrProviderUnavailable (so ErrToolMissing) and names the constraint,
// where it is declared and the versions the mirror has.
//
// .terraform/ and .terraform.lock.hcl are not copied: the check is of the configuration,
// against whatever build the mirror holds. Module sources must stay inside dir.
func TerraformValidate(ctx context.Context, dir string) error {
	mirror, err := ProviderMirror()
	if err != nil {
		return err
	}
	return validateWithMirror(ctx, dir, "", mirror, "terraform validate", true)
}

// TerraformValidateOut is TerraformValidate for a configuration that reads sibling artifacts
// through path.module (file("${path.module}/../runtime/x.json"), templatefile of
// ../statemachines/*.asl.json): it copies the whole output root and validates in its sub
// directory (normally "terraform").
func TerraformValidateOut(ctx context.Context, root, sub string) error {
	mirror, err := ProviderMirror()
	if err != nil {
		return err
	}
	return validateWithMirror(ctx, root, sub, mirror, "terraform validate", true)
}

// TerraformValidateSchemaOut is TerraformValidateSchema for a sub directory of an output root
// (see TerraformValidateOut).
func TerraformValidateSchemaOut(ctx context.Context, root, sub string) error {
	mirror, err := SchemaProviderMirror()
	if err != nil {
		return err
	}
	return validateWithMirror(ctx, root, sub, mirror, "terraform validate (schema-only provider)", false)
}

// SchemaProviderMirror is the mirror tools/install.sh builds: a schema-only hashicorp/aws
// (tools/tfschemaprovider) serving <shared>/terraform/aws-provider-schema.json under the release
// it was taken from (6.48.0). The error wraps ErrToolMissing when it has not been built.
func SchemaProviderMirror() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	m := filepath.Join(root, "bin", "tf-schema-mirror")
	if len(mirrorVersions(m, awsProviderSource)) == 0 {
		return "", fmt.Errorf("%w: schema-only provider mirror %s not built; %s", ErrToolMissing, m, installHint)
	}
	return m, nil
}

// TerraformValidateSchema is TerraformValidate with the schema-only provider from
// SchemaProviderMirror instead of a real provider build: Terraform itself checks argument names
// and value types, blocks, required arguments and references against the provider schema in
// ../shared (hashicorp/aws 6.48.0, which has aws_bedrockagentcore_*). It cannot run the real
// provider's own value validation (enums, ARN formats), so use both where the real one works.
// Fast: no large provider binary to load.
func TerraformValidateSchema(ctx context.Context, dir string) error {
	mirror, err := SchemaProviderMirror()
	if err != nil {
		return err
	}
	return validateWithMirror(ctx, dir, "", mirror, "terraform validate (schema-only provider)", false)
}

// validateWithMirror copies root and validates the configuration in root/sub ("" = root itself).
// With shareAWS, terraform attaches to the process's one running hashicorp/aws (reattach.go)
// instead of starting the provider itself; the schema-only provider has no debug mode to share.
func validateWithMirror(ctx context.Context, root, sub, mirror, label string, shareAWS bool) error {
	dir := filepath.Join(root, sub)
	tfPath, err := Tool("terraform")
	if err != nil {
		return err
	}
	selected, err := checkMirrorMeetsConstraints(dir, mirror)
	if err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "fleetc-tfvalidate-")
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if err := copyTree(root, work); err != nil {
		return err
	}
	work = filepath.Join(work, sub)
	rc := filepath.Join(tmp, "terraformrc")
	if err := os.WriteFile(rc, []byte(CLIConfig(mirror)), 0o644); err != nil {
		return fmt.Errorf("verify: %w", err)
	}

	env := append(envWithout(terraformOwnEnv...), "TF_CLI_CONFIG_FILE="+rc,
		"CHECKPOINT_DISABLE=1", // no version check call home
		"TF_IN_AUTOMATION=1", "TF_INPUT=0")
	if v := selected[awsProviderSource]; v != nil && shareAWS && canShareProvider {
		if bin := providerBinary(mirror, awsProviderSource, v.Original()); bin != "" {
			reattach, err := reattachProvider(ctx, bin)
			if err != nil {
				return err
			}
			env = append(env, reattachEnv+"="+reattach)
		}
	}

	msg, code, err := run(ctx, env, work, tfPath, "init", "-backend=false", "-no-color")
	if err != nil {
		return fmt.Errorf("terraform init %s: %w", dir, err)
	}
	if code != 0 {
		if strings.Contains(msg, "no available releases match the given constraints") ||
			strings.Contains(msg, "Failed to query available provider packages") {
			return fmt.Errorf("%w: terraform init %s: mirror %s cannot supply the required providers: %s", ErrProviderUnavailable, dir, mirror, msg)
		}
		return fmt.Errorf("terraform init %s: exit %d: %s", dir, code, msg)
	}
	out, err := terraformValidateJSON(ctx, env, work, tfPath)
	if err != nil {
		return fmt.Errorf("%s %s: %w", label, dir, err)
	}
	var ps Problems
	for _, d := range out.Diagnostics {
		p := &Problem{Tool: label, Severity: string(d.Severity), File: dir, Summary: d.Summary, Detail: d.Detail}
		if d.Range != nil {
			p.File = filepath.Join(dir, d.Range.Filename)
			p.Line, p.Column = d.Range.Start.Line, d.Range.Start.Column
		}
		ps = append(ps, p)
	}
	if len(ps) > 0 {
		return sortProblems(ps)
	}
	if !out.Valid {
		return fmt.Errorf("%s %s: invalid, but no diagnostics", label, dir)
	}
	return nil
}

// terraformOwnEnv are the variables validateWithMirror sets itself, or that would change what
// terraform does (logs on stderr, extra arguments, another data directory or workspace).
var terraformOwnEnv = []string{"TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", reattachEnv,
	"TF_LOG", "TF_LOG_PATH", "TF_LOG_CORE", "TF_LOG_PROVIDER", "TF_CLI_ARGS", "TF_CLI_ARGS_init",
	"TF_CLI_ARGS_validate", "TF_WORKSPACE", "TF_IN_AUTOMATION", "TF_INPUT"}

// terraformValidateJSON runs `terraform validate -json` in dir. Not tfexec's Validate: that
// has no way to pass TF_REATTACH_PROVIDERS, which tfexec strips from the environment.
// Terraform exits 1 on an invalid configuration and still prints its diagnostics.
func terraformValidateJSON(ctx context.Context, env []string, dir, tfPath string) (*tfjson.ValidateOutput, error) {
	cmd := exec.CommandContext(ctx, tfPath, "validate", "-json", "-no-color")
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, runErr := cmd.Output()
	var out tfjson.ValidateOutput
	if err := json.Unmarshal(stdout, &out); err != nil {
		return nil, fmt.Errorf("no JSON result (%v): %s%s", runErr, stdout, stderr.Bytes())
	}
	if runErr != nil && out.Valid {
		return nil, fmt.Errorf("%v: %s", runErr, stderr.Bytes())
	}
	return &out, nil
}

// copyTree copies regular files and directories from src to dst, skipping Terraform state.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if d.Name() == ".terraform" && d.IsDir() {
			return filepath.SkipDir
		}
		if d.Name() == ".terraform.lock.hcl" || strings.HasSuffix(d.Name(), ".tfstate") {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// providerNeed is what one configuration asks of a provider source.
type providerNeed struct {
	constraints []string // raw constraint strings, in source order
	where       []string // file:line of each constraint, for the message
}

// awsProviderSource is the provider every generated configuration needs, and the one
// validateWithMirror shares across terraform runs (reattach.go).
const awsProviderSource = "registry.terraform.io/hashicorp/aws"

// checkMirrorMeetsConstraints reads every required_providers block (and providers implied by
// resource type prefixes) under dir and checks the mirror has a version satisfying them all,
// so an unmeetable constraint is reported as ErrToolMissing with a precise reason instead of
// as terraform init's generic failure. It returns the version of each source that init will
// select: the newest that meets them.
func checkMirrorMeetsConstraints(dir, mirror string) (map[string]*version.Version, error) {
	needs, err := requiredProviders(dir)
	if err != nil {
		return nil, err
	}
	sources := slices.Sorted(maps.Keys(needs))
	selected := map[string]*version.Version{}
	var reasons []string
	for _, src := range sources {
		need := needs[src]
		avail := mirrorVersions(mirror, src)
		if len(avail) == 0 {
			reasons = append(reasons, fmt.Sprintf("mirror %s has no %s for %s_%s", mirror, src, runtime.GOOS, runtime.GOARCH))
			continue
		}
		var cs version.Constraints
		for i, raw := range need.constraints {
			c, err := version.NewConstraint(raw)
			if err != nil {
				return nil, &Problem{Tool: "terraform validate", File: need.where[i], Summary: "invalid provider version constraint", Detail: fmt.Sprintf("%q: %v", raw, err)}
			}
			cs = append(cs, c...)
		}
		for _, v := range avail { // newest first
			if cs.Check(v) {
				selected[src] = v
				break
			}
		}
		if selected[src] == nil {
			names := make([]string, len(avail))
			for i, v := range avail {
				names[i] = v.String()
			}
			reasons = append(reasons, fmt.Sprintf("%s %q (%s) cannot be met by mirror %s, which has %s; point FLEETC_TF_PROVIDER_MIRROR at a mirror with a matching build",
				src, strings.Join(need.constraints, ", "), strings.Join(need.where, ", "), mirror, strings.Join(names, ", ")))
		}
	}
	if len(reasons) > 0 {
		return nil, fmt.Errorf("%w: terraform validate %s: %s", ErrProviderUnavailable, dir, strings.Join(reasons, "; "))
	}
	return selected, nil
}

// requiredProviders maps a provider source address (registry.terraform.io/ns/name) to the
// constraints the .tf files under dir put on it. Each module directory's resource types imply
// hashicorp/<prefix> when that local name is not declared, as Terraform does.
func requiredProviders(dir string) (map[string]*providerNeed, error) {
	files, err := tfFiles(dir)
	if err != nil {
		return nil, err
	}
	needs := map[string]*providerNeed{}
	add := func(src, constraint, where string) {
		n := needs[src]
		if n == nil {
			n = &providerNeed{}
			needs[src] = n
		}
		if constraint != "" {
			n.constraints = append(n.constraints, constraint)
			n.where = append(n.where, where)
		}
	}
	declared := map[string]map[string]bool{} // module dir -> local names
	implied := map[string]map[string]string{}
	for _, f := range files {
		body, _, err := parseTF(f)
		if err != nil || body == nil {
			continue // syntax errors are terraform validate's (and fmt's) to report
		}
		mod := filepath.Dir(f)
		if declared[mod] == nil {
			declared[mod], implied[mod] = map[string]bool{}, map[string]string{}
		}
		for _, b := range body.Blocks {
			switch b.Type {
			case "terraform":
				for _, rp := range b.Body.Blocks {
					if rp.Type != "required_providers" {
						continue
					}
					for name, attr := range rp.Body.Attributes {
						declared[mod][name] = true
						src, constraint := providerRequirement(name, attr.Expr)
						add(src, constraint, fmt.Sprintf("%s:%d", f, attr.SrcRange.Start.Line))
					}
				}
			case "resource", "data":
				if len(b.Labels) == 2 {
					local, _, _ := strings.Cut(b.Labels[0], "_")
					if local != "terraform" { // terraform_data and friends are built in
						implied[mod][local] = fmt.Sprintf("%s:%d", f, b.TypeRange.Start.Line)
					}
				}
			}
		}
	}
	for mod, names := range implied {
		for local, where := range names {
			if !declared[mod][local] {
				add(normalizeSource(local), "", where)
			}
		}
	}
	return needs, nil
}

// providerRequirement reads `name = { source = "...", version = "..." }` (or the legacy
// `name = "constraint"`) without evaluating anything else.
func providerRequirement(name string, expr hcl.Expression) (source, constraint string) {
	source = normalizeSource(name)
	v, diags := expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		return source, ""
	}
	switch {
	case v.Type() == cty.String:
		return source, v.AsString()
	case v.Type().IsObjectType():
		if v.Type().HasAttribute("source") {
			if s := v.GetAttr("source"); s.Type() == cty.String && !s.IsNull() {
				source = normalizeSource(s.AsString())
			}
		}
		if v.Type().HasAttribute("version") {
			if s := v.GetAttr("version"); s.Type() == cty.String && !s.IsNull() {
				constraint = s.AsString()
			}
		}
	}
	return source, constraint
}

// normalizeSource turns "aws", "hashicorp/aws" or "registry.terraform.io/hashicorp/aws" into
// the full lower-case address.
func normalizeSource(s string) string {
	s = strings.ToLower(s)
	switch strings.Count(s, "/") {
	case 0:
		return "registry.terraform.io/hashicorp/" + s
	case 1:
		return "registry.terraform.io/" + s
	}
	return s
}

// mirrorVersions lists the versions of src in a filesystem mirror for this platform, newest
// first, in either the unpacked (VERSION/OS_ARCH/) or packed (terraform-provider-NAME_VERSION_OS_ARCH.zip) layout.
func mirrorVersions(mirror, src string) []*version.Version {
	dir := filepath.Join(mirror, filepath.FromSlash(src))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	platform := runtime.GOOS + "_" + runtime.GOARCH
	name := src[strings.LastIndex(src, "/")+1:]
	seen := map[string]bool{}
	var out []*version.Version
	for _, e := range entries {
		raw := ""
		if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			if isDir(filepath.Join(dir, e.Name(), platform)) {
				raw = e.Name()
			}
		} else if p := "terraform-provider-" + name + "_"; strings.HasPrefix(e.Name(), p) && strings.HasSuffix(e.Name(), "_"+platform+".zip") {
			raw = strings.TrimSuffix(strings.TrimPrefix(e.Name(), p), "_"+platform+".zip")
		}
		if raw == "" || seen[raw] {
			continue
		}
		if v, err := version.NewVersion(raw); err == nil {
			seen[raw] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GreaterThan(out[j]) })
	return out
}

// tfFiles lists the .tf files under dir (sorted), skipping .terraform directories.
func tfFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".tf") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// parseTF parses one native-syntax .tf file.
func parseTF(path string) (*hclsyntax.Body, hcl.Diagnostics, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if f == nil {
		return nil, diags, nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil, diags, errors.New("verify: unexpected HCL body type")
	}
	return body, diags, nil
}
