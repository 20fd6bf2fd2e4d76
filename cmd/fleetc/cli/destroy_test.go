package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fleetc/fleetc/internal/verifytest"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// TestDestroyEmptiesBucketsOnKumo applies the e2e fleet on kumo with the real terraform CLI,
// leaves objects (two versions, a delete marker) in its claim-check bucket as a workflow's
// Map result writer does, and destroys: without --allow-data-loss the guard still refuses
// and the objects stay; with it the bucket is emptied and destroyed, where terraform alone
// stopped at BucketNotEmpty.
func TestDestroyEmptiesBucketsOnKumo(t *testing.T) {
	t.Parallel() // an emulator loop: see emulatorParallel
	if testing.Short() {
		t.Skip("terraform apply against kumo takes minutes")
	}
	terraformEnv(t)
	ctx := context.Background()
	endpoint, err := verifytest.Kumo(ctx)
	verifytest.SkipIfMissing(t, err)
	dir := t.TempDir()
	spec, name := uniqueSpec(t, dir, nil)
	common := []string{"-o", dir + "/out", "--endpoint", endpoint}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			runCLI(t, "", append([]string{"destroy", spec, "--auto-approve", "--allow-data-loss"}, common...)...)
		}
	})
	if code, stdout, stderr := runCLI(t, "", append([]string{"apply", spec, "--auto-approve"}, common...)...); code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}

	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.S3(cfg)
	bucket := fleetBucket(t, c, name)
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"results/map/0.json", "results/map/0.json", "results/map/manifest.json"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("results/map/manifest.json")}); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runCLI(t, "", append([]string{"destroy", spec, "--auto-approve"}, common...)...)
	if code != exitInvalid || !strings.Contains(stderr, "refusing") || !strings.Contains(stderr, "--allow-replace aws_s3_bucket.claimcheck") {
		t.Fatalf("destroy without --allow-data-loss: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if v, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}); err != nil || len(v.Versions) != 3 || len(v.DeleteMarkers) != 1 {
		t.Fatalf("a refused destroy touched the bucket: %v %+v", err, v)
	}

	code, stdout, stderr = runCLI(t, "", append([]string{"destroy", spec, "--auto-approve", "--allow-data-loss"}, common...)...)
	if code != exitOK || !strings.Contains(stdout, "aws_s3_bucket.claimcheck: emptied bucket "+bucket+" (4 object versions and delete markers)") {
		t.Fatalf("destroy --allow-data-loss: exit %d\n%s\n%s", code, stdout, stderr)
	}
	destroyed = true
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Errorf("bucket %s still exists after destroy", bucket)
	}
}

// fleetBucket is the one bucket on kumo whose name holds the fleet's unique name.
func fleetBucket(t *testing.T, c *s3.Client, name string) string {
	t.Helper()
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, b := range out.Buckets {
		if strings.Contains(aws.ToString(b.Name), name) {
			found = append(found, aws.ToString(b.Name))
		}
	}
	if len(found) != 1 {
		t.Fatalf("buckets of fleet %s on kumo: %v, want one", name, found)
	}
	return found[0]
}
