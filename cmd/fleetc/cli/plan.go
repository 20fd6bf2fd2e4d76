package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec/diag"
)

// exitChanges is --detailed-exitcode's "the plan has changes", as Terraform's.
const exitChanges = 2

// deployFlags are the flags plan, apply and destroy share.
type deployFlags struct {
	out, endpoint, terraformBin string
	emulator                    string // --emulator: "" detects it
	varFiles, backendConfig     []string
	force                       bool
	env                         string // --env, the root's flag
}

func (d *deployFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&d.out, "output", "o", defaultOut, "output directory: fleetc builds into it and runs Terraform in its terraform/")
	fs.StringVar(&d.endpoint, "endpoint", os.Getenv(deploy.EnvEndpoint), "local AWS emulator URL (also "+deploy.EnvEndpoint+"): writes the emulator override file")
	fs.BoolVar(&d.force, "force", false, "with --endpoint: accept an endpoint that is not on loopback")
	fs.StringVar(&d.emulator, "emulator", "", emulatorFlagHelp)
	fs.StringVar(&d.terraformBin, "terraform-bin", "", "terraform binary (default: terraform on PATH)")
	fs.StringArrayVar(&d.varFiles, "var-file", nil, "Terraform variables file (repeatable)")
	fs.StringArrayVar(&d.backendConfig, "backend-config", nil, "terraform init -backend-config K=V or file (repeatable)")
}

// prepare builds the spec and initialises Terraform. It returns the build's diagnostics,
// printed on stderr unless format is json (whose document carries them). On failure it
// prints the reason (and, for json, a document of the diagnostics alone) and returns the
// exit code.
func (d *deployFlags) prepare(ctx context.Context, cmd, spec string, format view.Format, stdout, stderr io.Writer) (*deploy.Workspace, diag.Diagnostics, int) {
	emu, err := deploy.ParseEmulator(d.emulator)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return nil, nil, exitUsage
	}
	w, ds, err := deploy.Prepare(ctx, deploy.Options{Spec: spec, Env: d.env, Dir: compiler.OutDir(d.out, d.env), TerraformBin: d.terraformBin,
		Endpoint: d.endpoint, Emulator: emu, ForceEndpoint: d.force, VarFiles: d.varFiles, BackendConfig: d.backendConfig})
	if format != view.JSON {
		view.Aside(stderr, ds)
	} else if err != nil {
		view.Stopped(format, stdout, stderr, ds)
	}
	var be *deploy.BuildError
	switch {
	case errors.As(err, &be):
		fmt.Fprintf(stderr, "fleetc %s: %s does not build; nothing was planned\n", cmd, spec)
		return nil, ds, exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return nil, ds, exitInvalid
	}
	return w, ds, exitOK
}

// emulatorFlagHelp is --emulator's help, for plan, apply, destroy and dev.
var emulatorFlagHelp = "with --endpoint: the emulator there, whose gaps the override works around (" + deploy.EmulatorNames() +
	"); default: detected (" + deploy.DetectHow + ")"

// interruptible returns a context that ends on Ctrl-C or SIGTERM; Terraform then gets
// SIGINT and its grace period to stop cleanly.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// planOptions are plan's flags.
type planOptions struct {
	deployFlags
	planOut  string
	outJSON  string
	detailed bool
	format   *formatFlag
}

func newPlanCmd(s *streams) *cobra.Command {
	o := planOptions{format: newFormat("text", "text", "json", "markdown")}
	c := &cobra.Command{
		Use:   "plan FILE [-o DIR] [--var-file F]... [--backend-config K=V]... [--out PLANFILE] [--endpoint URL] [--format text|json|markdown] [--out-json F] [--detailed-exitcode]",
		Short: "Build, then show what terraform would change, per agent class and plane",
		Long: `Plan builds FILE into DIR exactly as fleetc build does, runs terraform init and plan in
DIR/terraform, and summarises the plan per agent class and per plane, listing every
replacement and deletion with what it destroys. --format markdown prints it as a
pull-request comment in fleetc diff's layout, with the stateful guard's verdict;
--out-json also writes the JSON summary to a file.

Arguments:
  FILE  the fleet.yaml to plan

Exit 0 (with --detailed-exitcode: 0 no changes, 2 changes), 1 error, 2 usage error.`,
		Example: `  fleetc plan fleet.yaml -o out --out fleet.tfplan
  fleetc plan fleet.yaml --endpoint http://127.0.0.1:4566`,
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runPlan(args, o, s.stdout, s.stderr))
		},
	}
	o.register(c.Flags())
	c.Flags().StringVar(&o.planOut, "out", "", "save the plan to this file (for fleetc apply FILE PLANFILE)")
	addFormat(c, o.format, " (json is versioned: format_version; markdown is a pull-request comment)")
	c.Flags().StringVar(&o.outJSON, "out-json", "", "also write the plan summary as JSON to this file (for a CI job that posts the markdown)")
	c.Flags().BoolVar(&o.detailed, "detailed-exitcode", false, "exit 0 with no changes, 1 on error, 2 with changes")
	return c
}

