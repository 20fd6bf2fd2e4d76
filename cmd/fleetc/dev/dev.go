package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/spec"
)

// Options say what `fleetc dev` runs and where.
type Options struct {
	Spec, Dir    string
	Env          string          // the spec's environment ("" for a spec without environments)
	Endpoint     string          // "" = kumo on KumoAddr, started when installed
	Emulator     deploy.Emulator // the emulator at Endpoint ("" = detected)
	Port         int             // live page port (0: any free port)
	NoUI         bool
	TerraformBin string
	WorkerBin    string // fleet-worker; "" = next to fleetc, then PATH, then bin/ of the checkout
	RIEBin       string // aws-lambda-rie for lambda classes; "" = next to fleetc, PATH, bin/; none: poll mode
	HandlerBin   string // the fleetc binary that serves HandlerCommand; "" = this executable
	// Paths maps the class image's directories to local ones in exec handlers' commands
	// (ResolvePathMap: --path, else fleetc init's /app → handler/).
	Paths PathMap
	// Verbose also logs each event's detail, each step's input and its result.
	Verbose bool
	// Ready, when set, is called once the fleet is up, with the live page's URL ("" with NoUI).
	Ready          func(url string)
	Stdout, Stderr io.Writer

	tfConfig string // set by Run: the CLI config dev wrote for terraform ("" = the user's)
}

// Fleet is a running dev fleet: its spec, clients and workers.
type Fleet struct {
	opts      Options
	ir        *ir.Fleet
	contracts map[string]*Contract
	endpoint  string
	aws       aws.Config
	sqs       *sqs.Client
	eb        *eventbridge.Client
	sfn       *sfn.Client
	queues    map[string]queueURLs // by class
	machines  map[string]string    // workflow → state machine ARN
	examples  map[string]json.RawMessage
	started   time.Time // the session's start: its trace view reads from here on
	faultsAt  string
	stepsAt   string   // the handlers' StepRecords (dev-handler appends, tailSteps reads)
	journal   *journal // what dev saw happen: the page's activity and trace view
	redact    redactor // the values of secretNames, never shown
	sup       *supervisor
	obs       *observer
	model     *modelStandIn
	faultsMu  sync.Mutex
	done      chan struct{} // closed when the session ends: its page streams end, the browser reconnects
}

type queueURLs struct{ queue, dlq, ingress string }

