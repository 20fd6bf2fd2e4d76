// Package cli is fleetc's command line, on spf13/cobra. Main takes its streams as arguments
// so tests run the whole CLI in-process. Each command is one file; its constructor is listed
// in commands (see version.go for the smallest one).
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/internal/buildinfo"
)

// Exit codes, as Terraform and compilers use them.
const (
	exitOK      = 0
	exitInvalid = 1 // the spec is invalid, or --check found stale output
	exitUsage   = 2 // bad usage or an internal error
)

// Version is fleetc's version (internal/buildinfo, set at link time).
var Version = buildinfo.Version

// streams are what a command reads and writes, and the root's --env.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// env is --env, a flag of the root that every command inherits: the environment of the
	// spec to act on. A command passes it to compiler.Compile (Input.Env, or deploy.Options.Env)
	// and writes output under compiler.OutDir(dir, env); one that reads no spec says so with
	// noSpec, and --env is refused there.
	env string
	// envFromVar: env is EnvEnvironment's value, --env was not given. A failing command then
	// says where its environment came from (the spec's P013 can only speak of --env).
	envFromVar bool
}

// EnvEnvironment is --env's default, as TF_WORKSPACE is Terraform's: a CI job that deploys one
// environment sets it once for every step.
const EnvEnvironment = "FLEETC_ENV"

// noSpec marks a command that reads no spec (its Annotations), so --env does not apply.
var noSpec = map[string]string{"fleetc/spec": "none"}

// commands are the constructors of fleetc's top-level commands: one explicit list, no init()
// registration. A new command is one file and one line here.
var commands = []func(*streams) *cobra.Command{
	newBuildCmd, newCapacityCmd, newDevCmd, newDevHandlerCmd, newDiffCmd, newDLQCmd, newExplainCmd,
	newFmtCmd, newGraphCmd, newImageCmd, newInitCmd, newInvokeCmd, newPlanCmd, newRulesCmd, newSchemasCmd, newSendCmd,
	newRedriveExecutionCmd, newSimulateCmd,
	newReplayCmd,
	newToolsCmd, newTraceCmd, newTypesCmd, newValidateCmd, newVersionCmd,
	newDecideCmd("approve", true), newDecideCmd("reject", false),
	func(s *streams) *cobra.Command { return newChangeCmd("apply", s) },
	func(s *streams) *cobra.Command { return newChangeCmd("destroy", s) },
}

// exitCode carries a command's exit code through cobra's error return.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exit turns a command's exit code into what RunE returns.
func exit(code int) error {
	if code == exitOK {
		return nil
	}
	return exitCode(code)
}

// newRoot builds the whole command tree.
func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "fleetc",
		Short: "Compile a fleet.yaml into the infrastructure and runtime config of an AI agent fleet on AWS",
		Long: `fleetc compiles a fleet.yaml into the infrastructure and runtime config of an
event-driven AI agent fleet on AWS: Terraform, Step Functions state machines, KEDA
manifests, event schemas and one fleet-worker config per agent class.

Exit codes: 0 success, 1 invalid spec (or stale output with --check), 2 usage or internal error.`,
		Example: `  fleetc validate fleet.yaml
  fleetc build fleet.yaml -o out
  fleetc explain Q005`,
		Version:           Version,
		Args:              cobra.NoArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		// Bare `fleetc` is a usage error, as it always was: the help goes to stderr, exit 2.
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(s.stderr)
			_ = c.Help()
			return exitCode(exitUsage)
		},
	}
	root.PersistentFlags().StringVar(&s.env, "env", os.Getenv(EnvEnvironment), "the environment of the spec to act on (environments: in fleet.yaml; also "+EnvEnvironment+"; validate, build and diff without --env take every environment)")
	_ = root.RegisterFlagCompletionFunc("env", completeEnv)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if c.Annotations["fleetc/spec"] == "none" && c.Flags().Changed("env") {
			return fmt.Errorf("--env does not apply: %s reads no spec", c.CommandPath())
		}
		s.envFromVar = s.env != "" && !c.Flags().Changed("env") && c.Annotations["fleetc/spec"] != "none"
		return nil
	}
	root.SetVersionTemplate("fleetc {{.Version}}\n")
	root.SetIn(s.stdin)
	root.SetOut(s.stdout)
	root.SetErr(s.stderr)
	for _, c := range commands {
		cmd := c(s)
		if cmd.Annotations["fleetc/spec"] == "none" {
			markNoSpec(cmd)
		}
		root.AddCommand(cmd)
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" || c.Name() == "help" {
			markNoSpec(c)
		}
		c.DisableFlagsInUseLine = true
		for _, sub := range c.Commands() {
			sub.DisableFlagsInUseLine = true
		}
	}
	return root
}

// Main runs fleetc with args (without the program name) and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fleetc: internal error: %v\nThis is a bug; please report it with the command and spec that caused it.\n", r)
			code = exitUsage
		}
	}()
	s := &streams{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(s)
	root.SetArgs(args)
	c, err := root.ExecuteC()
	var ec exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ec):
		if s.envFromVar {
			fmt.Fprintf(stderr, "fleetc: the environment %q came from %s (no --env given)\n", s.env, EnvEnvironment)
		}
		return int(ec)
	}
	// cobra's own errors: an unknown command or flag, a flag value refused.
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", c.CommandPath(), err, c.CommandPath())
	return exitUsage
}

// formatFlag is a --format value restricted to a set of names.
type formatFlag struct {
	value   string
	allowed []string
}

func newFormat(def string, allowed ...string) *formatFlag {
	return &formatFlag{value: def, allowed: allowed}
}

func (f *formatFlag) String() string { return f.value }
func (f *formatFlag) Type() string   { return strings.Join(f.allowed, "|") }
func (f *formatFlag) Set(s string) error {
	for _, a := range f.allowed {
		if s == a {
			f.value = s
			return nil
		}
	}
	return errors.New("must be one of " + strings.Join(f.allowed, ", "))
}

// formatUsage is the --format flag's help text.
func (f *formatFlag) usage() string {
	return "output format: " + strings.Join(f.allowed, ", ")
}

// addFormat registers f as the command's --format flag, completing its allowed values.
func addFormat(c *cobra.Command, f *formatFlag, note string) {
	c.Flags().Var(f, "format", f.usage()+note)
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(f.allowed, cobra.ShellCompDirectiveNoFileComp))
}

// markNoSpec shadows the root's --env in a command that reads no spec (and its
// subcommands) with a hidden flag of its own, so its help and reference do not offer it
// and PersistentPreRunE can refuse it.
func markNoSpec(c *cobra.Command) {
	c.Annotations = noSpec
	c.Flags().String("env", "", "")
	_ = c.Flags().MarkHidden("env")
	for _, sub := range c.Commands() {
		markNoSpec(sub)
	}
}

// completeEnv completes --env with the environments of the spec named on the command line.
func completeEnv(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	var names []string
	for _, a := range args {
		names = append(names, compiler.Environments(a)...)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
