package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/wire"
)

// Outcome is what became of one redriven dead letter.
type Outcome int

const (
	Pending   Outcome = iota // neither completed nor back in the DLQ yet
	Completed                // its idempotency record is done and published
	Failed                   // dead-lettered again
)

func (o Outcome) String() string {
	return [...]string{"pending", "completed", "back in the DLQ"}[o]
}

// Watched is one canary and its outcome.
type Watched struct {
	Moved   Moved
	Key     string // its idempotency key ("" when its body yields none)
	Outcome Outcome
	Again   *Letter // Failed: the new dead letter
}

// Verdict is a canary's result.
type Verdict struct {
	Watched   []Watched `json:"-"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
	Pending   int       `json:"pending"`
}

// OK reports whether every canary completed.
func (v *Verdict) OK() bool { return v.Completed == len(v.Watched) && len(v.Watched) > 0 }

// Records is the idempotency table as the canary reads it.
type Records interface {
	Lookup(ctx context.Context, key string) (idem.Claim, bool, error)
}

// Watch waits until every moved letter completed (its idempotency record) or died again
// (a dead letter with its key, sent after it was moved), polling every interval, until
// timeout or ctx ends. The verdict counts what was seen by then.
func Watch(ctx context.Context, api API, recs Records, t *Target, moved []Moved, interval, timeout time.Duration) (*Verdict, error) {
	v := &Verdict{}
	for _, m := range moved {
		w := Watched{Moved: m}
		w.Key, _ = workKey(t, m.Letter.Body)
		v.Watched = append(v.Watched, w)
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := v.poll(ctx, api, recs, t); err != nil {
			return v, err
		}
		if v.Pending == 0 || time.Now().After(deadline) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(interval):
		}
	}
}

func (v *Verdict) poll(ctx context.Context, api API, recs Records, t *Target) error {
	var again []Letter
	if v.Pending != 0 || v.Completed+v.Failed == 0 {
		name, url := t.returnsTo()
		p, err := Peek(ctx, api, url, DefaultLimit)
		if err != nil {
			return fmt.Errorf("peek %s: %w", name, err)
		}
		again = p.Letters
	}
	v.Completed, v.Failed, v.Pending = 0, 0, 0
	for i := range v.Watched {
		w := &v.Watched[i]
		if w.Outcome == Pending && w.Key != "" {
			c, ok, err := recs.Lookup(ctx, w.Key)
			if err != nil {
				return err
			}
			if ok && c.State == idem.Done && c.Published {
				w.Outcome = Completed
			}
		}
		if w.Outcome == Pending {
			for _, l := range again {
				// Its new dead letter: the same work (same key, or the same body when it
				// has none), dead-lettered after the move.
				same := l.Body == w.Moved.Letter.Body
				if !same && w.Key != "" {
					k, _ := workKey(t, l.Body)
					same = k == w.Key
				}
				if same && !l.SentAt.Before(w.Moved.At.Truncate(time.Millisecond)) && l.ID != w.Moved.Letter.ID {
					w.Outcome, w.Again = Failed, &l
					break
				}
			}
		}
		switch w.Outcome {
		case Completed:
			v.Completed++
		case Failed:
			v.Failed++
		default:
			v.Pending++
		}
	}
	return nil
}

// workKey is the idempotency key the worker derives from body.
func workKey(t *Target, body string) (string, error) {
	env, err := wire.ParseEnvelope([]byte(body))
	if err != nil {
		return "", err
	}
	return idem.Key(env.Detail, t.KeyFields, env.FallbackKey())
}