// Run brings the fleet up on the emulator and runs it until ctx ends (Ctrl-C), then drains
// the workers, destroys what it applied and stops the emulator if it started it. When the
// spec changes it drains the workers, re-applies (Terraform changes only what changed) and
// starts them again; a spec that stops building keeps the last fleet down until it is fixed.
func Run(ctx context.Context, o Options) (err error) {
	out := o.Stdout
	first, err := compile(o)
	if err != nil {
		return err
	}
	bins := binaries{}
	if bins.worker, err = findWorker(o.WorkerBin); err != nil {
		return err
	}
	if bins.rie, err = findRIE(o.RIEBin); err != nil {
		return err
	}
	if bins.handler = o.HandlerBin; bins.handler == "" {
		if bins.handler, err = os.Executable(); err != nil {
			return err
		}
	}
	devDir := filepath.Join(o.Dir, "dev")
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		return err
	}
	tfConfig, note, err := terraformConfig(devDir)
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(out, note)
	}
	o.tfConfig = tfConfig
	emu, err := ensureEmulator(ctx, o.Endpoint, o.Emulator, devDir)
	if err != nil {
		return err
	}
	if emu.stop != nil {
		fmt.Fprintf(out, "fleetc dev: started kumo on %s (stopped when dev ends)\n", emu.endpoint)
		defer func() {
			emu.stop()
			fmt.Fprintln(out, "fleetc dev: kumo stopped")
		}()
	} else {
		fmt.Fprintf(out, "fleetc dev: using the emulator at %s (%s; left running)\n", emu.endpoint, emu.kind)
	}

	model, err := startModelStandIn()
	if err != nil {
		return err
	}
	defer model.close()

	// One page for the whole run; each session's fleet serves it while it is up.
	var current atomic.Pointer[Fleet]
	page := ""
	if !o.NoUI {
		srv, addr, err := serve(ctx, o.Port, &current)
		if err != nil {
			return err
		}
		defer srv.Close()
		page = "http://" + addr
		fmt.Fprintf(out, "fleetc dev: live page %s\n", page)
	}

	var w *deploy.Workspace // the last workspace prepared: what teardown destroys
	defer func() {
		if w == nil {
			return
		}
		// Teardown runs although ctx (Ctrl-C) has ended, after a failed apply too.
		fmt.Fprintln(out, "fleetc dev: destroying the fleet on the emulator")
		if derr := destroy(context.WithoutCancel(ctx), w, out, o.Stderr); derr != nil {
			fmt.Fprintf(o.Stderr, "fleetc dev: destroy: %v\n", derr)
			if err == nil {
				err = derr
			}
		}
	}()
	for c := first; ; c = nil {
		stamp := specStamp(o.Spec)
		if c != nil {
			stamp = c.stamp
		}
		reload, serr := session(ctx, o, c, emu, bins, model, page, &w, &current)
		if serr != nil {
			if c == first || ctx.Err() != nil {
				return serr
			}
			var be *deploy.BuildError
			if errors.As(serr, &be) {
				fmt.Fprintf(out, "fleetc dev: %s does not build (%d problem(s)); fix it and dev applies it:\n", o.Spec, len(be.Diagnostics))
				for _, d := range be.Diagnostics {
					fmt.Fprintf(out, "  %v\n", d)
				}
			} else {
				fmt.Fprintf(out, "fleetc dev: %v; change the spec to try again\n", serr)
			}
			if !waitChange(ctx, o.Spec, stamp) {
				return nil
			}
			continue
		}
		if !reload {
			return nil
		}
		fmt.Fprintf(out, "fleetc dev: %s changed: re-applying and restarting the workers\n", o.Spec)
	}
}

type binaries struct{ worker, handler, rie string }

// specPoll is how often dev looks at the spec for changes.
const specPoll = 2 * time.Second

// specStamp is the spec's content ("" when unreadable): a save that changes nothing is no change.
// It reads through spec.ReadFile, as every command does: a FIFO or a link out of the tree is
// unreadable, not a read that never ends.
func specStamp(path string) string {
	b, err := spec.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// waitChange waits until the spec differs from stamp (true) or ctx ends (false).
func waitChange(ctx context.Context, path, stamp string) bool {
	t := time.NewTicker(specPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if specStamp(path) != stamp {
				return true
			}
		}
	}
}

// compiled is the spec compiled once for a session, and its content when it was read.
type compiled struct {
	res   *compiler.Result
	stamp string
}

// compile compiles the spec as a fleet that runs on this machine (its workers inherit this
// environment); a spec that does not build is a *deploy.BuildError.
func compile(o Options) (*compiled, error) {
	stamp := specStamp(o.Spec)
	res, err := compiler.Compile(compiler.Input{Path: o.Spec, Env: o.Env, Local: true})
	if err != nil {
		return nil, err
	}
	if res.Files == nil {
		return nil, &deploy.BuildError{Diagnostics: res.Diagnostics}
	}
	return &compiled{res, stamp}, nil
}

