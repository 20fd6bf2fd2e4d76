// Package deploy plans, applies and destroys a compiled fleet with the real Terraform CLI
// (through hashicorp/terraform-exec). It builds exactly as `fleetc build` does, adds what only
// fleetc knows to Terraform's plan (which agent class or plane a resource belongs to, which
// replacement strands messages or records) and refuses to lose stateful resources unless each
// one is named. With an emulator endpoint it writes an override file (see EmulatorOverride)
// beside the generated configuration, never into it.
//
// It lives under compiler/ because it drives the compiler's output to its consumer, as
// internal/verifytest does for the checkers; cmd/fleetc/cli only parses flags and prints.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/artifact"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/internal/localhttp"
	"github.com/fleetc/fleetc/spec/diag"
)

// EnvEndpoint is the environment variable that stands in for --endpoint.
const EnvEndpoint = "FLEETC_AWS_ENDPOINT"

// ErrTerraformMissing is returned when no terraform binary can be found.
var ErrTerraformMissing = errors.New("terraform not found")

// ErrInterrupted is returned when the context ended while Terraform ran.
var ErrInterrupted = errors.New("interrupted")

// Options says what to build and how to run Terraform.
type Options struct {
	Spec         string // fleet.yaml
	Env          string // the spec's environment ("" for a spec without environments)
	Dir          string // output root, as `fleetc build -o` (Terraform runs in Dir/terraform)
	TerraformBin string // terraform binary; "" = search PATH
	Endpoint     string // local AWS emulator base URL; "" = AWS
	// Emulator is the emulator at Endpoint, whose gap profile the override applies; ""
	// detects it (DetectEmulator).
	Emulator Emulator
	// ForceEndpoint accepts an Endpoint that is not on loopback (an emulator on another host).
	ForceEndpoint bool
	VarFiles      []string // -var-file, passed through
	BackendConfig []string // init -backend-config, passed through
	Strict        bool     // warnings fail the build, as `fleetc build --strict`
	// GracePeriod is how long an interrupted Terraform gets to finish in-flight calls and
	// write its state before it is killed (DefaultGracePeriod when zero).
	GracePeriod time.Duration
	// Compiled is Spec already compiled by the caller (fleetc dev reads the same Result);
	// nil: Prepare compiles Spec in Env.
	Compiled *compiler.Result
	// CLIConfigFile, when set, is the Terraform CLI config (TF_CLI_CONFIG_FILE) the terraform
	// it runs reads, whatever the environment says: fleetc dev's, for a provider mirror.
	CLIConfigFile string
	// Environ is the environment terraform starts from (KEY=value, before the emulator's
	// clearing and dummy keys); nil: this process's. A caller that runs several workspaces at
	// once gives each its own (the emulator tests run in parallel in one process).
	Environ []string
}

// Workspace is a built fleet with Terraform initialised in its terraform directory.
type Workspace struct {
	Dir, TFDir string
	Set        *artifact.Set
	Fleet      *ir.Fleet // the compiled fleet
	Override   *Override // nil without an endpoint
	Emulator   Emulator  // the emulator at the endpoint ("" without one)
	groups     map[string]string
	tf         *tfexec.Terraform
	opts       Options
}

// BuildError carries the diagnostics of a spec that does not build.
type BuildError struct{ Diagnostics diag.Diagnostics }

func (e *BuildError) Error() string {
	errs, warns := e.Diagnostics.Count()
	return fmt.Sprintf("the spec does not build: %d error(s), %d warning(s)", errs, warns)
}