func runPlan(files []string, o planOptions, stdout, stderr io.Writer) int {
	d := o.deployFlags
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc plan: name exactly one fleet.yaml")
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	w, ds, code := d.prepare(ctx, "plan", files[0], o.format.value, stdout, stderr)
	if w == nil {
		return code
	}
	planFile, cleanup := planPath(w, o.planOut)
	defer cleanup()
	s, err := w.Plan(ctx, planFile, false)
	if err != nil {
		if o.format.value == view.JSON {
			view.Stopped(view.JSON, stdout, stderr, ds)
		}
		fmt.Fprintf(stderr, "fleetc plan: %v\n", err)
		return exitInvalid
	}
	s.Header = jsonreport.NewHeader(ds)
	writeSummary(stdout, o.format.value, s)
	if o.outJSON != "" {
		var b strings.Builder
		writeSummary(&b, "json", s)
		if err := os.WriteFile(o.outJSON, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(stderr, "fleetc plan: %v\n", err)
			return exitInvalid
		}
	}
	if o.planOut != "" && o.format.value == "text" {
		fmt.Fprintf(stdout, "\nSaved the plan to %s; apply exactly it with: fleetc apply %s %s\n", o.planOut, files[0], o.planOut)
	}
	if o.detailed && s.HasChanges() {
		return exitChanges
	}
	return exitOK
}

// planPath is the plan file to write: the user's, or a temporary one removed afterwards.
func planPath(w *deploy.Workspace, user string) (string, func()) {
	if user != "" {
		abs, err := filepath.Abs(user)
		if err == nil {
			user = abs
		}
		return user, func() {}
	}
	p := filepath.Join(w.TFDir, ".fleetc.tfplan")
	return p, func() { os.Remove(p) }
}

func writeSummary(w io.Writer, format string, s *deploy.Summary) {
	if format == "markdown" {
		_ = s.WriteMarkdown(w)
		return
	}
	if format == view.JSON {
		_ = view.WriteJSON(w, s)
		return
	}
	s.WriteText(w)
}

// changeOptions are the flags of apply and destroy.
type changeOptions struct {
	deployFlags
	auto      bool
	allow     []string
	allowLoss bool // destroy: accept every data loss the plan lists
}

func newChangeCmd(cmd string, s *streams) *cobra.Command {
	var o changeOptions
	c := &cobra.Command{
		Use:   "apply FILE [PLANFILE] [--auto-approve] [--allow-replace ADDRESS]... [--endpoint URL] [-o DIR]",
		Short: "Build, plan and apply the fleet, guarding stateful resources",
		Long: `Apply builds FILE into DIR, plans (or reads PLANFILE, saved by fleetc plan --out), shows
the summary, refuses a plan that replaces or deletes a queue, DLQ, table, bucket or archive
unless each is named with --allow-replace, asks for yes (unless --auto-approve), applies
with progress per class and prints the outputs. Then, for each lambda class with a rollout
whose function changed, it starts the CodeDeploy deployment that moves alias live to the
version the apply published (docs/rollout.md).

Arguments:
  FILE      the fleet.yaml to apply
  PLANFILE  optional: a plan saved with fleetc plan --out; applied exactly (still guarded)

Exit 0 applied or nothing to do, 1 refused, cancelled or failed, 2 usage error.`,
		Example: `  fleetc apply fleet.yaml -o out
  fleetc plan fleet.yaml --out fleet.tfplan && fleetc apply fleet.yaml fleet.tfplan`,
		RunE: func(_ *cobra.Command, args []string) error {
			o.env = s.env
			return exit(runChange(cmd, args, o, s.stdin, s.stdout, s.stderr))
		},
	}
	if cmd == "destroy" {
		c.Use = "destroy FILE [--auto-approve] [--allow-replace ADDRESS]... [--allow-data-loss] [--endpoint URL] [-o DIR]"
		c.Short = "Destroy the fleet's resources, guarding stateful ones"
		c.Long = `Destroy plans the destruction of everything FILE created, refuses to delete a queue,
DLQ, table, bucket or archive unless each is named with --allow-replace (or all of them
with --allow-data-loss), asks for yes (unless --auto-approve), empties the buckets it may
lose (every object version and delete marker) and destroys.

Arguments:
  FILE  the fleet.yaml whose resources to destroy

Exit 0 destroyed, 1 refused, cancelled or failed, 2 usage error.`
		c.Example = `  fleetc destroy fleet.yaml -o out --allow-replace aws_sqs_queue.solver`
	}
	o.register(c.Flags())
	c.Flags().BoolVar(&o.auto, "auto-approve", false, "apply without asking for yes")
	c.Flags().StringArrayVar(&o.allow, "allow-replace", nil, "address of a stateful resource (queue, DLQ, table, bucket, archive) the plan may replace or delete (repeatable)")
	if cmd == "destroy" {
		c.Flags().BoolVar(&o.allowLoss, "allow-data-loss", false, "accept every loss of data the plan lists (instead of one --allow-replace per address)")
	}
	return c
}