// session applies the spec (compiled as c; nil: compiled now) and runs its workers until ctx
// ends (reload false) or the spec changes (reload true); either way the workers are drained
// and the observer removed.
func session(ctx context.Context, o Options, c *compiled, emu *emulator, bins binaries, model *modelStandIn, page string, wp **deploy.Workspace, current *atomic.Pointer[Fleet]) (reload bool, err error) {
	out := o.Stdout
	if c == nil {
		if c, err = compile(o); err != nil {
			return false, err
		}
	}
	stamp, f := c.stamp, c.res.Fleet
	cs := ContractsFrom(f, c.res.Files)
	w, pds, err := deploy.Prepare(ctx, deploy.Options{Spec: o.Spec, Env: o.Env, Dir: o.Dir, TerraformBin: o.TerraformBin, Endpoint: emu.endpoint, Emulator: emu.kind, Compiled: c.res, CLIConfigFile: o.tfConfig})
	if err != nil {
		if len(pds) > 0 && errors.As(err, new(*deploy.BuildError)) {
			return false, &deploy.BuildError{Diagnostics: pds}
		}
		return false, err
	}
	*wp = w
	if err := apply(ctx, w, out, o.Stderr); err != nil {
		return false, err
	}
	d := &Fleet{opts: o, ir: f, started: time.Now(), contracts: cs, endpoint: emu.endpoint, queues: map[string]queueURLs{},
		machines: map[string]string{}, examples: map[string]json.RawMessage{}, faultsAt: filepath.Join(o.Dir, "dev", "faults.json"),
		stepsAt: filepath.Join(o.Dir, "dev", "steps.jsonl"), redact: newRedactor(secretNames(f), os.Getenv),
		done: make(chan struct{}), model: model}
	d.journal = &journal{redact: d.redact}
	if err := d.connect(ctx, w); err != nil {
		return false, err
	}
	if err := WriteFaults(d.faultsAt, Faults{}); err != nil {
		return false, err
	}
	if err := os.WriteFile(d.stepsAt, nil, 0o600); err != nil { // this session's steps only
		return false, err
	}

	var classes []string
	width := len(observerClass)
	for _, a := range f.Agents {
		classes = append(classes, a.Name)
		width = max(width, len(a.Name))
	}
	d.sup = &supervisor{bin: bins.worker, out: &prefixer{w: out, width: width}, led: newLedger(classes), procs: map[string]*proc{}, journal: d.journal}
	env := d.workerEnv()
	var esms []*esm
	for _, a := range f.Agents {
		cfgPath, note, err := d.devConfig(a, bins.handler)
		if err != nil {
			return false, err
		}
		if note != "" {
			d.sup.out.line(a.Name, "fleetc dev: "+note)
		}
		if a.Runtime == config.RuntimeLambda && bins.rie != "" {
			invoke, err := freeAddr()
			if err != nil {
				return false, err
			}
			if err := d.sup.addLambda(a.Name, bins.rie, invoke, cfgPath, append(slices.Clone(env), lambdaEnv(a, d.queues[a.Name])...)); err != nil {
				return false, err
			}
			e, err := newESM(d, a, invoke, func() bool { return d.sup.running(a.Name) })
			if err != nil {
				return false, err
			}
			e.say = func(s string) { d.sup.out.line(a.Name, s) }
			esms = append(esms, e)
			d.sup.out.line(a.Name, "fleetc dev: a lambda class runs here as fleet-worker --mode lambda under the Lambda Runtime Interface "+
				"Emulator ("+bins.rie+"), fed by dev's event source mapping on its queue (batch "+fmt.Sprint(e.batch)+", ReportBatchItemFailures)")
			continue
		}
		if a.Runtime == config.RuntimeLambda {
			d.sup.out.line(a.Name, "fleetc dev: a lambda class runs here as fleet-worker --mode poll on its queue: "+RIEName+
				" (the Lambda Runtime Interface Emulator) is not installed ("+RIEInstall+"); the same step pipeline as in Lambda, "+
				"without the Lambda runtime API loop and ReportBatchItemFailures")
		}
		if err := d.sup.add(a.Name, "poll", cfgPath, env); err != nil {
			return false, err
		}
	}

	runCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	defer func() {
		current.CompareAndSwap(d, nil)
		close(d.done)
		fmt.Fprintln(out, "fleetc dev: draining the workers")
		d.sup.stopAll()
		stopLoops()
		loops.Wait()
		if d.obs != nil {
			d.obs.remove(context.WithoutCancel(ctx))
		}
	}()
	if d.obs, err = newObserver(ctx, d); err != nil {
		return false, err
	}
	loops.Add(2)
	go func() { defer loops.Done(); d.obs.run(runCtx, d.sup.out) }()
	go func() { defer loops.Done(); tailSteps(runCtx, d.stepsAt, d.stepSeen) }()
	for _, a := range f.Agents {
		if q := d.queues[a.Name]; q.ingress != "" {
			loops.Add(1)
			go func() { defer loops.Done(); d.pipe(runCtx, a, q) }()
		}
	}
	for _, e := range esms {
		loops.Add(1)
		go func() { defer loops.Done(); e.run(runCtx) }()
	}
	if err := d.sup.start(ctx); err != nil {
		return false, err
	}
	current.Store(d)
	fmt.Fprintf(out, "fleetc dev: fleet %s is up (%d classes, %d workflows); send work with\n  fleetc send %s %s --example%s --endpoint %s\nCtrl-C drains the workers and destroys the fleet; saving the spec re-applies it.\n",
		f.Name, len(f.Agents), len(f.Workflows), o.Spec, firstEvent(f), envFlag(o.Env), emu.endpoint)
	if o.Ready != nil {
		o.Ready(page)
	}
	if waitChange(ctx, o.Spec, stamp) {
		return true, nil
	}
	fmt.Fprintln(out, "\nfleetc dev: stopping")
	return false, nil
}

