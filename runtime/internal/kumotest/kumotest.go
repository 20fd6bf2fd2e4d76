// Package kumotest connects runtime tests to kumo, the local AWS emulator
// (github.com/sivchari/kumo v0.33.1), on 127.0.0.1:4566.
//
// Require returns an aws.Config aimed at kumo. If kumo is not answering
// GET /health it starts the binary at $FLEETC_KUMO or <repo>/bin/kumo once
// (detached, left running for later test processes; a parallel process
// that loses the race for the port simply waits for health), and skips the
// test when no binary exists. kumo must listen on 127.0.0.1:4566 because
// its Step Functions and EventBridge integrations call themselves there.
//
// Names from Name/Queue/Bucket/Table are unique per test and process, so
// tests can share one kumo instance and run in parallel.
//
// Known kumo gaps tests must not rely on: some FIFO system attributes are
// missing, a missing queue is reported only as an error code string, and
// DynamoDB responses carry no CRC32 header (use DynamoDB, which disables
// validation).
package kumotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/schemas/jobs"
)

const (
	// Addr is where kumo must listen.
	Addr = "127.0.0.1:4566"
	// Endpoint is the base endpoint for every client.
	Endpoint = "http://" + Addr
	// Region is the region tests use.
	Region = "us-east-1"
	// Account is kumo's fixed account id (used in ARNs and queue URLs).
	Account = "000000000000"
	// EnvBinary names an explicit kumo binary.
	EnvBinary = "FLEETC_KUMO"
)

var (
	startOnce sync.Once
	startErr  error
)

// Healthy reports whether kumo answers GET /health on Addr.
func Healthy() bool {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get(Endpoint + "/health")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Require returns an aws.Config for kumo (SDK retries off, dummy static
// credentials), starting kumo if needed, or skips the test.
func Require(t testing.TB) aws.Config {
	t.Helper()
	return RequireWith(t, awsconfig.Options{})
}

// RequireWith is Require with extra awsconfig options (e.g. a Counter);
// Region, Endpoint and Credentials are always kumo's.
func RequireWith(t testing.TB, o awsconfig.Options) aws.Config {
	t.Helper()
	startOnce.Do(func() { startErr = ensure() })
	if startErr != nil {
		t.Skipf("kumo not available: %v. Start it with `bin/kumo serve --host 127.0.0.1 --port 4566` "+
			"(build: cd tools/kumo && go build -o ../../bin/kumo github.com/sivchari/kumo/cmd/kumo) or set %s", startErr, EnvBinary)
	}
	o.Region = Region
	o.Endpoint = Endpoint
	o.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatalf("kumotest: %v", err)
	}
	return cfg
}

// ensure makes kumo healthy or explains why it cannot.
func ensure() error {
	if Healthy() {
		return nil
	}
	bin := findBinary()
	if bin == "" {
		return fmt.Errorf("nothing answers %s/health and no kumo binary at $%s or <repo>/bin/kumo", Endpoint, EnvBinary)
	}
	logPath := filepath.Join(os.TempDir(), "fleetc-kumo.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", "--host", "127.0.0.1", "--port", "4566")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: kumo outlives this test process and is shared by
	// later ones; a Ctrl-C on `go test` must not take it down mid-run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	// Reap it if it exits (e.g. a parallel process won the port race).
	go func() { _ = cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if Healthy() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("started %s but %s/health did not answer within 20s (log: %s)", bin, Endpoint, logPath)
}

// findBinary returns $FLEETC_KUMO, else bin/kumo in the nearest ancestor
// directory holding go.mod, else "".
func findBinary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		if isExec(p) {
			return p
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if p := filepath.Join(dir, "bin", "kumo"); isExec(p) {
				return p
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a unique, AWS-safe lower-case name: prefix, a slug of the
// test name, and 8 random hex chars, at most 63 characters (the S3 bucket
// limit; SQS allows 80, DynamoDB 255).
func Name(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	slug := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	name := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(prefix), "-"), "-")
	if slug != "" {
		name += "-" + slug
	}
	if limit := 63 - len(suffix) - 1; len(name) > limit {
		name = strings.TrimRight(name[:limit], "-")
	}
	return name + "-" + suffix
}

// Queue creates a unique queue (".fifo" suffixed with FIFO attributes when
// fifo) and returns its name and URL; it is deleted at test end.
func Queue(t testing.TB, cfg aws.Config, prefix string, fifo bool, attrs map[string]string) (name, url string) {
	t.Helper()
	name = Name(t, prefix)
	all := map[string]string{}
	for k, v := range attrs {
		all[k] = v
	}
	if fifo {
		if len(name) > 75 {
			name = name[:75]
		}
		name += ".fifo"
		all[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
	}
	c := awsconfig.SQS(cfg)
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		t.Fatalf("kumotest: create queue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	return name, url
}

// QueueARN returns the ARN kumo assigns to the queue called name.
func QueueARN(name string) string {
	return "arn:aws:sqs:" + Region + ":" + Account + ":" + name
}

// Bucket creates a unique S3 bucket and returns its name; objects and the
// bucket are removed at test end.
func Bucket(t testing.TB, cfg aws.Config, prefix string) string {
	t.Helper()
	name := Name(t, prefix)
	c := awsconfig.S3(cfg)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("kumotest: create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		if err == nil {
			for _, o := range out.Contents {
				_, _ = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			}
		}
		_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// DynamoDB returns a DynamoDB client for kumo (CRC32 validation off).
func DynamoDB(cfg aws.Config) *dynamodb.Client {
	return awsconfig.DynamoDB(cfg, awsconfig.WithoutCRC32)
}

// Table creates a unique on-demand table with the idempotency table's key
// schema (pk S hash, sk S range) and returns its name; deleted at test end.
func Table(t testing.TB, cfg aws.Config, prefix string) string {
	t.Helper()
	name := Name(t, prefix)
	c := DynamoDB(cfg)
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("kumotest: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// JobsTable creates a unique async-tools jobs table as compiler/terraform declares it (hash
// pk, the by-owner index on owner + createdAt) and returns its name; deleted at test end.
func JobsTable(t testing.TB, cfg aws.Config) string {
	t.Helper()
	name := Name(t, "jobs")
	c := DynamoDB(cfg)
	s := aws.String
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: s(name), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: s(jobs.AttrPK), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: s(jobs.AttrOwner), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: s(jobs.AttrCreatedAt), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: s(jobs.AttrPK), KeyType: ddbtypes.KeyTypeHash}},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName: s(jobs.OwnerIndex),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: s(jobs.AttrOwner), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: s(jobs.AttrCreatedAt), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatalf("kumotest: create jobs table %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: s(name)})
	})
	return name
}
