package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// awsFake stands in for Step Functions and EventBridge where no local emulator implements the
// API: kumo has no RedriveExecution, StartReplay or DescribeReplay, moto_server no
// RedriveExecution, and moto is not installable in CI (no Debian package, no PyPI). It is an
// httptest server that records every request (X-Amz-Target and JSON body), lets the test
// assert them exactly, and answers with the response shapes and error codes the Step
// Functions and EventBridge API references document.
type awsFake struct {
	t        *testing.T
	mu       sync.Mutex
	calls    []fakeCall
	handlers map[string]func(body map[string]any) (int, any)
}

type fakeCall struct {
	Target string
	Body   map[string]any
}

func newAWSFake(t *testing.T) (*awsFake, string) {
	f := &awsFake{t: t, handlers: map[string]func(map[string]any) (int, any){}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *awsFake) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("%s: body is not JSON: %q", target, b)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		f.t.Errorf("%s: request not SigV4-signed", target)
	}
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{target, body})
	h := f.handlers[target]
	f.mu.Unlock()
	ct := "application/x-amz-json-1.1"
	if strings.HasPrefix(target, "AWSStepFunctions.") {
		ct = "application/x-amz-json-1.0"
	}
	w.Header().Set("Content-Type", ct)
	if h == nil {
		f.t.Errorf("unexpected call %s %v", target, body)
		w.WriteHeader(400)
		fmt.Fprint(w, `{"__type":"UnknownOperationException"}`)
		return
	}
	code, out := h(body)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(out)
}

