package lambda

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/idem"
	"github.com/fleetc/fleetc/runtime/internal/kumotest"
	"github.com/fleetc/fleetc/runtime/retry"
	"github.com/fleetc/fleetc/runtime/worker"
)

// invokePayload is what compiler/asl's lambda:invoke task sends for a synchronous step in an
// Express execution: the Step Functions task shape without a TaskToken.
var enteredTime = time.Now().UTC().Format(time.RFC3339)

func invokePayload(traceID string) []byte {
	return []byte(`{"execution_id":"arn:aws:states:us-east-1:111122223333:express:fx-flow:run-1:x","state":"Worker",` +
		`"trace_id":"` + traceID + `","detail":{"trace_id":"` + traceID + `","q":"why"},` +
		`"entered_time":"` + enteredTime + `","timeout_seconds":300}`)
}

// TestDirectInvocation: a synchronous invoke answers with the handler result through the
// runtime API's /response; a repeat of the same task (a Step Functions retry) is answered from
// the idempotency record without running the handler again; failures are function errors
// whose errorType says whether a retry can help.
func TestDirectInvocation(t *testing.T) {
	awsCfg := kumotest.Require(t)
	table := kumotest.Table(t, awsCfg, "invidem")
	cfg := testConfig(t, "q", "d", table, false)
	var runs atomic.Int32
	h := handler.Func(func(_ context.Context, req handler.Request) (json.RawMessage, error) {
		runs.Add(1)
		switch {
		case strings.HasPrefix(req.Key, "busy"):
			return nil, retry.FromStatus(503, "", "")
		case strings.HasPrefix(req.Key, "bad"):
			return nil, retry.FromStatus(400, "", "bad request")
		}
		return json.RawMessage(`{"answer":42}`), nil
	})
	w := &worker.Worker{Cfg: cfg, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Idem: &idem.Dynamo{API: kumotest.DynamoDB(awsCfg), Table: table, Class: cfg.Class, Window: time.Hour}}

	// Through the runtime API loop: two invocations of the same task.
	type answer struct{ path, body string }
	answers := make(chan answer, 4)
	var served atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next" {
			n := served.Add(1)
			if n > 2 {
				<-r.Context().Done()
				return
			}
			rw.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-"+strconv.Itoa(int(n)))
			rw.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
			rw.Write(invokePayload("ok-" + t.Name()))
			return
		}
		b, _ := io.ReadAll(r.Body)
		answers <- answer{r.URL.Path, string(b)}
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer api.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Loop{API: strings.TrimPrefix(api.URL, "http://"), Handler: &Handler{Worker: w, SQS: nopSQS{}}}).Run(ctx)
	}()
	for i := 1; i <= 2; i++ {
		select {
		case a := <-answers:
			if a.path != "/2018-06-01/runtime/invocation/req-"+strconv.Itoa(i)+"/response" || a.body != `{"answer":42}` {
				t.Errorf("invocation %d answered %s %s, want the handler result on /response", i, a.path, a.body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no answer from the loop")
		}
	}
	cancel()
	<-done
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times for one task invoked twice; the retry must be answered from the record", n)
	}

	for key, wantType := range map[string]string{"busy-" + t.Name(): ErrorRetry, "bad-" + t.Name(): "FleetWorker."} {
		out, ierr := (&Handler{Worker: w, SQS: nopSQS{}}).Invoke(context.Background(), "req-"+key, invokePayload(key), time.Now().Add(time.Minute))
		if ierr == nil || out != nil {
			t.Errorf("%s: answered %s, want a function error", key, out)
			continue
		}
		if !strings.HasPrefix(ierr.Type, wantType) || (wantType != ErrorRetry && ierr.Type == ErrorRetry) || ierr.Message == "" {
			t.Errorf("%s: error %+v, want type %s…", key, ierr, wantType)
		}
	}
}
