package tools

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// PutEventsAPI is the part of the EventBridge client EventBridge uses.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// EventBridge publishes request events on the fleet's bus, one entry per call: a start is
// one job, and its entry's refusal must be the start's answer.
type EventBridge struct {
	API PutEventsAPI
	Bus string
}

// Publish sends one event; a refused entry (FailedEntryCount) is an error with its code.
func (e *EventBridge) Publish(ctx context.Context, detailType, source string, detail []byte) error {
	out, err := e.API.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(e.Bus), DetailType: aws.String(detailType), Source: aws.String(source), Detail: aws.String(string(detail)),
	}}})
	if err != nil {
		return fmt.Errorf("PutEvents: %w", err)
	}
	if out.FailedEntryCount > 0 {
		code, msg := "", ""
		if len(out.Entries) > 0 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return fmt.Errorf("PutEvents refused the entry: %s %s", code, msg)
	}
	return nil
}
