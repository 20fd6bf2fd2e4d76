package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/fleetc/fleetc/compiler"
	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/lambda/sqsevent"
	"github.com/fleetc/fleetc/runtime/wire"
)

// The image's entrypoint, as Lambda runs it: this machine has no container runtime (no
// docker, podman or buildah daemon), so the entrypoint binary is taken out of the image this
// tool builds and run directly under AWS's Lambda Runtime Interface Emulator, with the
// function's image command (--mode lambda) and the environment the generated Terraform gives
// it (FLEET_CONFIG_S3 naming its config's object on kumo's S3, FLEET_QUEUE_URL, FLEET_DLQ_URL),
// against kumo's SQS. One SQS event
// through RIE's Invoke API with two records: a body that is no envelope is dead-lettered
// (MalformedMessage) and so not reported; a valid step whose idempotency table does not
// exist on kumo is released and reported in batchItemFailures.
func TestEntrypointUnderRIE(t *testing.T) {
	if os.Getenv("FLEETC_IMAGE_TEST") == "" {
		t.Skip("SKIPPED: set FLEETC_IMAGE_TEST=1 to build the image and run its entrypoint under RIE (bash .ci/run does)")
	}
	if _, err := os.Stat(CABundle); err != nil {
		t.Skipf("SKIPPED, CHECKER NOT AVAILABLE: no %s (apt-get install ca-certificates)", CABundle)
	}
	rie, err := verifytest.Tool("aws-lambda-rie")
	verifytest.SkipIfMissing(t, err)
	endpoint, err := verifytest.Kumo(context.Background())
	verifytest.SkipIfMissing(t, err)

	dir := filepath.Join(t.TempDir(), "oci")
	if err := Build(dir, "9.8.7-rie", []string{"linux/" + runtime.GOARCH}, CABundle, io.Discard); err != nil {
		t.Fatal(err)
	}
	exe := entrypoint(t, dir)

	// The class's runtime config as fleetc generates it (examples/minimal), its handler
	// /app/greet (the class image's) replaced by cat: this machine has no /app.
	res, err := compiler.Compile(compiler.Input{Path: "../../examples/minimal/fleet.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diagnostics.HasErrors() {
		t.Fatal(res.Diagnostics)
	}
	set := res.Files
	var cfg map[string]any
	for _, f := range set.Files() {
		if f.Path == "runtime/greeter.json" {
			if err := json.Unmarshal(f.Bytes, &cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg == nil {
		t.Fatal("no runtime/greeter.json in the build")
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	cfg["handler"] = map[string]any{"type": "exec", "command": []string{cat}}
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	cfg["idempotency"].(map[string]any)["table"] = "image-rie-missing-" + suffix
	cfgJSON, _ := json.Marshal(cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	acfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	sq := awsconfig.SQS(acfg)
	queue, dlq := mkQueue(ctx, t, sq, "image-rie-"+suffix), mkQueue(ctx, t, sq, "image-rie-dlq-"+suffix)

	invoke, api := freeAddr(t), freeAddr(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", invoke, "--runtime-api-address", api, exe, "--mode", "lambda")
	// The config as the generated Terraform ships it: an S3 object, named with its SHA-256.
	s3c := awsconfig.S3(acfg)
	bucket, key := "image-rie-config-"+suffix, "config/runtime/greeter.json"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(cfgJSON)}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = s3c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		_, _ = s3c.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	}()
	sum := sha256.Sum256(cfgJSON)
	ref := config.ObjectRef{Bucket: bucket, Key: key, Owner: "000000000000", SHA256: hex.EncodeToString(sum[:])}
	cmd.Env = append(os.Environ(), config.EnvConfigS3+"="+ref.String(), "FLEET_QUEUE_URL="+queue, "FLEET_DLQ_URL="+dlq,
		"FLEET_AWS_ENDPOINT="+endpoint, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"FLEET_DYNAMODB_DISABLE_CRC32=1", "FLEET_METRICS_ADDR=127.0.0.1:0", "AWS_LAMBDA_FUNCTION_TIMEOUT=30")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("RIE and fleet-worker log:\n%s", log.String())
		}
	}()

	for _, body := range []string{"not an envelope", `{"detail-type":"greeting.requested","source":"hello.app","id":"e1","detail":{"trace_id":"t-rie","name":"Ada"}}`} {
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []sqstypes.Message
	for len(msgs) < 2 && ctx.Err() == nil {
		r, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, r.Messages...)
	}
	ids := map[string]string{}
	for _, m := range msgs {
		ids[aws.ToString(m.Body)[:3]] = aws.ToString(m.MessageId)
	}
	ev, _ := json.Marshal(sqsevent.FromSQS(msgs, "arn:aws:sqs:us-east-1:000000000000:image-rie-"+suffix, "us-east-1"))

	var status int
	var resp []byte
	for deadline := time.Now().Add(time.Minute); ; {
		r, err := http.Post("http://"+invoke+"/2015-03-31/functions/function/invocations", "application/json", bytes.NewReader(ev))
		if err == nil {
			resp, _ = io.ReadAll(r.Body)
			r.Body.Close()
			status = r.StatusCode
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RIE's Invoke API never answered: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var out sqsevent.Response
	if status != 200 || json.Unmarshal(resp, &out) != nil {
		t.Fatalf("invoke: %d %s", status, resp)
	}
	if len(out.BatchItemFailures) != 1 || out.BatchItemFailures[0].ItemIdentifier != ids[`{"d`] {
		t.Errorf("batchItemFailures = %+v, want only the valid step %s (its idempotency table is missing)", out.BatchItemFailures, ids[`{"d`])
	}
	r, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 || aws.ToString(r.Messages[0].MessageAttributes["ERROR_CODE"].StringValue) != string(wire.MalformedMessage) {
		t.Errorf("DLQ holds %d message(s) %+v, want the malformed body with ERROR_CODE %s", len(r.Messages), r.Messages, wire.MalformedMessage)
	}
	if !strings.Contains(log.String(), "START RequestId") {
		t.Errorf("RIE ran no invocation:\n%s", log.String())
	}
}

// entrypoint writes the image's entrypoint file (the host platform's) to a temp file.
func entrypoint(t *testing.T, dir string) string {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index: %v %v", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil || len(cf.Config.Entrypoint) != 1 {
		t.Fatalf("image config: %+v %v", cf, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in the image's layer: %v", cf.Config.Entrypoint[0], err)
		}
		if "/"+h.Name != cf.Config.Entrypoint[0] {
			continue
		}
		exe := filepath.Join(t.TempDir(), "entrypoint")
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return exe
	}
}

func mkQueue(ctx context.Context, t *testing.T, sq *sqs.Client, name string) string {
	t.Helper()
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	return aws.ToString(q.QueueUrl)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
