package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
	"github.com/fleetc/fleetc/cmd/fleetc/dev/devtest"
	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/dev-live-page.png from the headless Chromium test")

// The dev session harness lives in cmd/fleetc/dev/devtest, shared with dev's chaos test.
var (
	startDev      = devtest.Start
	uniqueExample = devtest.UniqueExample
	devEnv        = devtest.Env
	healthyKumo   = devtest.HealthyKumo
)

// TestDevResearchFleet brings the research example up with `fleetc dev` on kumo (two FIFO
// eks classes fed through dev's stand-in pipe, stand-in handlers since /app/researcher and
// the coder's sidecar are not on this machine), sends work with `fleetc send` and through
// the page's API, sees it completed through /api/fleet and the handlers' stderr in the
// worker log, checks a second plan is empty, kills a worker and sees the ledger balance,
// and tears down on Ctrl-C.
func TestDevResearchFleet(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	endpoint := devEnv(t)
	dir := t.TempDir()
	spec, fleet := uniqueExample(t, dir, "research-fleet", "fleet: research", "fleet: FLEET", "name: research-fleet", "name: FLEET")
	out := filepath.Join(dir, "out")
	s := startDev(t, spec, out, endpoint, "--verbose")

	send := func(class string, n int) {
		for i := 0; i < n; i++ {
			s.Send(t, "agent.step.requested", fmt.Sprintf(`{"conversation_id":"c%d","step":%d,"agent_class":%q}`, i%3, i, class))
		}
	}
	send("researcher", 2)
	send("coder", 1)
	if code, m := s.Post(t, "/api/events", map[string]any{"detail_type": "agent.step.requested",
		"detail": map[string]any{"trace_id": "page-1", "conversation_id": "c9", "step": 1, "agent_class": "researcher"}}); code != 200 || m["event_id"] == "" {
		t.Fatalf("POST /api/events: %d %v", code, m)
	}
	if code, m := s.Post(t, "/api/events", map[string]any{"detail_type": "agent.step.requested", "detail": map[string]any{"step": "x"}}); code != 422 || !strings.Contains(fmt.Sprint(m["error"]), "expected integer") {
		t.Fatalf("POST /api/events with a bad detail: %d %v", code, m)
	}
	byName := func(name string) (completed, dead int) {
		for _, c := range s.Fleet(t).Classes {
			if c.Name == name {
				return c.Completed, c.DeadLettered
			}
		}
		return -1, -1
	}
	s.WaitFor(t, "3 researcher and 1 coder steps completed", 3*time.Minute, func() bool {
		r, _ := byName("researcher")
		c, _ := byName("coder")
		return r == 3 && c == 1
	})
	log := s.Log()
	for _, want := range []string{`"msg":"handler stderr"`, `stand-in handler for researcher`, "observer", "agent.step.completed from fleet.workers", "consumed by no class"} {
		if !strings.Contains(log, want) {
			t.Errorf("worker log lacks %s:\n%s", want, log)
		}
	}

	// `fleetc trace --dev`, the page's trace view: the event posted as page-1 from the bus to
	// its completion: what dev saw (the event and its detail, the handler's input and result,
	// the worker's verdict) merged with what fleetc trace reads from kumo (the step's
	// idempotency record); --verbose logged the same.
	var tl *trace.Timeline
	path := func() (out []string) {
		for _, e := range tl.Entries {
			what, _, _ := strings.Cut(e.What, ",") // a record is "done, events not yet published" for a moment
			if e.Source != trace.SourceHistory {
				out = append(out, string(e.Source)+" "+e.Where+" "+what)
			}
		}
		return out
	}
	s.WaitFor(t, "page-1's completion event on the bus and the worker's verdict", time.Minute, func() bool {
		tl = s.Trace(t, "page-1")
		return slices.Contains(path(), "bus fleet.workers agent.step.completed") && slices.Contains(path(), "worker researcher finished")
	})
	want := []string{"bus fleet.coordinator agent.step.requested", "step researcher handler exit 0", "worker researcher finished",
		"idempotency researcher done", "bus fleet.workers agent.step.completed"}
	// What dev saw is in time order: the request, the handler's run, the completion (an
	// idempotency record carries whole seconds, so it may sort anywhere in its second).
	got := path()
	at := func(e string) int { return slices.Index(got, e) }
	if !slices.Equal(sortedCopy(got), sortedCopy(want)) || at(want[0]) > at(want[1]) || at(want[1]) > at(want[4]) {
		t.Errorf("fleetc trace page-1 --dev: %q, want %q, the request, the step and the completion in this order", got, want)
	}
	for _, e := range tl.Entries {
		if e.Source == trace.SourceStep && (len(e.Payloads) != 2 || !strings.Contains(e.Payloads[0].Body, `"c9"`) || !strings.Contains(e.Payloads[1].Body, `"c9"`)) {
			t.Errorf("the step's input and result: %+v", e.Payloads)
		}
	}
	for _, want := range []string{"detail (trace page-1): {", "step input (trace page-1, attempt 1): {", "step result (trace page-1, exit 0, "} {
		if !strings.Contains(s.Log(), want) {
			t.Errorf("the --verbose log lacks %q", want)
		}
	}

	// The live page in headless Chromium: its numbers move as work flows.
	livePage(t, s, func() { send("coder", 1) })

	// The generated workflow, through the emulator override's definition: an execution
	// started with `fleetc dev start` (the page's button) completes its agent steps (Research, an empty fan-out, Code).
	// Its input is the generated example, which carries the coder's idempotency key fields
	// ([trace_id, step]): a workflow task's detail is the execution's input.
	if out := s.Action(t, "start", "conversation"); !strings.Contains(out, "started conversation: arn:") {
		t.Fatalf("fleetc dev start: %s", out)
	}
	s.WaitFor(t, "the conversation execution succeeded", 3*time.Minute, func() bool {
		var f struct {
			Workflows []struct {
				Executions map[string]int `json:"executions"`
			} `json:"workflows"`
		}
		resp, err := http.Get(s.Page + "/api/fleet")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&f)
		if len(f.Workflows) == 1 && f.Workflows[0].Executions["FAILED"] > 0 {
			t.Fatalf("the execution failed: %v\n%s", f.Workflows, s.Log())
		}
		return len(f.Workflows) == 1 && f.Workflows[0].Executions["SUCCEEDED"] == 1
	})

	// Plan after apply: nothing to change on kumo.
	code, stdout, stderr := runCLI(t, "", "plan", spec, "-o", out, "--endpoint", endpoint, "--detailed-exitcode")
	if code != exitOK {
		t.Errorf("plan after dev's apply: exit %d (want 0)\n%s\n%s", code, stdout, stderr)
	}

	// Fault: kill -9 the researcher worker while work is queued; every unit ends completed
	// once or dead-lettered, and the worker comes back.
	send("researcher", 3)
	if out := s.Action(t, "kill", "researcher"); !strings.Contains(out, "killed researcher's worker (pid ") {
		t.Fatalf("fleetc dev kill: %s", out)
	}
	s.WaitFor(t, "ledger balanced after kill -9", 4*time.Minute, func() bool {
		f := s.Fleet(t)
		return f.Ledger.Submitted == 8 && f.Ledger.Balanced && f.Ledger.Completed+f.Ledger.DeadLettered == 8
	})
	// The worker comes back RestartDelay after the kill, which may be after the ledger
	// balanced (the steps can finish before the kill lands).
	s.WaitFor(t, "the researcher worker restarted after kill -9", time.Minute, func() bool {
		for _, c := range s.Fleet(t).Classes {
			if c.Name == "researcher" {
				return c.Worker.Starts >= 2 && c.Worker.State == dev.StateRunning
			}
		}
		return false
	})

	// Fault: a 429 wave from the model. For 20 s dev's Bedrock stand-in answers every call
	// 429 ThrottlingException; the workers' gateways retry, fall back and cool down as their
	// policies say, then answer the stand-in handlers with the failure, whose steps the
	// queue retries. Afterwards every unit of work is completed once or dead-lettered.
	calls := s.Fleet(t).Model.Calls
	if calls == 0 {
		t.Errorf("the stand-in handlers called no model before the wave")
	}
	s.Action(t, "throttle", "--for", "20s")
	if code, m := s.Post(t, "/api/faults/model-429", map[string]any{"seconds": 0}); code != 400 {
		t.Errorf("model-429 for 0 s: %d %v, want 400", code, m)
	}
	send("researcher", 3)
	s.WaitFor(t, "ledger balanced after the 429 wave", 8*time.Minute, func() bool {
		f := s.Fleet(t)
		return f.Model.WaveUntil == nil && f.Ledger.Submitted == 11 && f.Ledger.Balanced && f.Ledger.Completed+f.Ledger.DeadLettered == 11
	})
	f := s.Fleet(t)
	if f.Model.Throttled == 0 {
		t.Errorf("the wave throttled no call: %+v", f.Model)
	}
	log = s.Log()
	// The wave is absorbed, not dead-lettered: the workers' gateways hold and retry (the
	// router's cooldown and waiting room) or the stand-in handlers hand the throttle back to
	// the worker, which holds the message (TestDevChaos checks that path's log line).
	if f.Ledger.DeadLettered != 0 {
		t.Errorf("the 429 wave dead-lettered %d steps: %+v", f.Ledger.DeadLettered, f.Ledger)
	}
	for _, want := range []string{"the model answers 429 ThrottlingException for 20s", "the model gateway answered"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q after the 429 wave", want)
		}
	}
	t.Logf("429 wave: %d model calls, %d throttled; ledger %+v", f.Model.Calls, f.Model.Throttled, f.Ledger)

	// Ctrl-C: drain, destroy, leave kumo running.
	s.Stop(t)
	log = s.Log()
	for _, want := range []string{"draining the workers", "destroying the fleet on the emulator"} {
		if !strings.Contains(log, want) {
			t.Errorf("teardown lacks %q:\n%s", want, log)
		}
	}
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsconfig.SQS(cfg).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(fleet + "-researcher-dlq.fifo")}); err == nil {
		t.Errorf("the researcher DLQ survived the teardown")
	}
	if !healthyKumo(endpoint) {
		t.Errorf("fleetc dev stopped the emulator it did not start")
	}
}

