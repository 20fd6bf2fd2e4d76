package awsconfig_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/queue"
)

// Regression for aws-sdk-go-v2#1825/#2737: a worker-shaped load (10-message
// long-poll receives of sizeable bodies, a conditional DynamoDB put and an
// update per message, batched deletes, 10 in flight) with SDK retries off
// must see no failed call. Without closedBodySafe a receive intermittently
// failed with "use of closed network connection" and stalled ~30 s.
func TestWorkerLoadNoClosedConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("kumo load test")
	}
	cfg := kumotest.RequireWith(t, awsconfig.Options{Counter: awsconfig.NewRequestCounter()})
	sqsc := awsconfig.SQS(cfg)
	ddb := kumotest.DynamoDB(cfg)
	_, url := kumotest.Queue(t, cfg, "bodyfix", false, map[string]string{"VisibilityTimeout": "30"})
	table := kumotest.Table(t, cfg, "bodyfix")
	ctx := context.Background()
	const total = 1500
	body := strings.Repeat("x", 4<<10)
	for i := 0; i < total; i += 10 {
		entries := make([]types.SendMessageBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body)}
		}
		if _, err := sqsc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	var stepErrs []error
	errc := make(chan error, total)
	c, err := queue.New(sqsc, queue.Options{QueueURL: url, MaxMessages: 10, WaitTime: time.Second, VisibilityTimeout: 30 * time.Second,
		Concurrency: 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		func(ctx context.Context, m *queue.Message) queue.Outcome {
			key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: m.ID}, "sk": &ddbtypes.AttributeValueMemberS{Value: "r"}}
			item := map[string]ddbtypes.AttributeValue{"pk": key["pk"], "sk": key["sk"], "status": &ddbtypes.AttributeValueMemberS{Value: "running"}}
			if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}); err != nil {
				errc <- fmt.Errorf("put: %w", err)
				return queue.Outcome{Action: queue.Release}
			}
			if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key, UpdateExpression: aws.String("SET #s = :d"),
				ExpressionAttributeNames:  map[string]string{"#s": "status"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":d": &ddbtypes.AttributeValueMemberS{Value: "done"}}}); err != nil {
				errc <- fmt.Errorf("update: %w", err)
				return queue.Outcome{Action: queue.Release}
			}
			return queue.Outcome{Action: queue.Delete}
		})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Second)
	for c.Stats.Deleted.Load() < total && time.Now().Before(deadline) && c.Stats.ReceiveErrors.Load() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	close(errc)
	for err := range errc {
		stepErrs = append(stepErrs, err)
	}
	if n := c.Stats.ReceiveErrors.Load(); n != 0 {
		t.Errorf("%d failed receives", n)
	}
	if len(stepErrs) > 0 {
		t.Errorf("%d failed DynamoDB calls, first: %v", len(stepErrs), stepErrs[0])
	}
	if got := c.Stats.Deleted.Load(); got != total {
		t.Errorf("deleted %d of %d (delete failures %d)", got, total, c.Stats.DeleteFailed.Load())
	}
}
