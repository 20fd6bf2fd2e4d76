// Package trace builds one conversation's timeline from what fleetc can read after the
// fact: the class DLQs (peeked, never consumed), the idempotency records and the Step
// Functions executions whose input carries the trace id.
package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/cmd/fleetc/view"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Source is where an entry was read.
type Source string

// Sources, in the order entries of the same instant are shown.
const (
	SourceBus       Source = "bus"       // an event on the fleet's bus (fleetc dev's observer)
	SourceExecution Source = "execution" // a Step Functions execution started or stopped
	SourceHistory   Source = "history"   // one event of an execution's history
	SourceStep      Source = "step"      // a handler's run: its input and result (fleetc dev)
	SourceWorker    Source = "worker"    // the worker's verdict on a step (fleetc dev, from its log)
	SourceRecord    Source = "idempotency"
	SourceDLQ       Source = "dlq"
)

var sourceOrder = map[Source]int{SourceBus: 0, SourceExecution: 1, SourceHistory: 2, SourceStep: 3, SourceWorker: 4, SourceRecord: 5, SourceDLQ: 6}

// Entry is one thing that happened to the conversation.
type Entry struct {
	Time   time.Time `json:"time"`
	Source Source    `json:"source"`
	Where  string    `json:"where"` // the class or workflow
	What   string    `json:"what"`  // the ERROR_CODE, the record's status, the history event's type
	ID     string    `json:"id"`    // the dead letter's message id, the record's key, the execution's name
	Detail string    `json:"detail,omitempty"`
	// TraceID is set where entries of several conversations are listed together (fleetc
	// dev's activity); a Timeline's entries are all of its trace.
	TraceID  string    `json:"trace_id,omitempty"`
	Payloads []Payload `json:"payloads,omitempty"` // the event's detail, the step's input and result
}

// Timeline is a conversation's entries, oldest first, and what could not be read completely.
type Timeline struct {
	TraceID string    `json:"trace_id"`
	Since   time.Time `json:"since"`
	Entries []Entry   `json:"entries"`
	Notes   []string  `json:"notes"`
}

