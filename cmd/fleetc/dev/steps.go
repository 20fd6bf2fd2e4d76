package dev

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/trace"
	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/contract"
)

// dev-handler's flags for the steps file: StepsFlag names the file it appends one StepRecord
// a line to; SecretFlag (repeatable) names a variable of the handler's environment (a
// handler.secrets name) whose value never goes in a record.
const (
	StepsFlag  = "--steps"
	SecretFlag = "--secret"
)

// StepRecord is one handler run, as dev-handler saw it: what the worker gave the handler on
// stdin and what the handler answered on stdout, both bounded and with secrets redacted.
type StepRecord struct {
	Start      time.Time     `json:"start"`
	Class      string        `json:"class"`
	TraceID    string        `json:"trace_id,omitempty"`
	Key        string        `json:"key,omitempty"` // the idempotency key
	Attempt    int           `json:"attempt,omitempty"`
	Ran        string        `json:"ran"` // the command line, or the stand-in, or the fault
	Exit       int           `json:"exit"`
	DurationMS int64         `json:"duration_ms"`
	Input      trace.Payload `json:"input"`
	Result     trace.Payload `json:"result"`
}

// entry is the record as a timeline entry.
func (r *StepRecord) entry() trace.Entry {
	return trace.Entry{Time: r.Start.UTC(), Source: trace.SourceStep, Where: r.Class, What: fmt.Sprintf("handler exit %d", r.Exit),
		ID: r.Key, Detail: fmt.Sprintf("attempt %d, %d ms: %s", r.Attempt, r.DurationMS, r.Ran), TraceID: r.TraceID,
		Payloads: []trace.Payload{r.Input, r.Result}}
}

// captureMax is how much of a stream dev-handler keeps to make a payload of: more than a
// payload shows, so a secret across the cut is whole when it is redacted.
const captureMax = 4 * trace.PayloadMaxBytes

