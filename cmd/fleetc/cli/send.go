package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// sendAttempts is how often `fleetc send` tries PutEvents: a person is waiting, so the
// SDK's standard retries (with jitter) are the right layer here, unlike in the workers.
const sendAttempts = 3

func runSend(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("send", stderr)
	detail := fs.String("detail", "", "the event's detail, as JSON")
	detailFile := fs.String("detail-file", "", "read the detail from this file (- for stdin)")
	example := fs.Bool("example", false, "send the generated example detail (a fresh trace_id)")
	endpoint := fs.String("endpoint", os.Getenv(deploy.EnvEndpoint), "local AWS emulator URL (also "+deploy.EnvEndpoint+"); default: AWS through the SDK's credential chain")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "fleetc send: name one fleet.yaml and one event (detail-type)")
		return exitUsage
	}
	given := 0
	for _, b := range []bool{*detail != "", *detailFile != "", *example} {
		if b {
			given++
		}
	}
	if given != 1 {
		fmt.Fprintln(stderr, "fleetc send: pass exactly one of --detail JSON, --detail-file F or --example")
		return exitUsage
	}
	f, code := loadFleet("send", pos[0], stderr)
	if f == nil {
		return code
	}
	var body []byte
	switch {
	case *detail != "":
		body = []byte(*detail)
	case *detailFile == "-":
		body, err = io.ReadAll(os.Stdin)
	case *detailFile != "":
		body, err = os.ReadFile(*detailFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitUsage
	}
	cs, err := dev.Contracts(f)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	ev, err := dev.NewEvent(f, cs, pos[1], body)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\nNothing was sent.\n", err)
		return exitInvalid
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: region(f), Endpoint: *endpoint, MaxAttempts: sendAttempts})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	id, err := dev.Put(ctx, awsconfig.EventBridge(cfg), ev)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc send: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "sent %s (source %s) to bus %s\n  event id: %s\n  trace id: %s\n", ev.DetailType, ev.Source, ev.Bus, id, orNone(ev.TraceID))
	return exitOK
}

// region is the fleet's region unless the environment names one (AWS_REGION wins, as in
// every AWS tool).
func region(f *ir.Fleet) string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return f.Region
}

func orNone(s string) string {
	if s == "" {
		return "(none: the event has no trace_id field)"
	}
	return s
}

// loadFleet loads and checks a spec, printing its diagnostics; nil with the exit code when
// it has errors.
func loadFleet(cmd, path string, stderr io.Writer) (*ir.Fleet, int) {
	_, f, ds := compiler.Load(path)
	if ds.HasErrors() || f == nil {
		render(stderr, "text", ds, judge(ds, false))
		fmt.Fprintf(stderr, "fleetc %s: %s does not load\n", cmd, path)
		return nil, exitInvalid
	}
	return f, exitOK
}