// Prepare builds the spec into opts.Dir exactly as `fleetc build` does, writes (or removes)
// the emulator override, finds terraform and runs `terraform init -input=false`. Build
// diagnostics (warnings too) come back for the caller to print; on build errors the error is a
// *BuildError and nothing was written.
func Prepare(ctx context.Context, opts Options) (*Workspace, diag.Diagnostics, error) {
	if err := CheckEndpoint(opts.Endpoint, opts.ForceEndpoint); err != nil {
		return nil, nil, err
	}
	res := opts.Compiled
	if res == nil {
		var err error
		// With an emulator, workers run here, with this environment (Local).
		if res, err = compiler.Compile(compiler.Input{Path: opts.Spec, Env: opts.Env, Local: opts.Endpoint != ""}); err != nil {
			return nil, nil, err
		}
	}
	set, ds := res.Files, res.Diagnostics
	if set == nil || failed(ds, opts.Strict) {
		return nil, ds, &BuildError{ds}
	}
	bin, err := FindTerraform(opts.TerraformBin)
	if err != nil {
		return nil, ds, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, ds, err
	}
	w := &Workspace{Dir: dir, TFDir: filepath.Join(dir, "terraform"), Set: set, Fleet: res.Fleet, opts: opts}
	prev, err := ReadInventory(dir)
	if err != nil {
		return nil, ds, err
	}
	if w.groups, err = Groups(set, prev); err != nil {
		return nil, ds, err
	}
	if err := artifact.WriteDir(opts.Dir, set); err != nil {
		return nil, ds, fmt.Errorf("writing %s: %w", opts.Dir, err)
	}
	if err := WriteInventory(dir, set); err != nil {
		return nil, ds, err
	}
	override := filepath.Join(w.TFDir, OverrideFile)
	if opts.Endpoint != "" {
		if w.Emulator = opts.Emulator; w.Emulator == "" {
			if w.Emulator, err = DetectEmulator(ctx, opts.Endpoint); err != nil {
				return nil, ds, err
			}
		}
		if w.Override, err = EmulatorOverride(set, opts.Endpoint, w.Emulator.Gaps()); err != nil {
			return nil, ds, err
		}
		if err := artifact.WriteFileIn(dir, "terraform/"+OverrideFile, w.Override.Bytes); err != nil {
			return nil, ds, err
		}
	} else if err := os.Remove(override); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, ds, err
	}
	// The files beside the override: this run's, and none left from an earlier one.
	stale, _ := filepath.Glob(filepath.Join(w.TFDir, EmulatorFilePrefix+"*"))
	for _, p := range stale {
		if filepath.Base(p) != OverrideFile {
			_ = os.Remove(p)
		}
	}
	if w.Override != nil {
		for _, f := range w.Override.Files {
			if err := artifact.WriteFileIn(dir, "terraform/"+f.Path, f.Bytes); err != nil {
				return nil, ds, err
			}
		}
	}

	if w.tf, err = tfexec.NewTerraform(w.TFDir, bin); err != nil {
		return nil, ds, err
	}
	// On cancellation terraform-exec sends SIGINT (Terraform's graceful stop: in-flight calls
	// finish, state is written) and kills only after the grace period.
	if err := w.tf.SetWaitDelay(w.grace()); err != nil {
		return nil, ds, err
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	env := terraformEnv(environ, opts.Endpoint)
	if opts.CLIConfigFile != "" {
		env["TF_CLI_CONFIG_FILE"] = opts.CLIConfigFile
	}
	if err := w.tf.SetEnv(env); err != nil {
		return nil, ds, err
	}
	var initOpts []tfexec.InitOption
	for _, kv := range opts.BackendConfig {
		initOpts = append(initOpts, tfexec.BackendConfig(kv))
	}
	if err := w.tf.Init(ctx, initOpts...); err != nil {
		return nil, ds, w.tfErr(ctx, "terraform init", err)
	}
	return w, ds, nil
}

func failed(ds diag.Diagnostics, strict bool) bool {
	errs, warns := ds.Count()
	return errs > 0 || strict && warns > 0
}

// FindTerraform returns bin if set (it must exist), else terraform on PATH.
func FindTerraform(bin string) (string, error) {
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%w: --terraform-bin %s: %v", ErrTerraformMissing, bin, err)
		}
		return bin, nil
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("%w on PATH: install Terraform >= 1.5 (https://developer.hashicorp.com/terraform/install) or pass --terraform-bin", ErrTerraformMissing)
	}
	return p, nil
}

// ErrNotLoopback is LoopbackEndpoint's refusal of an http(s) URL on another host.
var ErrNotLoopback = errors.New("is not on loopback (127.0.0.0/8, ::1, localhost)")