// capture keeps the first captureMax bytes written to it and counts them all.
type capture struct {
	buf   bytes.Buffer
	total int
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += len(p)
	if room := captureMax - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// payload is what was captured, secrets redacted, bounded; Bytes is what the stream carried.
func (c *capture) payload(kind trace.PayloadKind, r redactor) trace.Payload {
	return trace.BoundPayload(kind, r.apply(c.buf.Bytes()), c.total, c.total == c.buf.Len())
}

// redactor replaces secret values with their name, as they are and JSON-escaped (the way
// they appear inside a JSON string).
type redactor struct{ forms, names [][]byte } // a value's form → redacted(its name)

// newRedactor reads the values of the named variables; an unset or empty one has nothing to
// hide. Each value's forms are found once here, not on every entry.
func newRedactor(names []string, getenv func(string) string) redactor {
	var r redactor
	for _, n := range names {
		v := getenv(n)
		if v == "" {
			continue
		}
		esc, _ := json.Marshal(v)
		for _, form := range []string{v, string(esc[1 : len(esc)-1])} {
			r.forms, r.names = append(r.forms, []byte(form)), append(r.names, []byte(redacted(n)))
		}
	}
	return r
}

// redacted is what a secret's value is replaced with.
func redacted(name string) string { return "[secret " + name + "]" }

func (r redactor) apply(b []byte) []byte {
	for i, form := range r.forms {
		b = bytes.ReplaceAll(b, form, r.names[i])
	}
	return b
}

func (r redactor) string(s string) string { return string(r.apply([]byte(s))) }

// secretNames are the variables whose values dev never shows: every class's handler secrets
// and every model's api_key_env, as this shell has them.
func secretNames(f *ir.Fleet) []string {
	set := map[string]bool{}
	for _, a := range f.Agents {
		for n := range a.Handler.Secrets {
			set[n] = true
		}
	}
	seen := map[*ir.Model]bool{}
	var model func(m *ir.Model)
	model = func(m *ir.Model) {
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		if m.APIKeyEnv != "" {
			set[m.APIKeyEnv] = true
		}
		for _, fb := range append(slices.Clone(m.Fallbacks), m.ContextWindowFallbacks...) {
			model(fb)
		}
	}
	for _, m := range f.Models {
		model(m)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// stepEnv reads the step's variables the worker set for the handler.
func stepEnv(getenv func(string) string, r *StepRecord) {
	r.TraceID, r.Key = getenv(contract.ExecTraceIDEnv), getenv(contract.ExecKeyEnv)
	r.Attempt, _ = strconv.Atoi(getenv(contract.ExecAttemptEnv))
}

// appendStep appends one record to the steps file in one write (O_APPEND: the handlers of
// every class share it, and a line is never interleaved with another's).
func appendStep(path string, r *StepRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stepsPoll is how often dev reads what the handlers appended.
const stepsPoll = 250 * time.Millisecond

// tailSteps reads the steps file as the handlers append to it, until ctx ends, handing each
// record to seen.
func tailSteps(ctx context.Context, path string, seen func(*StepRecord)) {
	var off int64
	t := time.NewTicker(stepsPoll)
	defer t.Stop()
	for {
		off = readSteps(path, off, seen)
		select {
		case <-ctx.Done():
			readSteps(path, off, seen) // what the drained handlers wrote last
			return
		case <-t.C:
		}
	}
}

// readSteps hands over the complete lines after off and returns the offset after them.
func readSteps(path string, off int64, seen func(*StepRecord)) int64 {
	f, err := os.Open(path)
	if err != nil {
		return off
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return off // a line still being written is read next time
		}
		off += int64(len(line))
		var rec StepRecord
		if json.Unmarshal(line, &rec) == nil {
			seen(&rec)
		}
	}
}

// journalMax bounds what dev remembers of the conversations it saw.
const journalMax = 1000

// journal is what dev saw happen, across conversations: events on the bus, handler runs,
// the workers' verdicts; the newest journalMax entries.
type journal struct {
	redact  redactor // applied to each entry's detail (a dead letter's reason holds the handler's stderr)
	mu      sync.Mutex
	entries []trace.Entry
}

func (j *journal) add(e trace.Entry) {
	if j == nil {
		return
	}
	e.Detail = j.redact.string(e.Detail)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	if over := len(j.entries) - journalMax; over > 0 {
		j.entries = j.entries[over:] // append copies only the kept entries when it next grows
	}
}

// recent is the newest n entries, oldest first.
func (j *journal) recent(n int) []trace.Entry {
	if j == nil {
		return []trace.Entry{}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := append([]trace.Entry{}, j.entries[max(0, len(j.entries)-n):]...)
	sortEntries(out)
	return out
}

// of is every entry of one conversation.
func (j *journal) of(traceID string) []trace.Entry {
	if j == nil {
		return []trace.Entry{}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := []trace.Entry{}
	for _, e := range j.entries {
		if e.TraceID == traceID {
			out = append(out, e)
		}
	}
	return out
}

// sortEntries orders entries as a timeline does.
func sortEntries(es []trace.Entry) {
	t := trace.Timeline{Entries: es}
	t.Sort()
}

// verboseLines are a record's lines for --verbose: the step's input and result, each on one
// line (the trace id came with the message: one line too).
func verboseLines(r *StepRecord) []string {
	traceID := view.OneLine(r.TraceID)
	return []string{
		fmt.Sprintf("step input (trace %s, attempt %d): %s", traceID, r.Attempt, payloadLine(r.Input)),
		fmt.Sprintf("step result (trace %s, exit %d, %d ms): %s", traceID, r.Exit, r.DurationMS, payloadLine(r.Result)),
	}
}

// payloadLine is a payload on one terminal line, with its claim checks.
func payloadLine(p trace.Payload) string {
	s := view.OneLine(p.Body)
	if len(p.ClaimChecks) > 0 {
		s += " (claim check " + strings.Join(p.ClaimChecks, ", ") + ")"
	}
	return s
}