func firstEvent(f *ir.Fleet) string {
	for _, a := range f.Agents {
		if a.Consumes != nil && a.Consumes.Event != nil {
			return a.Consumes.Event.DetailType
		}
	}
	if len(f.Events) > 0 {
		return f.Events[0].DetailType
	}
	return "EVENT"
}

// apply plans and applies with the emulator override. A dev fleet on an emulator holds
// nothing worth guarding, so replacements are not refused, and nothing asks for yes.
func apply(ctx context.Context, w *deploy.Workspace, out, errw io.Writer) error {
	plan := filepath.Join(w.TFDir, ".fleetc-dev.tfplan")
	defer os.Remove(plan)
	s, err := w.Plan(ctx, plan, false)
	if err != nil {
		return err
	}
	s.WriteText(out)
	if !s.HasChanges() {
		return nil
	}
	return w.Apply(ctx, plan, out, errw)
}

// destroy removes every resource dev applied, without per-address flags: the emulator's
// queues, tables and buckets hold only what this session put there, so its buckets are
// emptied first (a workflow's results stay in the claim-check bucket).
func destroy(ctx context.Context, w *deploy.Workspace, out, errw io.Writer) error {
	plan := filepath.Join(w.TFDir, ".fleetc-dev-destroy.tfplan")
	defer os.Remove(plan)
	s, err := w.Plan(ctx, plan, true)
	if err != nil {
		return err
	}
	if !s.HasChanges() {
		return nil
	}
	if err := w.EmptyBuckets(ctx, s, out, BucketClient); err != nil {
		return err
	}
	return w.Apply(ctx, plan, out, errw)
}

// findWorker returns the fleet-worker binary to run.
func findWorker(bin string) (string, error) {
	p, err := findBinary("--worker-bin", bin, "fleet-worker")
	if err == nil && p == "" {
		err = errors.New("fleet-worker not found next to fleetc, on PATH or in ./bin: build it with `go build -o bin/fleet-worker ./cmd/fleet-worker` or pass --worker-bin")
	}
	return p, err
}