func (f *awsFake) on(target string, h func(body map[string]any) (int, any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[target] = h
}

func (f *awsFake) called(target string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, c := range f.calls {
		if c.Target == target {
			out = append(out, c.Body)
		}
	}
	return out
}

func researchFleet(t *testing.T) *ir.Fleet {
	t.Helper()
	_, f, ds := compiler.Load(research)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	return f
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

const acct = "123456789012"

// redrive-execution lists the FAILED executions of the workflow's state machine stopped since
// --since, redrives each with RedriveExecution, and reports one Step Functions refuses
// (ExecutionNotRedrivable) by name, exiting 1.
func TestRedriveExecution(t *testing.T) {
	f := researchFleet(t)
	w := f.Workflows[0]
	machine := "arn:aws:states:us-east-1:" + acct + ":stateMachine:" + w.StateMachineName
	exec := func(name string) string {
		return "arn:aws:states:us-east-1:" + acct + ":execution:" + w.StateMachineName + ":" + name
	}
	now := time.Now()
	fake, url := newAWSFake(t)
	fake.on("AWSStepFunctions.ListStateMachines", func(map[string]any) (int, any) {
		return 200, map[string]any{"stateMachines": []any{
			map[string]any{"stateMachineArn": "arn:aws:states:us-east-1:" + acct + ":stateMachine:other", "name": "other", "type": "STANDARD", "creationDate": epoch(now)},
			map[string]any{"stateMachineArn": machine, "name": w.StateMachineName, "type": "STANDARD", "creationDate": epoch(now)},
		}}
	})
	fake.on("AWSStepFunctions.ListExecutions", func(map[string]any) (int, any) {
		item := func(name string, stopped time.Duration) map[string]any {
			return map[string]any{"executionArn": exec(name), "stateMachineArn": machine, "name": name, "status": "FAILED",
				"startDate": epoch(now.Add(-stopped - time.Minute)), "stopDate": epoch(now.Add(-stopped)), "redriveCount": 0}
		}
		return 200, map[string]any{"executions": []any{item("c-new", time.Hour), item("c-gone", 20*24*time.Hour), item("c-old", 2*time.Hour)}}
	})
	fake.on("AWSStepFunctions.RedriveExecution", func(b map[string]any) (int, any) {
		if b["executionArn"] == exec("c-old") {
			return 400, map[string]any{"__type": "ExecutionNotRedrivable", "message": "Execution can't be redriven: event history is over the limit."}
		}
		return 200, map[string]any{"redriveDate": epoch(now)}
	})

	code, out, errs := run(t, "redrive-execution", research, w.Name, "--since", "3h", "--endpoint", url, "--auto-approve")
	if code != exitInvalid {
		t.Fatalf("exit %d, want 1 (one refused)\n%s%s", code, out, errs)
	}
	for _, want := range []string{"2 FAILED executions of workflow " + w.Name, "c-new redriven at", "c-old refused: not redrivable: Execution can't be redriven", "Redriven 1 of 2."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "c-gone") {
		t.Errorf("an execution stopped before --since was listed:\n%s", out)
	}
	lists := fake.called("AWSStepFunctions.ListExecutions")
	if len(lists) != 1 || lists[0]["stateMachineArn"] != machine || lists[0]["statusFilter"] != "FAILED" {
		t.Errorf("ListExecutions requests %v", lists)
	}
	var redriven []string
	for _, b := range fake.called("AWSStepFunctions.RedriveExecution") {
		redriven = append(redriven, b["executionArn"].(string))
		if tok, _ := b["clientToken"].(string); tok == "" {
			t.Errorf("RedriveExecution without a clientToken (idempotent retries need one): %v", b)
		}
	}
	// Oldest first.
	if strings.Join(redriven, ",") != exec("c-old")+","+exec("c-new") {
		t.Errorf("RedriveExecution for %v", redriven)
	}
}

// Asking first: without --auto-approve and without a yes nothing is redriven; unknown and
// Express workflows and an empty list get clear messages.
func TestRedriveExecutionRefusals(t *testing.T) {
	f := researchFleet(t)
	w := f.Workflows[0]
	fake, url := newAWSFake(t)
	fake.on("AWSStepFunctions.ListStateMachines", func(map[string]any) (int, any) {
		return 200, map[string]any{"stateMachines": []any{map[string]any{"stateMachineArn": "arn:aws:states:us-east-1:" + acct + ":stateMachine:" + w.StateMachineName,
			"name": w.StateMachineName, "type": "STANDARD", "creationDate": epoch(time.Now())}}}
	})
	executions := []any{map[string]any{"executionArn": "arn:x", "stateMachineArn": "arn:m", "name": "c1", "status": "TIMED_OUT",
		"startDate": epoch(time.Now()), "stopDate": epoch(time.Now())}}
	fake.on("AWSStepFunctions.ListExecutions", func(b map[string]any) (int, any) {
		if b["statusFilter"] != "TIMED_OUT" {
			return 200, map[string]any{"executions": []any{}}
		}
		return 200, map[string]any{"executions": executions}
	})
	var out, errb strings.Builder
	code := Main([]string{"redrive-execution", research, w.Name, "--status", "TIMED_OUT", "--endpoint", url}, strings.NewReader("no\n"), &out, &errb)
	if code != exitInvalid || !strings.Contains(out.String(), "Nothing redriven.") || len(fake.called("AWSStepFunctions.RedriveExecution")) != 0 {
		t.Errorf("answer no: exit %d, redrives %d\n%s", code, len(fake.called("AWSStepFunctions.RedriveExecution")), out.String())
	}
	code, stdout, _ := run(t, "redrive-execution", research, w.Name, "--endpoint", url, "--auto-approve")
	if code != exitOK || !strings.Contains(stdout, "No FAILED executions of workflow "+w.Name+": nothing to redrive.") {
		t.Errorf("none found: exit %d\n%s", code, stdout)
	}
	code, _, errs := run(t, "redrive-execution", research, "nope", "--endpoint", url)
	if code != exitInvalid || !strings.Contains(errs, `unknown workflow "nope"; the fleet's workflows: `+w.Name) {
		t.Errorf("unknown workflow: exit %d %s", code, errs)
	}
	code, _, errs = run(t, "redrive-execution", "../../../examples/express-triage/fleet.yaml", "quick-triage", "--endpoint", url)
	if code != exitInvalid || !strings.Contains(errs, "Express workflow: Step Functions redrives Standard executions only") {
		t.Errorf("express workflow: exit %d %s", code, errs)
	}
	code, _, errs = run(t, "redrive-execution", research, w.Name, "--status", "SUCCEEDED", "--endpoint", url)
	if code != exitInvalid || !strings.Contains(errs, "status SUCCEEDED is not redrivable") {
		t.Errorf("succeeded: exit %d %s", code, errs)
	}
}

// replay reads the deployed archive, starts a replay of the window to the rules of the
// consumers of --event only, and follows DescribeReplay to COMPLETED.
func TestReplay(t *testing.T) {
	replayPollInterval = 5 * time.Millisecond
	f := researchFleet(t)
	const busARN = "arn:aws:events:us-east-1:" + acct + ":event-bus/research-fleet"
	archiveARN := "arn:aws:events:us-east-1:" + acct + ":archive/" + f.Bus.Archive.Name
	fake, url := newAWSFake(t)
	fake.on("AWSEvents.DescribeArchive", func(b map[string]any) (int, any) {
		return 200, map[string]any{"ArchiveArn": archiveARN, "ArchiveName": b["ArchiveName"], "EventSourceArn": busARN, "State": "ENABLED", "RetentionDays": 7}
	})
	fake.on("AWSEvents.DescribeRule", func(b map[string]any) (int, any) {
		return 200, map[string]any{"Name": b["Name"], "Arn": "arn:aws:events:us-east-1:" + acct + ":rule/research-fleet/" + b["Name"].(string), "EventBusName": b["EventBusName"]}
	})
	var from, to time.Time
	fake.on("AWSEvents.StartReplay", func(b map[string]any) (int, any) {
		from = time.UnixMilli(int64(b["EventStartTime"].(float64) * 1000))
		to = time.UnixMilli(int64(b["EventEndTime"].(float64) * 1000))
		return 200, map[string]any{"ReplayArn": "arn:aws:events:us-east-1:" + acct + ":replay/" + b["ReplayName"].(string), "State": "STARTING", "ReplayStartTime": epoch(time.Now())}
	})
	polls := 0
	fake.on("AWSEvents.DescribeReplay", func(b map[string]any) (int, any) {
		polls++
		switch polls {
		case 1:
			return 200, map[string]any{"ReplayName": b["ReplayName"], "State": "RUNNING"}
		case 2:
			return 200, map[string]any{"ReplayName": b["ReplayName"], "State": "RUNNING", "EventLastReplayedTime": epoch(from.Add(to.Sub(from) / 2))}
		}
		return 200, map[string]any{"ReplayName": b["ReplayName"], "State": "COMPLETED", "EventLastReplayedTime": epoch(to)}
	})

	code, out, errs := run(t, "replay", research, "--from", "2d", "--to", "1h", "--event", "agent.step.requested", "--endpoint", url, "--auto-approve")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"consumers: coder, researcher", "RUNNING      0%", "RUNNING     50%", "COMPLETED  100%", "completed."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	starts := fake.called("AWSEvents.StartReplay")
	if len(starts) != 1 {
		t.Fatalf("%d StartReplay calls", len(starts))
	}
	s := starts[0]
	dest, _ := s["Destination"].(map[string]any)
	filters := fmt.Sprint(dest["FilterArns"])
	name, _ := s["ReplayName"].(string)
	if s["EventSourceArn"] != archiveARN || dest["Arn"] != busARN ||
		filters != "[arn:aws:events:us-east-1:"+acct+":rule/research-fleet/research-coder arn:aws:events:us-east-1:"+acct+":rule/research-fleet/research-researcher]" ||
		!strings.HasPrefix(name, f.Bus.Archive.Name+"-") || len(name) > 64 {
		t.Errorf("StartReplay request %v", s)
	}
	if d := time.Since(from) - 48*time.Hour; d < 0 || d > time.Minute {
		t.Errorf("EventStartTime %s is not 2d ago", from)
	}
	if d := time.Since(to) - time.Hour; d < 0 || d > time.Minute {
		t.Errorf("EventEndTime %s is not 1h ago", to)
	}
	for _, b := range fake.called("AWSEvents.DescribeReplay") {
		if b["ReplayName"] != name {
			t.Errorf("DescribeReplay of %v, started %s", b["ReplayName"], name)
		}
	}
}

// A replay that would reach past a non_idempotent consumer's idempotency window in the
// archive as deployed (kept forever here, unlike the spec's 7d) is refused before any
// StartReplay; the same window into an archive of 7 days is allowed as a dry run; a failed
// replay exits 1 with its reason; unknown events and windows are refused.
func TestReplayRefusals(t *testing.T) {
	replayPollInterval = 5 * time.Millisecond
	f := researchFleet(t)
	retention := 0
	fake, url := newAWSFake(t)
	fake.on("AWSEvents.DescribeArchive", func(b map[string]any) (int, any) {
		return 200, map[string]any{"ArchiveArn": "arn:aws:events:us-east-1:" + acct + ":archive/" + f.Bus.Archive.Name, "ArchiveName": b["ArchiveName"],
			"EventSourceArn": "arn:aws:events:us-east-1:" + acct + ":event-bus/research-fleet", "State": "ENABLED", "RetentionDays": retention}
	})
	// A replay of every event lists the bus's rules: the fleet's own, and one a service manages.
	rules := []map[string]any{{"Name": "research-coder"}, {"Name": "research-researcher"}, {"Name": "Schemas-research-fleet-1", "ManagedBy": "schemas.amazonaws.com"}}
	fake.on("AWSEvents.ListRules", func(b map[string]any) (int, any) {
		if b["EventBusName"] != f.Bus.Name {
			t.Errorf("ListRules of bus %v, want %s", b["EventBusName"], f.Bus.Name)
		}
		return 200, map[string]any{"Rules": rules}
	})
	code, _, errs := run(t, "replay", research, "--from", "30d", "--to", "1h", "--endpoint", url, "--auto-approve")
	if code != exitInvalid || !strings.Contains(errs, "refused (rule E013): the archive keeps events forever") ||
		!strings.Contains(errs, "coder (non_idempotent, remembers keys for 192h0m0s)") || strings.Contains(errs, "researcher") {
		t.Errorf("unsafe replay: exit %d %s", code, errs)
	}
	if n := len(fake.called("AWSEvents.StartReplay")); n != 0 {
		t.Errorf("refused replay still called StartReplay %d times", n)
	}
	retention = 7
	code, out, errs := run(t, "replay", research, "--from", "30d", "--to", "1h", "--endpoint", url, "--dry-run")
	if code != exitOK || !strings.Contains(out, "each replay-safe for events up to 168h0m0s old") || !strings.Contains(out, "Dry run: nothing replayed.") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errs)
	}
	fake.on("AWSEvents.StartReplay", func(b map[string]any) (int, any) {
		return 200, map[string]any{"State": "STARTING"}
	})
	fake.on("AWSEvents.DescribeReplay", func(b map[string]any) (int, any) {
		return 200, map[string]any{"ReplayName": b["ReplayName"], "State": "FAILED", "StateReason": "The destination event bus does not exist."}
	})
	code, _, errs = run(t, "replay", research, "--from", "2h", "--to", "1h", "--endpoint", url, "--auto-approve")
	if code != exitInvalid || !strings.Contains(errs, "ended FAILED: The destination event bus does not exist.") {
		t.Errorf("failed replay: exit %d %s", code, errs)
	}
	if d := fake.called("AWSEvents.StartReplay")[0]["Destination"].(map[string]any); d["FilterArns"] != nil {
		t.Errorf("a replay of every event filters rules: %v", d)
	}
	// A rule on the bus the spec does not define (a webhook added by hand) has targets outside
	// the fleet: a replay of every event would deliver each archived event to them again.
	rules = append(rules, map[string]any{"Name": "billing-webhook"})
	code, _, errs = run(t, "replay", research, "--from", "2h", "--to", "1h", "--endpoint", url, "--auto-approve")
	if code != exitInvalid || !strings.Contains(errs, "refused (rule E013)") || !strings.Contains(errs, "does not define (billing-webhook)") {
		t.Errorf("foreign rule on the bus: exit %d %s", code, errs)
	}
	if n := len(fake.called("AWSEvents.StartReplay")); n != 1 {
		t.Errorf("a replay reaching a foreign rule still called StartReplay (%d calls)", n)
	}
	for _, tc := range []struct{ args, want string }{
		{"--from 2h --to 1h --event nope", `unknown event "nope"`},
		{"--from 1h --to 2h", "is not before --to"},
		{"--from 1h --to 2030-01-01T00:00:00Z", "is in the future"},
		{"--from yesterday --to 1h", "want RFC 3339"},
		{"--from 1h --to 5m", "the archive may not hold those events yet"},
	} {
		code, _, errs := run(t, append([]string{"replay", research, "--endpoint", url}, strings.Fields(tc.args)...)...)
		if code == exitOK || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d %s", tc.args, code, errs)
		}
	}
	code, _, errs = run(t, "replay", "../../../examples/minimal/fleet.yaml", "--from", "2h", "--to", "1h", "--endpoint", url)
	if code != exitInvalid || !strings.Contains(errs, "has no archive (bus.archive)") {
		t.Errorf("no archive: exit %d %s", code, errs)
	}
}

