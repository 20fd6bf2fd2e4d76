package dev

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/runtime/config"
)

// Worker states the page shows.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StatePaused   = "paused"
	StateKilled   = "killed" // kill -9 by a fault; restarted after RestartDelay
	StateExited   = "exited"
	StateStopped  = "stopped"
)

// RestartDelay is how long a killed worker stays down, as a pod's restart would.
const RestartDelay = 2 * time.Second

// drainTimeout is each worker's --drain-timeout when dev stops it.
const drainTimeout = 10 * time.Second

// proc is one class's fleet-worker process, restarted when killed.
type proc struct {
	class, mode string
	bin         string // "" = the supervisor's fleet-worker; RIE for a lambda class
	args        []string
	env         []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	state   string
	pid     int
	starts  int
	paused  bool
	stopped bool
	exited  chan struct{}
}

// supervisor runs one fleet-worker per class and turns their log lines into the ledger.
type supervisor struct {
	bin     string
	out     *prefixer
	led     *ledger
	journal *journal // the verdicts, for the page's activity and trace view (nil: not kept)
	procs   map[string]*proc
	wg      sync.WaitGroup
}

func (s *supervisor) add(class, mode, configPath string, env []string) error {
	// Every worker on this machine: metrics on a port of its own choosing (the generated
	// configs all name the same one), which it logs.
	p := &proc{class: class, mode: mode,
		args: []string{"--config", configPath, "--mode", mode, "--drain-timeout", drainTimeout.String()},
		env:  append(env, config.EnvMetricsAddr+"=127.0.0.1:0")}
	s.procs[class] = p
	return nil
}

// addLambda runs a lambda class's fleet-worker in Lambda mode under the Runtime Interface
// Emulator rie, which serves the Invoke API on invoke (dev's event source mapping calls it).
func (s *supervisor) addLambda(class, rie, invoke, configPath string, env []string) error {
	api, err := freeAddr()
	if err != nil {
		return err
	}
	s.procs[class] = &proc{class: class, mode: "lambda", bin: rie, args: rieArgs(invoke, api, s.bin, configPath),
		env: append(env, config.EnvMetricsAddr+"=127.0.0.1:0")}
	return nil
}

// running says the class's process is up (the event source mapping invokes only then).
func (s *supervisor) running(class string) bool {
	state, _, _ := s.status(class)
	return state == StateRunning
}

// start starts every worker and keeps each one running until stopAll.
func (s *supervisor) start(ctx context.Context) error {
	for _, p := range s.procs {
		if err := s.launch(p); err != nil {
			return err
		}
	}
	return nil
}

func (s *supervisor) launch(p *proc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.paused {
		return nil
	}
	bin := p.bin
	if bin == "" {
		bin = s.bin
	}
	cmd := exec.Command(bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	// Own process group: Ctrl-C reaches fleetc only, which drains the workers itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting fleet-worker for %s: %w", p.class, err)
	}
	p.cmd, p.pid, p.state = cmd, cmd.Process.Pid, StateRunning
	p.starts++
	p.exited = make(chan struct{})
	exited := p.exited
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if rieChatter(line) {
				continue
			}
			if e, ok := s.led.observe(p.class, line, time.Now()); ok {
				s.journal.add(e)
			}
			s.out.line(p.class, line)
		}
		err := cmd.Wait()
		close(exited)
		p.mu.Lock()
		restart := false
		switch {
		case p.stopped:
			p.state = StateStopped
		case p.paused:
			p.state = StatePaused
		case p.state == StateKilled:
			restart = true
		default:
			p.state = StateExited
			s.out.line(p.class, fmt.Sprintf("fleet-worker exited: %v; restarting in %s", err, RestartDelay))
			restart = true
		}
		p.mu.Unlock()
		if restart {
			time.AfterFunc(RestartDelay, func() {
				if err := s.launch(p); err != nil {
					s.out.line(p.class, err.Error())
				}
			})
		}
	}()
	return nil
}

