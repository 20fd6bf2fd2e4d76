package events

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// fakeBus is an httptest EventBridge that records every PutEvents request
// body and answers per entry with the code chosen by fail (nil = all OK).
// kumo cannot produce partial failures or throttling, so those paths are
// tested here, against the exact JSON the SDK puts on the wire.
type fakeBus struct {
	mu       sync.Mutex
	bodies   []string
	status   []int // per request status override (consumed in order); 0 = 200
	fail     func(req, idx int, detail string) string
	requests int
}

type wireEntry struct {
	Detail       string
	DetailType   string
	EventBusName string
	Source       string
	Resources    []string
	Time         float64
	TraceHeader  string
}

func (f *fakeBus) handler(t testing.TB) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
			t.Errorf("X-Amz-Target = %q", got)
		}
		f.mu.Lock()
		req := f.requests
		f.requests++
		f.bodies = append(f.bodies, string(body))
		status := 0
		if len(f.status) > 0 {
			status, f.status = f.status[0], f.status[1:]
		}
		fail := f.fail
		f.mu.Unlock()

		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if status != 0 && status != 200 {
			w.WriteHeader(status)
			code := "InternalException"
			if status == 400 {
				code = "ValidationException"
			}
			_, _ = w.Write([]byte(`{"__type":"` + code + `","message":"injected"}`))
			return
		}
		var in struct{ Entries []wireEntry }
		if err := json.Unmarshal(body, &in); err != nil {
			t.Errorf("request body %q: %v", body, err)
		}
		type result struct {
			EventId      string `json:",omitempty"`
			ErrorCode    string `json:",omitempty"`
			ErrorMessage string `json:",omitempty"`
		}
		out := struct {
			FailedEntryCount int
			Entries          []result
		}{}
		for i, e := range in.Entries {
			code := ""
			if fail != nil {
				code = fail(req, i, e.Detail)
			}
			if code != "" {
				out.FailedEntryCount++
				out.Entries = append(out.Entries, result{ErrorCode: code, ErrorMessage: "injected " + code})
			} else {
				out.Entries = append(out.Entries, result{EventId: "ev"})
			}
		}
		b, _ := json.Marshal(out)
		_, _ = w.Write(b)
	})
}

func (f *fakeBus) requestEntries(t testing.TB) [][]wireEntry {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]wireEntry
	for _, b := range f.bodies {
		var in struct{ Entries []wireEntry }
		if err := json.Unmarshal([]byte(b), &in); err != nil {
			t.Fatal(err)
		}
		out = append(out, in.Entries)
	}
	return out
}

// newFake returns a fake bus and an EventBridge client aimed at it.
func newFake(t testing.TB) (*fakeBus, *eventbridge.Client, *awsconfig.RequestCounter) {
	t.Helper()
	f := &fakeBus{}
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	counter := awsconfig.NewRequestCounter()
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{
		Region: "us-east-1", Endpoint: srv.URL, Counter: counter,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, awsconfig.EventBridge(cfg), counter
}
