package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/spec"
)

// runCapacity prints what the declared traffic asks of AWS: step rates per class, requests per
// service (as the seed counts them and as fleet-worker issues them), headroom per quota, the
// first quota to break, and an estimated bill.
func runCapacity(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("capacity", stderr)
	format := &formatFlag{value: "text", allowed: []string{"text", "markdown", "json"}}
	fs.Var(format, "format", "output format: text, markdown or json")
	var conv, steps, items, scale optFloat
	var duration optDuration
	var concurrent optFloat
	fs.Var(&conv, "conversations-per-minute", "new conversations per minute (overrides traffic.conversations_per_minute)")
	fs.Var(&steps, "steps-per-conversation", "steps per conversation (overrides traffic.steps_per_conversation)")
	fs.Var(&duration, "step-duration", "average step duration, e.g. 90s (overrides traffic.step_duration)")
	fs.Var(&concurrent, "concurrent-conversations", "conversations open at once (overrides traffic.concurrent_conversations)")
	fs.Var(&items, "fan-out-items", "items per fan_out run (overrides traffic.fan_out_items)")
	fs.Var(&scale, "scale", "multiply the conversation rate by X (what-if: --scale 4)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
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
	_, fleet, ds := compiler.Load(files[0])
	if fleet == nil || ds.HasErrors() {
		render(stderr, "text", ds, judge(ds, false))
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
	case "json":
		err = r.WriteJSON(stdout)
	case "markdown":
		err = r.WriteMarkdown(stdout)
	default:
		err = r.WriteText(stdout)
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

var _ flag.Value = (*optFloat)(nil)
