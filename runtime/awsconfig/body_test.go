package awsconfig

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type recordingClient struct{ body io.ReadCloser }

func (r *recordingClient) Do(req *http.Request) (*http.Response, error) {
	r.body = req.Body
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

// The wrapper must hide io.WriterTo (aws-sdk-go-v2#1825/#2737) but keep
// the bytes and Close.
func TestClosedBodySafeHidesWriterTo(t *testing.T) {
	rec := &recordingClient{}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/", io.NopCloser(strings.NewReader("payload")))
	if _, ok := req.Body.(io.WriterTo); !ok {
		t.Fatal("test precondition: NopCloser over a strings.Reader implements WriterTo")
	}
	if _, err := (closedBodySafe{next: rec}).Do(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.body.(io.WriterTo); ok {
		t.Fatal("body still exposes io.WriterTo")
	}
	b, _ := io.ReadAll(rec.body)
	if string(b) != "payload" {
		t.Fatalf("body = %q", b)
	}
	noBody, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
	if _, err := (closedBodySafe{next: rec}).Do(noBody); err != nil || rec.body != nil {
		t.Fatalf("nil body must pass through unchanged (got %v, %v)", rec.body, err)
	}
}

// Load installs the wrapper with or without a counter.
func TestLoadAlwaysInstallsClosedBodySafe(t *testing.T) {
	cfg, err := Load(context.Background(), Options{Region: "us-east-1", Endpoint: "http://127.0.0.1:1", Credentials: testCreds})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.HTTPClient.(closedBodySafe); !ok {
		t.Fatalf("HTTPClient is %T, want closedBodySafe", cfg.HTTPClient)
	}
	cfg, err = Load(context.Background(), Options{Region: "us-east-1", Endpoint: "http://127.0.0.1:1", Credentials: testCreds, Counter: NewRequestCounter()})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := cfg.HTTPClient.(doer)
	if !ok {
		t.Fatalf("HTTPClient is %T, want the counter", cfg.HTTPClient)
	}
	if _, ok := d.next.(closedBodySafe); !ok {
		t.Fatalf("counter wraps %T, want closedBodySafe", d.next)
	}
}

// A connection that never answers fails the call at ResponseHeaderTimeout
// instead of hanging (and with it every heartbeat queued behind it).
func TestResponseHeaderTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	cfg, err := Load(context.Background(), Options{Region: "us-east-1", Endpoint: srv.URL, Credentials: testCreds, ResponseHeaderTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = SQS(cfg).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("err %v after %v, want a timeout near 200 ms", err, time.Since(start))
	}
}