// kill sends SIGKILL to the class's worker (a crash mid-step); it comes back after
// RestartDelay, as a pod would, and SQS redelivers what it held once visibility expires.
func (s *supervisor) kill(class string) (int, error) {
	p, ok := s.procs[class]
	if !ok {
		return 0, fmt.Errorf("no class %q", class)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.state != StateRunning {
		return 0, fmt.Errorf("the %s worker is not running (%s)", class, p.state)
	}
	p.state = StateKilled
	// The whole process group: under RIE the worker is RIE's child, and a crash takes both.
	return p.pid, syscall.Kill(-p.pid, syscall.SIGKILL)
}

// pause drains and stops the class's worker (messages wait in its queue) or, with
// paused false, starts it again.
func (s *supervisor) pause(class string, paused bool) error {
	p, ok := s.procs[class]
	if !ok {
		return fmt.Errorf("no class %q", class)
	}
	p.mu.Lock()
	was := p.paused
	p.paused = paused
	cmd := p.cmd
	running := p.state == StateRunning
	p.mu.Unlock()
	switch {
	case paused && !was && running:
		return p.term(cmd)
	case !paused && was:
		return s.launch(p)
	}
	return nil
}

// term asks the process to stop: fleet-worker itself in poll mode (it drains, and its
// handlers finish their steps), RIE's whole group in Lambda mode (the worker, RIE's child,
// gets it too).
func (p *proc) term(cmd *exec.Cmd) error {
	if p.bin == "" {
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}

// stopAll sends SIGTERM to every worker (fleet-worker drains within its --drain-timeout)
// and waits, killing what is still running after the budget and a margin.
func (s *supervisor) stopAll() {
	for _, p := range s.procs {
		p.mu.Lock()
		p.stopped = true
		if p.cmd != nil && p.state == StateRunning {
			_ = p.term(p.cmd)
		}
		p.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout + 15*time.Second):
		for _, p := range s.procs {
			p.mu.Lock()
			if p.cmd != nil {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
			p.mu.Unlock()
		}
		<-done
	}
}

func (s *supervisor) status(class string) (state string, pid, starts int) {
	p := s.procs[class]
	if p == nil {
		return "", 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.pid, p.starts
}

// rieChatter is RIE's own INFO logging (init phases, sandbox resets), left out of the
// interleaved log; its warnings and errors, and the START/END/REPORT lines Lambda prints
// too, stay.
func rieChatter(line string) bool {
	return strings.Contains(line, "[INFO] (rapid)")
}

// prefixer interleaves the workers' lines, each with its class in front.
type prefixer struct {
	mu    sync.Mutex
	w     io.Writer
	width int
}

func (p *prefixer) line(class, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%-*s | %s\n", p.width, class, line)
}

// ledger counts each unit of work once by its work key: finished, dead-lettered, released
// for a retry. Keys survive a killed worker because the lines were read as they were written.
type ledger struct {
	mu      sync.Mutex
	classes map[string]*classLedger
}

type classLedger struct {
	completed, deadLettered map[string]string // work key → trace id
	retries                 int
	codes                   map[string]int
	recent                  []Verdict
	times                   []time.Time // finished steps, for steps per second
	stderrLines             int
	pending                 map[string]time.Time // trace id → when the observer saw its event
	submitted               map[string]bool      // trace ids the observer saw routed here
}

// Verdict is one step's end, as the worker logged it.
type Verdict struct {
	Time    time.Time `json:"time"`
	Verdict string    `json:"verdict"` // finished | dead-lettered | released
	TraceID string    `json:"trace_id,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Code    string    `json:"code,omitempty"`
}

const recentVerdicts = 20

func newLedger(classes []string) *ledger {
	l := &ledger{classes: map[string]*classLedger{}}
	for _, c := range classes {
		l.classes[c] = &classLedger{completed: map[string]string{}, deadLettered: map[string]string{}, codes: map[string]int{},
			pending: map[string]time.Time{}, submitted: map[string]bool{}}
	}
	return l
}

// submit records work the observer saw routed to class, until a verdict names its trace.
func (l *ledger) submit(class, trace string, at time.Time) {
	if trace == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.classes[class]; c != nil && !c.submitted[trace] {
		c.submitted[trace] = true
		if !c.done(trace) {
			c.pending[trace] = at
		}
	}
}

// workerLog is the part of a fleet-worker log line (JSON, from runtime/telemetry) dev reads.
type workerLog struct {
	Msg       string          `json:"msg"`
	Key       string          `json:"key"`
	TraceID   string          `json:"trace_id"`
	MessageID string          `json:"message_id"`
	Attempt   json.RawMessage `json:"attempt"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	DelayMS   int64           `json:"delay_ms"`
}

// observe reads one fleet-worker log line seen at now; a verdict is also answered as a
// timeline entry (ok).
func (l *ledger) observe(class, line string, now time.Time) (trace.Entry, bool) {
	var rec workerLog
	if json.Unmarshal([]byte(line), &rec) != nil {
		return trace.Entry{}, false
	}
	attempt, _ := strconv.Atoi(string(rec.Attempt))
	if !l.count(class, &rec, attempt, now) {
		return trace.Entry{}, false
	}
	return rec.entry(class, attempt, now), true
}

// count counts one log line of class; a verdict is true.
func (l *ledger) count(class string, rec *workerLog, attempt int, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.classes[class]
	if c == nil {
		return false
	}
	v := Verdict{Time: now, TraceID: rec.TraceID, Attempt: attempt, Code: rec.Code}
	switch rec.Msg {
	case "step finished":
		c.completed[rec.Key] = rec.TraceID
		delete(c.deadLettered, rec.Key) // redriven from the DLQ, then finished: it counts once, as completed
		c.times = append(c.times, v.Time)
		for len(c.times) > 0 && v.Time.Sub(c.times[0]) > rateWindow {
			c.times = c.times[1:]
		}
		delete(c.pending, rec.TraceID)
		v.Verdict = "finished"
	case "step dead-lettered":
		c.deadLettered[rec.Key] = rec.TraceID
		delete(c.pending, rec.TraceID)
		c.codes[rec.Code]++
		v.Verdict = "dead-lettered"
	case "step released":
		c.retries++
		v.Verdict = "released"
	case "handler stderr":
		c.stderrLines++
		return false
	default:
		return false
	}
	c.recent = append(c.recent, v)
	if len(c.recent) > recentVerdicts {
		c.recent = c.recent[len(c.recent)-recentVerdicts:]
	}
	return true
}

// entry is a verdict line as a timeline entry: finished, released (with its delay) or
// dead-lettered with its ERROR_CODE and reason.
func (r *workerLog) entry(class string, attempt int, at time.Time) trace.Entry {
	what := strings.TrimPrefix(r.Msg, "step ")
	if r.Code != "" {
		what += " " + r.Code
	}
	detail := fmt.Sprintf("attempt %d, message %s", attempt, r.MessageID)
	if r.Msg == "step released" {
		detail += fmt.Sprintf(", retry in %d ms", r.DelayMS)
	}
	if r.Reason != "" {
		detail += ": " + r.Reason
	}
	return trace.Entry{Time: at.UTC(), Source: trace.SourceWorker, Where: class, What: what, ID: r.Key, Detail: detail, TraceID: r.TraceID}
}

// done reports whether a verdict named trace already (its event may reach the observer after
// the worker finished it).
func (c *classLedger) done(trace string) bool {
	for _, m := range []map[string]string{c.completed, c.deadLettered} {
		for _, t := range m {
			if t == trace {
				return true
			}
		}
	}
	return false
}

// classCounts is a ledger snapshot of one class. Completed and DeadLettered count the work
// the observer saw submitted as events; WorkflowSteps the other finished work (task
// messages a state machine sent to the queue directly).
type classCounts struct {
	Completed, DeadLettered, WorkflowSteps, Retries, StderrLines int
	StepsPerSecond                                               float64
	Codes                                                        map[string]int
	Recent                                                       []Verdict
	Oldest                                                       time.Time // oldest pending work's submission (zero: none)
}

// rateWindow is the window of the steps-per-second figure.
const rateWindow = 10 * time.Second

func (l *ledger) counts(class string, now time.Time) classCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.classes[class]
	if c == nil {
		return classCounts{}
	}
	n := 0
	for _, t := range c.times {
		if now.Sub(t) <= rateWindow {
			n++
		}
	}
	codes := map[string]int{}
	for k, v := range c.codes {
		codes[k] = v
	}
	var oldest time.Time
	for _, t := range c.pending {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	completed, dead, other := 0, 0, 0
	for _, t := range c.completed {
		if c.submitted[t] {
			completed++
		} else {
			other++
		}
	}
	for _, t := range c.deadLettered {
		if c.submitted[t] {
			dead++
		} else {
			other++
		}
	}
	return classCounts{Oldest: oldest, Completed: completed, DeadLettered: dead, WorkflowSteps: other, Retries: c.retries,
		StderrLines: c.stderrLines, StepsPerSecond: float64(n) / rateWindow.Seconds(), Codes: codes,
		Recent: append([]Verdict(nil), c.recent...)}
}
