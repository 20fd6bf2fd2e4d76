package kumotest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
)

func TestName(t *testing.T) {
	a, b := Name(t, "Q"), Name(t, "Q")
	if a == b {
		t.Fatalf("names not unique: %s", a)
	}
	if !strings.HasPrefix(a, "q-testname-") || len(a) > 63 {
		t.Fatalf("bad name %q", a)
	}
	long := Name(t, strings.Repeat("x", 100))
	if len(long) != 63 {
		t.Fatalf("long name len %d: %s", len(long), long)
	}
}

func TestKumoResources(t *testing.T) {
	counter := awsconfig.NewRequestCounter()
	cfg := RequireWith(t, awsconfig.Options{Counter: counter})
	ctx := context.Background()

	name, url := Queue(t, cfg, "kt", true, nil)
	if !strings.HasSuffix(name, ".fifo") || !strings.Contains(url, name) {
		t.Fatalf("queue %s url %s", name, url)
	}
	attrs, err := awsconfig.SQS(cfg).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes["QueueArn"]; got != QueueARN(name) {
		t.Fatalf("QueueArn = %q, want %q", got, QueueARN(name))
	}

	bucket := Bucket(t, cfg, "kt")
	if _, err := awsconfig.S3(cfg).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}

	table := Table(t, cfg, "kt")
	desc, err := DynamoDB(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Table.KeySchema) != 2 {
		t.Fatalf("key schema %v", desc.Table.KeySchema)
	}
	for _, svc := range []string{"sqs", "s3", "dynamodb"} {
		if counter.Count(svc) == 0 {
			t.Errorf("no %s requests counted: %v", svc, counter.Snapshot())
		}
	}
}