// LoopbackEndpoint refuses an emulator endpoint that is not a loopback http(s) URL: every
// command that takes --endpoint checks it here.
func LoopbackEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--endpoint %q is not an http(s) URL", endpoint)
	}
	if !localhttp.IsLoopbackName(u.Hostname()) {
		return fmt.Errorf("--endpoint %s %w", endpoint, ErrNotLoopback)
	}
	return nil
}

// CheckEndpoint is LoopbackEndpoint, where force accepts another host: the override sends
// every call, signed with dummy credentials, to that host.
func CheckEndpoint(endpoint string, force bool) error {
	err := LoopbackEndpoint(endpoint)
	switch {
	case errors.Is(err, ErrNotLoopback) && force:
		return nil
	case errors.Is(err, ErrNotLoopback):
		return fmt.Errorf("%w; pass --force to send the emulator's requests there", err)
	}
	return err
}

// awsIdentityEnv are the variables by which the AWS provider could find real credentials.
// Against an emulator they are all cleared and dummy keys set, so a call the override missed
// is signed by nobody AWS knows, never by the operator's profile or session.
var awsIdentityEnv = []string{
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
	"AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
}

// terraformEnv passes the environment through untouched (TF_*, AWS_*, credentials), minus
// the variables terraform-exec sets itself. Against an emulator, every way to real
// credentials is cleared and dummy keys are set (never written to a file); instance metadata
// is off.
func terraformEnv(environ []string, endpoint string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	env["CHECKPOINT_DISABLE"] = "1"
	if endpoint != "" {
		for _, k := range awsIdentityEnv {
			delete(env, k)
		}
		env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = "test", "test"
		env["AWS_SHARED_CREDENTIALS_FILE"], env["AWS_CONFIG_FILE"] = os.DevNull, os.DevNull
		env["AWS_EC2_METADATA_DISABLED"] = "true"
		// Behind the override's endpoints, the SDK's own fallback: a service the override
		// does not name goes to the emulator too, never to AWS; a service-specific variable
		// from the caller's environment could point anywhere, so none is kept.
		for k := range env {
			if strings.HasPrefix(k, "AWS_ENDPOINT_URL_") {
				delete(env, k)
			}
		}
		env["AWS_ENDPOINT_URL"] = endpoint
		delete(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	}
	return tfexec.CleanEnv(env)
}

// tfErr wraps a Terraform failure; an interruption says what state Terraform left.
func (w *Workspace) tfErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s stopped (SIGINT, then up to %s to finish in-flight calls); %s",
			ErrInterrupted, what, w.grace(), w.stateNote())
	}
	return fmt.Errorf("%s in %s: %w", what, w.TFDir, err)
}

// DefaultGracePeriod is Options.GracePeriod when none is set.
const DefaultGracePeriod = 2 * time.Minute

// grace is the grace period Terraform gets after SIGINT, the one the error then names.
func (w *Workspace) grace() time.Duration {
	if w.opts.GracePeriod == 0 {
		return DefaultGracePeriod
	}
	return w.opts.GracePeriod
}

// stateNote says where the state is after an interruption.
func (w *Workspace) stateNote() string {
	if len(w.opts.BackendConfig) > 0 {
		return "the state is in the configured backend; resources that were being changed may exist only partly: run fleetc plan to see"
	}
	return fmt.Sprintf("the state Terraform wrote is %s; resources that were being changed may exist only partly: run fleetc plan to see",
		filepath.Join(w.TFDir, "terraform.tfstate"))
}

// Plan runs `terraform plan -out planFile` (a destroy plan when destroy is set) and
// summarises the saved plan.
func (w *Workspace) Plan(ctx context.Context, planFile string, destroy bool) (*Summary, error) {
	opts := []tfexec.PlanOption{tfexec.Out(planFile), tfexec.Destroy(destroy)}
	for _, f := range w.opts.VarFiles {
		opts = append(opts, tfexec.VarFile(f))
	}
	if _, err := w.tf.Plan(ctx, opts...); err != nil {
		return nil, w.tfErr(ctx, "terraform plan", err)
	}
	return w.Show(ctx, planFile)
}

