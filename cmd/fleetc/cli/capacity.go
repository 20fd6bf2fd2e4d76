package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/jsonreport"
	"github.com/fleetc/fleetc/spec"
)

// capacityFlags are the traffic overrides of fleetc capacity.
type capacityFlags struct {
	format                                *formatFlag
	conv, steps, concurrent, items, scale optFloat
	duration                              optDuration
}

func newCapacityCmd(s *streams) *cobra.Command {
	o := &capacityFlags{format: newFormat("text", "text", "markdown", "json")}
	c := &cobra.Command{
		Use:   "capacity FILE [--format text|markdown|json] [--conversations-per-minute N] [--steps-per-conversation N] [--step-duration D] [--concurrent-conversations N] [--fan-out-items N] [--scale X]",
		Short: "Size the fleet from its traffic: requests per service, quota headroom, replicas, cost",
		Long: `Capacity does the seed's arithmetic for every queue, bus, workflow and model policy of the
fleet: steps per class (split by the topology, or agents.<class>.traffic.share), requests per
service as the seed counts them and as fleet-worker issues them, steps in flight against each
queue's cap, headroom against every quota the rules know and the first quota to break as
traffic grows, KEDA replicas, Lambda concurrency, tokens per model policy, and an estimated
monthly bill from a dated list-price table. The flags override the spec's traffic.

Arguments:
  FILE  the fleet.yaml to size`,
		Example: `  fleetc capacity fleet.yaml
  fleetc capacity fleet.yaml --scale 4
  fleetc capacity fleet.yaml --format markdown > capacity.md`,
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(runCapacity(args, s.env, o, s.stdout, s.stderr))
		},
	}
	addFormat(c, o.format, "")
	fl := c.Flags()
	fl.Var(&o.conv, "conversations-per-minute", "new conversations per minute (overrides traffic.conversations_per_minute)")
	fl.Var(&o.steps, "steps-per-conversation", "steps per conversation (overrides traffic.steps_per_conversation)")
	fl.Var(&o.duration, "step-duration", "average step duration, e.g. 90s (overrides traffic.step_duration)")
	fl.Var(&o.concurrent, "concurrent-conversations", "conversations open at once (overrides traffic.concurrent_conversations)")
	fl.Var(&o.items, "fan-out-items", "items per fan_out run (overrides traffic.fan_out_items)")
	fl.Var(&o.scale, "scale", "multiply the conversation rate by X (what-if: --scale 4)")
	return c
}

// runCapacity prints what the declared traffic asks of AWS.
func runCapacity(files []string, env string, o *capacityFlags, stdout, stderr io.Writer) int {
	var err error
	conv, steps, concurrent, items, scale, duration, format := o.conv, o.steps, o.concurrent, o.items, o.scale, o.duration, o.format
	if len(files) != 1 {
		fmt.Fprintln(stderr, "fleetc capacity: name exactly one fleet.yaml")
		return exitUsage
	}
	for _, o := range []struct {
		name string
		v    optFloat
	}{{"conversations-per-minute", conv}, {"steps-per-conversation", steps}, {"concurrent-conversations", concurrent}, {"fan-out-items", items}} {
		if o.v.set && !(o.v.v >= 0) || math.IsInf(o.v.v, 0) {
			fmt.Fprintf(stderr, "fleetc capacity: --%s must be a finite number ≥ 0, not %s\n", o.name, o.v.String())
			return exitUsage
		}
	}
	if scale.set && (!(scale.v > 0) || math.IsInf(scale.v, 0)) {
		fmt.Fprintf(stderr, "fleetc capacity: --scale must be a finite number > 0, not %s\n", scale.String())
		return exitUsage
	}
	if concurrent.set && concurrent.v != math.Trunc(concurrent.v) {
		fmt.Fprintln(stderr, "fleetc capacity: --concurrent-conversations must be a whole number")
		return exitUsage
	}
	_, fleet, ds := compiler.LoadEnv(files[0], env)
	if fleet == nil || ds.HasErrors() {
		view.Stopped(format.value, stdout, stderr, ds)
		return exitInvalid
	}
	t := capacity.FromFleet(fleet)
	if conv.set {
		t.ConversationsPerMinute = conv.v
	}
	if steps.set {
		t.StepsPerConversation = steps.v
	}
	if duration.set {
		t.StepDuration = duration.d
	}
	if concurrent.set && concurrent.v <= math.MaxInt32 {
		t.ConcurrentConversations = int(concurrent.v)
	}
	if items.set {
		t.FanOutItems = items.v
	}
	if scale.set {
		t = t.Scaled(scale.v)
	}
	r := capacity.Build(fleet, t)
	switch format.value {
	case view.JSON:
		r.Header = jsonreport.NewHeader(ds)
		err = r.WriteJSON(stdout)
	case "markdown":
		err = r.WriteMarkdown(stdout)
	default:
		err = r.WriteText(stdout)
	}
	if format.value != view.JSON {
		view.Aside(stderr, ds)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc capacity: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// optFloat is a float flag that remembers whether it was given.
type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string { return strconv.FormatFloat(o.v, 'g', -1, 64) }
func (o *optFloat) Type() string   { return "number" }
func (o *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	o.v, o.set = v, true
	return nil
}

// optDuration is a duration flag in the spec's syntax (90s, 15m, 4d).
type optDuration struct {
	d   time.Duration
	set bool
}

func (o *optDuration) String() string { return spec.FormatDuration(o.d) }
func (o *optDuration) Type() string   { return "duration" }
func (o *optDuration) Set(s string) error {
	d, err := spec.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("must be above 0")
	}
	o.d, o.set = d, true
	return nil
}