// Sort orders entries by time, then source, place, id and what: the same reads give the
// same output.
func (t *Timeline) Sort() {
	sort.Slice(t.Entries, func(i, j int) bool {
		a, b := t.Entries[i], t.Entries[j]
		if !a.Time.Equal(b.Time) {
			return a.Time.Before(b.Time)
		}
		if a.Source != b.Source {
			return sourceOrder[a.Source] < sourceOrder[b.Source]
		}
		if a.Where != b.Where {
			return a.Where < b.Where
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.What < b.What
	})
	sort.Strings(t.Notes)
}

// After is the timeline without the entries before since (its Since the later of the two).
func (t *Timeline) After(since time.Time) *Timeline {
	out := *t
	out.Entries = []Entry{}
	for _, e := range t.Entries {
		if !e.Time.Before(since) {
			out.Entries = append(out.Entries, e)
		}
	}
	if since.After(out.Since) {
		out.Since = since.UTC()
	}
	return &out
}

// AddLetters adds class's dead letters of the trace (by the envelope's trace id) sent at or
// after the timeline's start, and notes a peek that did not see the whole DLQ.
func (t *Timeline) AddLetters(class string, p *dlq.Peeked) {
	for _, l := range p.Letters {
		env, err := wire.ParseEnvelope([]byte(l.Body))
		if err != nil || env.TraceID != t.TraceID || l.SentAt.Before(t.Since) {
			continue
		}
		t.Entries = append(t.Entries, Entry{Time: l.SentAt, Source: SourceDLQ, Where: class, What: string(l.Code), ID: l.ID,
			Detail: fmt.Sprintf("%s (attempts %d)", l.Message, l.Attempts)})
	}
	if !p.Complete {
		t.Notes = append(t.Notes, fmt.Sprintf("%s's DLQ: saw %d of %d dead letters (others in flight or past the limit)", class, len(p.Letters), p.Depth))
	}
}

// AddRecords adds idempotency records (idem.FindTrace).
func (t *Timeline) AddRecords(rs []idem.Record) {
	for _, r := range rs {
		what := r.Status
		if r.Status == "done" && !r.Published {
			what += ", events not yet published"
		}
		t.Entries = append(t.Entries, Entry{Time: r.UpdatedAt, Source: SourceRecord, Where: r.Class, What: what, ID: r.Key})
	}
}

// SFNAPI is the part of the Step Functions client the timeline reads.
type SFNAPI interface {
	sfn.ListExecutionsAPIClient
	sfn.GetExecutionHistoryAPIClient
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, optFns ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// AddExecutions adds workflow's executions started at or after the timeline's start whose
// input carries the trace id (top-level trace_id, or detail.trace_id), with their history.
func (t *Timeline) AddExecutions(ctx context.Context, api SFNAPI, workflow, machineARN string) error {
	p := sfn.NewListExecutionsPaginator(api, &sfn.ListExecutionsInput{StateMachineArn: aws.String(machineARN)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list executions of %s: %w", workflow, err)
		}
		for _, x := range page.Executions {
			if aws.ToTime(x.StartDate).Before(t.Since) {
				continue
			}
			d, err := api.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: x.ExecutionArn})
			if err != nil {
				return fmt.Errorf("describe %s: %w", aws.ToString(x.Name), err)
			}
			if inputTrace(aws.ToString(d.Input)) != t.TraceID {
				continue
			}
			if err := t.addExecution(ctx, api, workflow, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Timeline) addExecution(ctx context.Context, api SFNAPI, workflow string, d *sfn.DescribeExecutionOutput) error {
	name := aws.ToString(d.Name)
	t.Entries = append(t.Entries, Entry{Time: aws.ToTime(d.StartDate).UTC(), Source: SourceExecution, Where: workflow, What: "started", ID: name})
	if d.StopDate != nil {
		t.Entries = append(t.Entries, Entry{Time: aws.ToTime(d.StopDate).UTC(), Source: SourceExecution, Where: workflow, What: string(d.Status), ID: name,
			Detail: strings.TrimSpace(aws.ToString(d.Error) + " " + aws.ToString(d.Cause))})
	}
	h := sfn.NewGetExecutionHistoryPaginator(api, &sfn.GetExecutionHistoryInput{ExecutionArn: d.ExecutionArn})
	for h.HasMorePages() {
		page, err := h.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("history of %s: %w", name, err)
		}
		for _, e := range page.Events {
			state := ""
			if e.StateEnteredEventDetails != nil {
				state = aws.ToString(e.StateEnteredEventDetails.Name)
			} else if e.StateExitedEventDetails != nil {
				state = aws.ToString(e.StateExitedEventDetails.Name)
			}
			t.Entries = append(t.Entries, Entry{Time: aws.ToTime(e.Timestamp).UTC(), Source: SourceHistory, Where: workflow,
				What: string(e.Type), ID: fmt.Sprintf("%s#%d", name, e.Id), Detail: state})
		}
	}
	return nil
}

// inputTrace is an execution input's trace id: trace_id, else detail.trace_id (an
// EventBridge event as the input).
func inputTrace(input string) string {
	var in struct {
		TraceID string `json:"trace_id"`
		Detail  struct {
			TraceID string `json:"trace_id"`
		} `json:"detail"`
	}
	if json.Unmarshal([]byte(input), &in) != nil {
		return ""
	}
	if in.TraceID != "" {
		return in.TraceID
	}
	return in.Detail.TraceID
}

// WriteText writes the timeline for a person, one entry a line.
func (t *Timeline) WriteText(w io.Writer) {
	fmt.Fprintf(w, "trace %s since %s: %d entries\n", t.TraceID, t.Since.UTC().Format(time.RFC3339), len(t.Entries))
	for _, e := range t.Entries {
		// Keys, messages and errors come from outside fleetc: each field is one harmless line.
		line := fmt.Sprintf("%s  %-11s %-16s %-28s %s", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Source, view.OneLine(e.Where), view.OneLine(e.What), view.OneLine(e.ID))
		if e.Detail != "" {
			line += "  " + view.OneLine(e.Detail)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		for _, p := range e.Payloads {
			fmt.Fprintf(w, "    %s: %s\n", p.Kind, view.OneLine(p.Body))
			for _, c := range p.ClaimChecks {
				fmt.Fprintf(w, "    %s claim check %s\n", p.Kind, view.OneLine(c))
			}
		}
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "note: %s\n", view.OneLine(n))
	}
}