// findBinary returns the executable to run: the one flag names (an error when it is not
// executable), else name next to fleetc, on PATH or in ./bin, in that order; "" for none.
func findBinary(flag, bin, name string) (string, error) {
	if bin != "" {
		if !isExec(bin) {
			return "", fmt.Errorf("%s %s is not an executable", flag, bin)
		}
		return bin, nil
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); isExec(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if dir, err := os.Getwd(); err == nil {
		if p := filepath.Join(dir, "bin", name); isExec(p) {
			return p, nil
		}
	}
	return "", nil
}

// connect reads the applied fleet's outputs and makes the clients.
func (d *Fleet) connect(ctx context.Context, w *deploy.Workspace) error {
	outs, err := w.Outputs(ctx)
	if err != nil {
		return err
	}
	var queues, dlqs, machines map[string]string
	for _, o := range outs {
		var dst *map[string]string
		switch o.Name {
		case "queue_urls":
			dst = &queues
		case "dlq_urls":
			dst = &dlqs
		case "state_machine_arns":
			dst = &machines
		default:
			continue
		}
		if err := json.Unmarshal(o.Value, dst); err != nil {
			return fmt.Errorf("output %s: %w", o.Name, err)
		}
	}
	if d.aws, err = awsconfig.Load(ctx, awsconfig.Options{Region: d.ir.Region, Endpoint: d.endpoint, MaxAttempts: 3}); err != nil {
		return err
	}
	d.sqs, d.eb, d.sfn = awsconfig.SQS(d.aws), awsconfig.EventBridge(d.aws), awsconfig.SFN(d.aws)
	for _, a := range d.ir.Agents {
		q := queueURLs{queue: queues[a.Name], dlq: dlqs[a.Name]}
		if name := a.IngressQueueName(); name != "" {
			r, err := d.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
			if err != nil {
				return fmt.Errorf("ingress queue of %s: %w", a.Name, err)
			}
			q.ingress = aws.ToString(r.QueueUrl)
		}
		d.queues[a.Name] = q
	}
	d.machines = machines
	for _, wf := range d.ir.Workflows {
		b, err := os.ReadFile(filepath.Join(d.opts.Dir, "statemachines", wf.Name+".input.example.json"))
		if err == nil {
			d.examples[wf.Name] = b
		}
	}
	return nil
}

// devVisibility and devHeartbeat are every dev worker's lease and its renewal period.
const (
	devVisibility = 30 * time.Second
	devHeartbeat  = 10 * time.Second
)

// workerEnv is what every worker gets: the emulator, the fleet's region, dummy
// credentials unless the environment has some, kumo's CRC-less DynamoDB answers, and dev's
// Bedrock stand-in for the model routers.
func (d *Fleet) workerEnv() []string {
	env := []string{
		awsconfig.EnvEndpoint + "=" + d.endpoint,
		"AWS_REGION=" + d.ir.Region,
		"FLEET_DYNAMODB_DISABLE_CRC32=1",
		config.EnvWaitTimeSeconds + "=2", // short polls: Ctrl-C and pauses act within seconds
		// A short lease renewed often: what a killed worker held (its messages, its
		// idempotency claims) comes back within devVisibility, not the class's visibility
		// timeout (15 min for a 10 min step), so a kill -9 rehearses in seconds.
		config.EnvVisibilitySecs + "=" + strconv.Itoa(int(devVisibility/time.Second)),
		config.EnvHeartbeatSecs + "=" + strconv.Itoa(int(devHeartbeat/time.Second)),
	}
	if d.model != nil {
		env = append(env, config.EnvBedrockEndpoint+"="+d.model.endpoint())
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		env = append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
	}
	return env
}

// devConfig writes the dev copy of a class's runtime config: an exec handler runs behind
// HandlerCommand (faults, and a stand-in when its command is not on this machine); an http
// handler whose sidecar does not answer is replaced by the stand-in. The generated config is
// never changed.
func (d *Fleet) devConfig(a *ir.Agent, handlerBin string) (path, note string, err error) {
	src := filepath.Join(d.opts.Dir, a.ConfigPath)
	b, err := os.ReadFile(src)
	if err != nil {
		return "", "", err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", "", fmt.Errorf("%s: %w", src, err)
	}
	wrap := []string{handlerBin, HandlerCommand, "--faults", d.faultsAt, "--class", a.Name}
	if d.stepsAt != "" {
		wrap = append(wrap, StepsFlag, d.stepsAt)
		for _, n := range slices.Sorted(maps.Keys(a.Handler.Secrets)) {
			wrap = append(wrap, SecretFlag, n)
		}
	}
	example, err := OutputExample(a)
	if err != nil {
		return "", "", err
	}
	if example != nil {
		p := filepath.Join(d.opts.Dir, "dev", a.Name+".output.example.json")
		if err := os.WriteFile(p, append(example, '\n'), 0o644); err != nil {
			return "", "", err
		}
		wrap = append(wrap, StandInOutputFlag, p)
	}
	wrap = append(wrap, "--")
	switch a.Handler.Kind {
	case config.HandlerExec:
		command, n := d.opts.Paths.Local(a.Handler.Command)
		note = n
		if _, err := exec.LookPath(command[0]); err != nil {
			note = fmt.Sprintf("handler %s is not on this machine: a stand-in %s", command[0], standInAnswers(example))
		}
		cfg["handler"] = map[string]any{"type": config.HandlerExec, "command": append(wrap, command...)}
	case config.HandlerLLM:
		// The system prompt the spec names relative to its directory (P014 checked it is
		// there): the worker here runs in fleetc's working directory, not the image's.
		if h, ok := cfg["handler"].(map[string]any); ok && a.Handler.System != "" && !filepath.IsAbs(a.Handler.System) {
			p, err := filepath.Abs(filepath.Join(filepath.Dir(d.opts.Spec), a.Handler.System))
			if err != nil {
				return "", "", err
			}
			h["system"] = p
			note = "system prompt from the project: " + p
		}
	case config.HandlerHTTP:
		if !answers(a.Handler.URL) {
			note = fmt.Sprintf("handler %s does not answer: a stand-in %s", a.Handler.URL, standInAnswers(example))
			cfg["handler"] = map[string]any{"type": config.HandlerExec, "command": wrap}
		} else {
			note = fmt.Sprintf("handler %s answers: faults from the page do not reach it", a.Handler.URL)
		}
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(d.opts.Dir, "dev", a.Name+".json")
	return path, note, os.WriteFile(path, append(out, '\n'), 0o644)
}

// standInAnswers says what the stand-in answers each step with.
func standInAnswers(example json.RawMessage) string {
	if example != nil {
		return "answers each step with the example of the class's output schema"
	}
	return "echoes each step's input"
}

// answers reports whether something listens at the URL's host.
func answers(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme]+map[bool]string{true: "80"}[u.Scheme != "https"])
	}
	c, err := net.DialTimeout("tcp", host, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// agent returns the class called name.
func (d *Fleet) agent(name string) *ir.Agent {
	i := slices.IndexFunc(d.ir.Agents, func(a *ir.Agent) bool { return a.Name == name })
	if i < 0 {
		return nil
	}
	return d.ir.Agents[i]
}

// SetFault gives a class's handler a fault for the next duration.
func (d *Fleet) SetFault(class string, kind FaultKind, dur, delay time.Duration) error {
	if d.agent(class) == nil {
		return fmt.Errorf("no class %q", class)
	}
	if kind != FaultFail && kind != FaultSlow {
		return fmt.Errorf("fault %q: want fail or slow", kind)
	}
	d.faultsMu.Lock()
	defer d.faultsMu.Unlock()
	fs, err := ReadFaults(d.faultsAt)
	if err != nil {
		return err
	}
	fs[class] = Fault{Kind: kind, Until: time.Now().Add(dur), Delay: delay}
	return WriteFaults(d.faultsAt, fs)
}

// Send checks and puts an event (nil detail: the example); the observer counts it.
func (d *Fleet) Send(ctx context.Context, detailType string, detail []byte) (*Event, string, error) {
	ev, err := NewEvent(d.ir, d.contracts, detailType, detail)
	if err != nil {
		return nil, "", err
	}
	id, err := Put(ctx, d.eb, ev)
	if err != nil {
		return nil, "", err
	}
	return ev, id, nil
}

// envFlag is the --env a printed command needs to act on the same environment ("" without
// one): every hint fleetc prints must work as printed.
func envFlag(env string) string {
	if env == "" {
		return ""
	}
	return " --env " + env
}

// BucketClient is deploy's S3 client for emptying buckets, made the way fleet-worker makes
// its AWS clients (runtime/awsconfig).
func BucketClient(ctx context.Context, region, endpoint string) (deploy.BucketAPI, error) {
	c, err := awsconfig.BucketEmptier(ctx, region, endpoint)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// stepSeen takes one handler run into the journal and, with --verbose, the log.
func (d *Fleet) stepSeen(r *StepRecord) {
	d.journal.add(r.entry())
	if d.opts.Verbose {
		for _, l := range verboseLines(r) {
			d.sup.out.line(r.Class, l)
		}
	}
}