// TestDevMinimal: the lambda class runs fleet-worker's Lambda mode under AWS's Lambda Runtime
// Interface Emulator, fed by dev's event source mapping; an event sent with `fleetc send
// --example` completes; a step failed by a fault is reported in batchItemFailures, left in
// the queue and completes on its retry, with nothing dead-lettered; plan after apply is
// empty.
func TestDevMinimal(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	endpoint := devEnv(t)
	rie, err := verifytest.Tool("aws-lambda-rie")
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	spec, _ := uniqueExample(t, dir, "minimal", "fleet: hello", "fleet: FLEET", "name: hello", "name: FLEET")
	out := filepath.Join(dir, "out")
	s := startDev(t, spec, out, endpoint, "--rie-bin", rie)
	if !strings.Contains(s.Log(), "runs here as fleet-worker --mode lambda under the Lambda Runtime Interface Emulator") {
		t.Errorf("no note about the lambda class under RIE:\n%s", s.Log())
	}
	res := s.Send(t, "greeting.requested", "")
	if !regexp.MustCompile(`trace id: [0-9a-f]{32}`).MatchString(res) {
		t.Errorf("fleetc send printed no trace id:\n%s", res)
	}
	s.WaitFor(t, "greeter completed 1", 2*time.Minute, func() bool { return s.Fleet(t).Ledger.Completed == 1 })
	if log := s.Log(); !strings.Contains(log, "START RequestId") || !strings.Contains(log, `"msg":"step finished"`) {
		t.Errorf("no invocation through RIE in the log:\n%s", log)
	}

	// A failing item: the handler fails (exit 75, retryable) for the next 40 s, longer than one
	// step window (step.max 30s). The worker holds the message through the failure for one
	// window and then reports it in batchItemFailures; dev's mapping leaves it in the queue, so
	// it is received again (attempt 2), held until the fault clears, and completes: a retryable
	// fault inside RetryLimit × step.max becomes backlog, not a dead letter (docs/faults.md).
	s.Action(t, "fail", "greeter", "--for", "40s")
	res = s.Send(t, "greeting.requested", "")
	trace := regexp.MustCompile(`trace id: ([0-9a-f]{32})`).FindStringSubmatch(res)
	if trace == nil {
		t.Fatalf("no trace id:\n%s", res)
	}
	s.WaitFor(t, "the failing greeting held, retried, then completed", 3*time.Minute, func() bool {
		f := s.Fleet(t)
		return f.Ledger.Submitted == 2 && f.Ledger.Completed == 2 && f.Ledger.Balanced
	})
	f := s.Fleet(t)
	if f.Ledger.DeadLettered != 0 || f.Classes[0].DLQ.Visible != 0 {
		t.Errorf("a retryable fault inside the retry budget dead-lettered work: %+v", f)
	}
	log := s.Log()
	if !strings.Contains(log, "step held for a retry in this receive") {
		t.Errorf("the worker did not hold the failing step in its receive:\n%s", log)
	}
	if !strings.Contains(log, "1 of 1 reported in batchItemFailures: left in the queue for a retry") {
		t.Errorf("the mapping did not report the failed item:\n%s", log)
	}
	attempt2 := regexp.MustCompile(`"trace_id":"` + trace[1] + `","attempt":2`)
	if !attempt2.MatchString(log) {
		t.Errorf("the failed message was not received again (no attempt 2 of trace %s):\n%s", trace[1], log)
	}

	code, stdout, stderr := runCLI(t, "", "plan", spec, "-o", out, "--endpoint", endpoint, "--detailed-exitcode")
	if code != exitOK {
		t.Errorf("plan after dev's apply: exit %d (want 0)\n%s\n%s", code, stdout, stderr)
	}
	s.Stop(t)
}

