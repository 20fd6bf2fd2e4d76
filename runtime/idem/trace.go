package idem

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A record's key is the event id or the class's key fields, not the conversation, so a
// record names its trace id too: `fleetc trace` finds a conversation's records by it.
type traceKey struct{}

// WithTraceID labels the record Acquire writes under ctx with the conversation's trace id.
func WithTraceID(ctx context.Context, traceID string) context.Context {
	// The trace id comes from the event, whose producer chose it: a longer one is left out
	// rather than let it eat the result's share of the 400 KB item (MaxResultBytes keeps
	// 50 KiB for the key and the other attributes).
	if traceID == "" || len(traceID) > MaxTraceIDBytes {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceID)
}

// MaxTraceIDBytes bounds the trace id a record carries (W3C trace ids are 32 hex digits;
// fleetc's are shorter).
const MaxTraceIDBytes = 128

func traceIDFrom(ctx context.Context) string {
	v, _ := ctx.Value(traceKey{}).(string)
	return v
}

// Record is one idempotency record as an operator sees it.
type Record struct {
	Key       string    `json:"key"`
	Class     string    `json:"class"`
	Status    string    `json:"status"` // running or done
	Published bool      `json:"published"`
	TraceID   string    `json:"trace_id,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ScanAPI is the part of the DynamoDB client FindTrace uses.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// FindTrace lists table's records of traceID (labelled with it, or keyed by it: a class whose
// idempotency key is the trace id) updated at or after since, sorted by update time then
// key and class. It scans the whole table: read units grow with the table, not the trace.
// A failed step's record is gone (Abandon deletes it, so a redrive runs the work again).
func FindTrace(ctx context.Context, api ScanAPI, table, traceID string, since time.Time) ([]Record, error) {
	in := &dynamodb.ScanInput{TableName: aws.String(table),
		FilterExpression:          aws.String("(#t = :t OR #pk = :t) AND #u >= :since"),
		ExpressionAttributeNames:  map[string]string{"#t": attrTraceID, "#pk": attrPK, "#u": attrUpdatedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s(traceID), ":since": n(since.Unix())},
	}
	var out []Record
	p := dynamodb.NewScanPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, it := range page.Items {
			r := Record{Key: str(it[attrPK]), Class: str(it[attrSK]), Status: str(it[attrStatus]),
				TraceID: str(it[attrTraceID]), UpdatedAt: time.Unix(num(it[attrUpdatedAt]), 0).UTC()}
			if b, ok := it[attrPublished].(*types.AttributeValueMemberBOOL); ok {
				r.Published = b.Value
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.Before(b.UpdatedAt)
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Class < b.Class
	})
	return out, nil
}
