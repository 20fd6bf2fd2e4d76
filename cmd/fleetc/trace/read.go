package trace

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fleetc/fleetc/cmd/fleetc/dlq"
	"github.com/fleetc/fleetc/runtime/idem"
)

// Sources is what Read reads.
type Sources struct {
	SQS     dlq.API
	DDB     idem.ScanAPI
	SFN     SFNAPI        // nil: no workflow is read
	Targets []*dlq.Target // resolved
	// Machines maps a workflow to its state machine's ARN.
	Machines map[string]string
	Limit    int // dead letters peeked per class (0: dlq.DefaultLimit)
}

// Read builds traceID's timeline since since.
func Read(ctx context.Context, src Sources, traceID string, since time.Time) (*Timeline, error) {
	t := &Timeline{TraceID: traceID, Since: since.UTC(), Entries: []Entry{}, Notes: []string{}}
	var tables []string
	for _, tg := range src.Targets {
		p, err := dlq.Peek(ctx, src.SQS, tg.DLQURL, src.Limit)
		if err != nil {
			return nil, fmt.Errorf("peek %s: %w", tg.DLQ, err)
		}
		t.AddLetters(tg.Class, p)
		if !slices.Contains(tables, tg.Table) {
			tables = append(tables, tg.Table)
		}
	}
	for _, table := range tables {
		rs, err := idem.FindTrace(ctx, src.DDB, table, traceID, since)
		if err != nil {
			return nil, err
		}
		t.AddRecords(rs)
	}
	workflows := make([]string, 0, len(src.Machines))
	for w := range src.Machines {
		workflows = append(workflows, w)
	}
	slices.Sort(workflows)
	for _, w := range workflows {
		if err := t.AddExecutions(ctx, src.SFN, w, src.Machines[w]); err != nil {
			return nil, err
		}
	}
	t.Sort()
	return t, nil
}
