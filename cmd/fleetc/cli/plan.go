package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fleetc/fleetc/compiler/deploy"
)

// exitChanges is --detailed-exitcode's "the plan has changes", as Terraform's.
const exitChanges = 2

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// deployFlags are the flags plan, apply and destroy share.
type deployFlags struct {
	out, endpoint, terraformBin string
	varFiles, backendConfig     listFlag
}

func (d *deployFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.out, "o", "out", "output directory: fleetc builds into it and runs Terraform in its terraform/")
	fs.StringVar(&d.endpoint, "endpoint", os.Getenv(deploy.EnvEndpoint), "local AWS emulator URL (also "+deploy.EnvEndpoint+"): writes the emulator override file")
	fs.StringVar(&d.terraformBin, "terraform-bin", "", "terraform binary (default: terraform on PATH)")
	fs.Var(&d.varFiles, "var-file", "Terraform variables file (repeatable)")
	fs.Var(&d.backendConfig, "backend-config", "terraform init -backend-config K=V or file (repeatable)")
}

// prepare builds the spec and initialises Terraform, printing build diagnostics. On failure
// it prints the reason and returns the exit code.
func (d *deployFlags) prepare(ctx context.Context, cmd, spec string, stderr io.Writer) (*deploy.Workspace, int) {
	w, ds, err := deploy.Prepare(ctx, deploy.Options{Spec: spec, Dir: d.out, TerraformBin: d.terraformBin,
		Endpoint: d.endpoint, VarFiles: d.varFiles, BackendConfig: d.backendConfig})
	if len(ds) > 0 {
		render(stderr, "text", ds, judge(ds, false))
	}
	var be *deploy.BuildError
	switch {
	case errors.As(err, &be):
		fmt.Fprintf(stderr, "fleetc %s: %s does not build; nothing was planned\n", cmd, spec)
		return nil, exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return nil, exitInvalid
	}
	return w, exitOK
}

// interruptible returns a context that ends on Ctrl-C or SIGTERM; Terraform then gets
// SIGINT and its grace period to stop cleanly.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plan", stderr)
	var d deployFlags
	d.register(fs)
	planOut := fs.String("out", "", "save the plan to this file (for fleetc apply FILE PLANFILE)")
	format := &formatFlag{value: "text", allowed: []string{"text", "json", "markdown"}}
	fs.Var(format, "format", "output format: text, json (versioned: format_version) or markdown (a pull-request comment)")
	outJSON := fs.String("out-json", "", "also write the plan summary as JSON to this file (for a CI job that posts the markdown)")
	detailed := fs.Bool("detailed-exitcode", false, "exit 0 with no changes, 1 on error, 2 with changes")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc plan: name exactly one fleet.yaml")
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	w, code := d.prepare(ctx, "plan", files[0], stderr)
	if w == nil {
		return code
	}
	planFile, cleanup := planPath(w, *planOut)
	defer cleanup()
	s, err := w.Plan(ctx, planFile, false)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc plan: %v\n", err)
		return exitInvalid
	}
	writeSummary(stdout, format.value, s)
	if *outJSON != "" {
		var b strings.Builder
		writeSummary(&b, "json", s)
		if err := os.WriteFile(*outJSON, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(stderr, "fleetc plan: %v\n", err)
			return exitInvalid
		}
	}
	if *planOut != "" && format.value == "text" {
		fmt.Fprintf(stdout, "\nSaved the plan to %s; apply exactly it with: fleetc apply %s %s\n", *planOut, files[0], *planOut)
	}
	if *detailed && s.HasChanges() {
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
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	s.WriteText(w)
}

func runApply(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runChange("apply", args, stdin, stdout, stderr)
}

func runDestroy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runChange("destroy", args, stdin, stdout, stderr)
}

// runChange is apply and destroy: plan (or read a saved plan), show the summary, refuse
// unnamed stateful replacements, confirm, apply with progress, print the outputs.
func runChange(cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet(cmd, stderr)
	var d deployFlags
	d.register(fs)
	auto := fs.Bool("auto-approve", false, "apply without asking for yes")
	var allow listFlag
	fs.Var(&allow, "allow-replace", "address of a stateful resource (queue, DLQ, table, bucket, archive) the plan may replace or delete (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	maxPos := 2
	if cmd == "destroy" {
		maxPos = 1
	}
	if len(pos) < 1 || len(pos) > maxPos {
		fmt.Fprintf(stderr, "fleetc %s: name one fleet.yaml%s\n", cmd, map[bool]string{true: " and optionally a saved plan"}[cmd == "apply"])
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	w, code := d.prepare(ctx, cmd, pos[0], stderr)
	if w == nil {
		return code
	}
	var s *deploy.Summary
	planFile, cleanup := planPath(w, "")
	defer cleanup()
	saved := len(pos) == 2
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
	if blocked := s.Blocked(allow); len(blocked) > 0 {
		fmt.Fprintf(stderr, "fleetc %s: refusing: the plan replaces or deletes %d stateful resource(s) not named with --allow-replace:\n", cmd, len(blocked))
		var flags []string
		for _, c := range blocked {
			fmt.Fprintf(stderr, "  %s %s: destroys %s\n", c.Action, c.Address, c.Destroys)
			flags = append(flags, "--allow-replace "+c.Address)
		}
		fmt.Fprintf(stderr, "Nothing was changed. If losing that is intended, run again with:\n  %s\n", strings.Join(flags, " "))
		return exitInvalid
	}
	if !*auto && !saved {
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
	if err := w.Apply(ctx, planFile, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "fleetc %s: %v\n", cmd, err)
		return exitInvalid
	}
	return printOutputs(ctx, w, cmd, stdout, stderr)
}

// confirm asks for "yes" as Terraform does; without a terminal it refuses rather than hang.
func confirm(cmd string, stdin io.Reader, stdout io.Writer) (bool, error) {
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			return false, fmt.Errorf("no terminal to confirm on: review with fleetc plan, then pass --auto-approve")
		}
	}
	verb := map[string]string{"apply": "perform these actions", "destroy": "destroy the fleet's resources"}[cmd]
	fmt.Fprintf(stdout, "\nDo you want to %s? Only 'yes' will be accepted.\n  Enter a value: ", verb)
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	return strings.TrimSpace(line) == "yes", nil
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