// runChange is apply and destroy: plan (or read a saved plan), show the summary, refuse
// unnamed stateful replacements, confirm, apply with progress, print the outputs.
func runChange(cmd string, pos []string, o changeOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	d := o.deployFlags
	var err error
	maxPos := 2
	if cmd == "destroy" {
		maxPos = 1
	}
	if len(pos) < 1 || len(pos) > maxPos {
		fmt.Fprintf(stderr, "fleetc %s: name one fleet.yaml%s\n", cmd, map[bool]string{true: " and optionally a saved plan"}[cmd == "apply"])
		return exitUsage
	}
	saved := len(pos) == 2
	// Asking needs a terminal: find out before a plan that may take minutes.
	if !o.auto && !saved && !isTerminal(stdin) {
		fmt.Fprintf(stderr, "fleetc %s: no terminal to confirm on: review with fleetc plan, then pass --auto-approve\n", cmd)
		return exitInvalid
	}
	ctx, stop := interruptible()
	defer stop()
	w, _, code := d.prepare(ctx, cmd, pos[0], view.Text, stdout, stderr)
	if w == nil {
		return code
	}
	var s *deploy.Summary
	planFile, cleanup := planPath(w, "")
	defer cleanup()
	if saved {
		if planFile, err = filepath.Abs(pos[1]); err == nil {
			s, err = w.Show(ctx, planFile)
		}
	} else {
		s, err = w.Plan(ctx, planFile, cmd == "destroy")
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	s.WriteText(stdout)
	if !s.HasChanges() {
		return printOutputs(ctx, w, cmd, stdout, stderr)
	}
	if o.allowLoss {
		if lost := s.Stateful(); len(lost) > 0 {
			fmt.Fprintf(stdout, "\n--allow-data-loss: accepting the loss of %d stateful resource(s) listed above.\n", len(lost))
		}
	} else if blocked := s.Blocked(o.allow); len(blocked) > 0 {
		fmt.Fprintf(stderr, "fleetc %s: refusing: the plan replaces or deletes %d stateful resource(s) not named with --allow-replace:\n", cmd, len(blocked))
		var flags []string
		for _, c := range blocked {
			fmt.Fprintf(stderr, "  %s %s: destroys %s\n", c.Action, c.Address, c.Destroys)
			flags = append(flags, "--allow-replace "+c.Address)
		}
		fmt.Fprintf(stderr, "Nothing was changed. If losing that is intended, run again with:\n  %s\n", strings.Join(flags, " "))
		if cmd == "destroy" {
			fmt.Fprintln(stderr, "  (or --allow-data-loss to accept all of it)")
		}
		return exitInvalid
	}
	if !o.auto && !saved {
		ok, err := confirm(cmd, stdin, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
			return exitInvalid
		}
		if !ok {
			fmt.Fprintf(stderr, "fleetc %s: cancelled; nothing was changed\n", cmd)
			return exitInvalid
		}
	}
	fmt.Fprintln(stdout)
	if cmd == "destroy" {
		// The guard accepted every loss: the buckets go with their objects, not with
		// BucketNotEmpty half way through the destroy.
		if err := w.EmptyBuckets(ctx, s, stdout, dev.BucketClient); err != nil {
			fmt.Fprintf(stderr, "fleetc %s: %v; nothing was destroyed\n", cmd, err)
			return exitInvalid
		}
	}
	if err := w.Apply(ctx, planFile, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	if code := printOutputs(ctx, w, cmd, stdout, stderr); code != exitOK || cmd != "apply" {
		return code
	}
	return startRollouts(ctx, w, s, d.endpoint, stdout, stderr)
}

// isTerminal reports whether stdin can answer a question: a character device, or a reader
// that is not a file (tests answer through one).
func isTerminal(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return true
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// confirm asks for "yes" as Terraform does; without a terminal it refuses rather than hang.
func confirm(cmd string, stdin io.Reader, stdout io.Writer) (bool, error) {
	verb := map[string]string{"apply": "perform these actions", "destroy": "destroy the fleet's resources"}[cmd]
	return ask("Do you want to "+verb+"?", "review with fleetc plan, then pass --auto-approve", stdin, stdout)
}

// ask asks question and accepts only "yes"; without a terminal it refuses with hint. It
// reads stdin byte by byte, so a command may ask twice.
func ask(question, hint string, stdin io.Reader, stdout io.Writer) (bool, error) {
	if !isTerminal(stdin) {
		return false, fmt.Errorf("no terminal to confirm on: %s", hint)
	}
	fmt.Fprintf(stdout, "\n%s Only 'yes' will be accepted.\n  Enter a value: ", question)
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := stdin.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err != nil {
			break
		}
	}
	return strings.TrimSpace(string(line)) == "yes", nil
}

func printOutputs(ctx context.Context, w *deploy.Workspace, cmd string, stdout, stderr io.Writer) int {
	if cmd == "destroy" {
		return exitOK
	}
	outs, err := w.Outputs(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	if len(outs) == 0 {
		return exitOK
	}
	fmt.Fprintln(stdout, "\nOutputs:")
	for _, o := range outs {
		v := string(o.Value)
		if o.Sensitive {
			v = "(sensitive)"
		}
		fmt.Fprintf(stdout, "  %s = %s\n", o.Name, v)
	}
	return exitOK
}