// TestReplayOnMoto runs the replay against moto_server, which implements archives and
// StartReplay/DescribeReplay: the requests the httptest fake asserts are accepted by a real
// implementation. moto is not installable in CI (no Debian package, no PyPI), so this test is
// a local extra: it skips when moto_server is not on PATH, even with FLEETC_REQUIRE_TOOLS=1.
func TestReplayOnMoto(t *testing.T) {
	moto, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("SKIPPED: moto_server not on PATH (a local extra; CI has the httptest tests above)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(moto, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatal("moto_server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	f := researchFleet(t)
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: f.Region, Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	eb := awsconfig.EventBridge(cfg)
	bus, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(f.Bus.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eb.CreateArchive(ctx, &eventbridge.CreateArchiveInput{ArchiveName: aws.String(f.Bus.Archive.Name),
		EventSourceArn: bus.EventBusArn, RetentionDays: aws.Int32(7)}); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Agents {
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(a.Rule.Name), EventBusName: aws.String(f.Bus.Name),
			EventPattern: aws.String(`{"detail-type":["agent.step.requested"]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	replayPollInterval = 50 * time.Millisecond
	code, out, errs := run(t, "replay", research, "--from", "2h", "--to", "10m", "--event", "agent.step.requested", "--endpoint", url, "--auto-approve")
	if code != exitOK || !strings.Contains(out, "COMPLETED  100%") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	replays, err := eb.ListReplays(ctx, &eventbridge.ListReplaysInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(replays.Replays) != 1 || !strings.HasSuffix(aws.ToString(replays.Replays[0].EventSourceArn), ":archive/"+f.Bus.Archive.Name) {
		t.Errorf("moto's replays: %+v", replays.Replays)
	}
}
