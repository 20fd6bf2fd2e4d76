package awsconfig

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

// RequestCounter counts HTTP attempts per AWS service (and operation), so
// benchmarks can report API requests per step and telemetry can export
// aws_api_requests_total. Every attempt counts, retries included, because
// every attempt is billed. Safe for concurrent use.
//
// Service names are lower-case SDK service IDs: "sqs", "dynamodb", "s3",
// "sfn", "eventbridge".
type RequestCounter struct {
	mu     sync.Mutex
	counts map[key]*atomic.Int64
	// OnRequest, when set before use, is called once per attempt (after
	// counting) with the service and operation name, e.g. to increment a
	// Prometheus counter. It must be cheap and non-blocking.
	OnRequest func(service, operation string)
}

type key struct{ service, operation string }

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[key]*atomic.Int64{}}
}

// Wrap returns an http.RoundTripper that counts each request then
// delegates to next (http.DefaultTransport when nil).
func (c *RequestCounter) Wrap(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{c: c, next: next}
}

// HTTPClient is the SDK's HTTP client interface (aws.HTTPClient).
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// WrapClient returns an SDK HTTP client that counts each request then
// delegates to next. Load uses it so that the SDK's own BuildableClient
// (and its AWS_CA_BUNDLE handling) stays underneath.
func (c *RequestCounter) WrapClient(next HTTPClient) HTTPClient {
	if next == nil {
		next = http.DefaultClient
	}
	return doer{c: c, next: next}
}

type doer struct {
	c    *RequestCounter
	next HTTPClient
}

func (d doer) Do(req *http.Request) (*http.Response, error) {
	svc, op := identify(req)
	d.c.add(svc, op)
	return d.next.Do(req)
}

type roundTripper struct {
	c    *RequestCounter
	next http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	svc, op := identify(req)
	rt.c.add(svc, op)
	return rt.next.RoundTrip(req)
}

// identify names the service and operation of an SDK request: from the
// SDK's middleware metadata on the request context, else from the SigV4
// credential scope in the Authorization header, else "unknown".
func identify(req *http.Request) (service, operation string) {
	ctx := req.Context()
	service = awsmiddleware.GetServiceID(ctx)
	operation = awsmiddleware.GetOperationName(ctx)
	if service == "" {
		service = signingName(req.Header.Get("Authorization"))
	}
	if service == "" {
		service = "unknown"
	}
	return normalize(service), operation
}

// signingName extracts "sqs" from "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sqs/aws4_request, ...".
func signingName(auth string) string {
	if scope := credentialScope(auth); scope != nil {
		return scope[3]
	}
	return ""
}

// credentialScope is the SigV4 credential of an Authorization header split at its slashes:
// access key id, date, region, service, "aws4_request"; nil when the header has none.
func credentialScope(auth string) []string {
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return nil
	}
	cred, _, _ := strings.Cut(rest, ",")
	if parts := strings.Split(cred, "/"); len(parts) >= 5 {
		return parts
	}
	return nil
}

// normalize maps SDK service IDs ("SQS", "DynamoDB", "EventBridge", "SFN")
// and signing names ("states", "events") to one lower-case label.
func normalize(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, " ", ""))
	switch s {
	case "states":
		return "sfn"
	case "events":
		return "eventbridge"
	}
	return s
}

func (c *RequestCounter) add(service, operation string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[key]*atomic.Int64{}
	}
	n, ok := c.counts[key{service, operation}]
	if !ok {
		n = new(atomic.Int64)
		c.counts[key{service, operation}] = n
	}
	c.mu.Unlock()
	n.Add(1)
	if c.OnRequest != nil {
		c.OnRequest(service, operation)
	}
}

// Count returns the requests made to service (all operations).
func (c *RequestCounter) Count(service string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for k, n := range c.counts {
		if k.service == service {
			total += n.Load()
		}
	}
	return total
}

// CountOperation returns the requests made to one operation, e.g.
// ("eventbridge", "PutEvents").
func (c *RequestCounter) CountOperation(service, operation string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.counts[key{service, operation}]; ok {
		return n.Load()
	}
	return 0
}

// Total returns the requests made to all services.
func (c *RequestCounter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, n := range c.counts {
		total += n.Load()
	}
	return total
}

// Snapshot returns per-service totals, with Services() giving a sorted
// key order for deterministic reporting.
func (c *RequestCounter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, n := range c.counts {
		out[k.service] += n.Load()
	}
	return out
}

// Services returns the services seen so far, sorted.
func (c *RequestCounter) Services() []string {
	snap := c.Snapshot()
	out := slices.Sorted(maps.Keys(snap))
	return out
}

// Reset zeroes all counts (e.g. after benchmark setup).
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	c.counts = map[key]*atomic.Int64{}
	c.mu.Unlock()
}