// Show summarises a saved plan (`terraform show -json`).
func (w *Workspace) Show(ctx context.Context, planFile string) (*Summary, error) {
	p, err := w.tf.ShowPlanFile(ctx, planFile)
	if err != nil {
		return nil, w.tfErr(ctx, "terraform show", err)
	}
	s := Summarize(p, w.groups)
	if w.Override != nil {
		s.Endpoint, s.Emulator = w.opts.Endpoint, w.Emulator
		s.EmulatorOmissions = w.Override.Omissions
	}
	return s, nil
}

// Apply applies a saved plan, streaming Terraform's progress (resource by resource, with
// elapsed time, each line tagged with its class or plane) to progress and its diagnostics to
// diags.
func (w *Workspace) Apply(ctx context.Context, planFile string, progress, diags io.Writer) error {
	s := &streamer{groups: w.groups, out: progress, diags: diags}
	// ApplyJSON makes s the stdout of every later terraform command too (SetStdout); without
	// the reset, `terraform output -json` after it reached s line by line, and each line of
	// its indented JSON was printed to diags as an unparsable message.
	defer w.tf.SetStdout(nil)
	err := w.tf.ApplyJSON(ctx, s, tfexec.DirOrPlan(planFile))
	s.flush()
	if err != nil {
		return w.tfErr(ctx, "terraform apply", err)
	}
	return nil
}

// Output is one Terraform output, its value as JSON.
type Output struct {
	Name      string          `json:"name"`
	Value     json.RawMessage `json:"value"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// Outputs returns the root module's outputs, sorted by name.
func (w *Workspace) Outputs(ctx context.Context) ([]Output, error) {
	m, err := w.tf.Output(ctx)
	if err != nil {
		return nil, w.tfErr(ctx, "terraform output", err)
	}
	var out []Output
	for name, o := range m {
		// terraform output -json indents values; one line each reads better after apply.
		var v bytes.Buffer
		if err := json.Compact(&v, o.Value); err != nil {
			return nil, fmt.Errorf("terraform output %s: %w", name, err)
		}
		out = append(out, Output{Name: name, Value: v.Bytes(), Sensitive: o.Sensitive})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// streamer turns `terraform apply -json` lines into Terraform's own progress messages.
type streamer struct {
	mu         sync.Mutex
	groups     map[string]string
	out, diags io.Writer
	buf        bytes.Buffer
}

func (s *streamer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for {
		line, err := s.buf.ReadBytes('\n')
		if err != nil {
			s.buf.Write(line) // an incomplete line waits for the rest
			return len(p), nil
		}
		s.line(line)
	}
}

func (s *streamer) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() > 0 {
		s.line(s.buf.Bytes())
		s.buf.Reset()
	}
}

// uiMessage is the part of Terraform's machine-readable UI that progress needs.
type uiMessage struct {
	Message string `json:"@message"`
	Type    string `json:"type"`
	Hook    struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
	} `json:"hook"`
	Diagnostic *struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
		Address  string `json:"address"`
	} `json:"diagnostic"`
}

func (s *streamer) line(b []byte) {
	var m uiMessage
	if err := json.Unmarshal(b, &m); err != nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			fmt.Fprintln(s.diags, t)
		}
		return
	}
	switch m.Type {
	case "apply_start", "apply_progress", "apply_complete", "apply_errored":
		fmt.Fprintf(s.out, "[%s] %s\n", groupOf(s.groups, m.Hook.Resource.Addr), m.Message)
	case "change_summary":
		fmt.Fprintln(s.out, m.Message)
	case "diagnostic":
		d := m.Diagnostic
		if d == nil {
			return
		}
		sev := "Warning"
		if d.Severity == "error" {
			sev = "Error"
		}
		where := ""
		if d.Address != "" {
			where = " (" + d.Address + ")"
		}
		fmt.Fprintf(s.diags, "%s: %s%s\n", sev, d.Summary, where)
		if d.Detail != "" {
			fmt.Fprintf(s.diags, "  %s\n", strings.ReplaceAll(d.Detail, "\n", "\n  "))
		}
	}
}