// livePage loads the page in Debian's chromium (headless, driven over the DevTools protocol
// by chromedp), reads the ledger line, runs work, sees the line change as server-sent events
// arrive, and takes a screenshot (written to docs/ with -update-screenshot).
func livePage(t *testing.T, s *devtest.Session, work func()) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		verifytest.SkipIfMissing(t, fmt.Errorf("%w: chromium (bash tools/install.sh chromium)", verifytest.ErrToolMissing))
		return
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 1000)}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(s.Page)); err != nil {
		t.Fatalf("loading %s: %v", s.Page, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#classes tbody tr")); err != nil {
		t.Fatalf("the page shows no class: %v", err)
	}
	before, err := chromedp.Run(ctx, chromedp.Text("#ledger"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "submitted") {
		t.Fatalf("ledger line = %q", before)
	}
	work()
	var after string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		time.Sleep(time.Second)
		if after, err = chromedp.Run(ctx, chromedp.Text("#ledger")); err != nil {
			t.Fatal(err)
		}
		if after != before && strings.Contains(after, "balanced") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's ledger did not move: before %q, after %q", before, after)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dev-live-page.png")
	if *updateScreenshot {
		path = "../../../docs/dev-live-page.png"
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("page: %q → %q; screenshot %s (%d bytes)", before, after, path, len(png))
}

func sortedCopy(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
