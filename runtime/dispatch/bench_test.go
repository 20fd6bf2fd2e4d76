package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockagentcore"

	"github.com/fleetc/fleetc/runtime/dispatch"
	"github.com/fleetc/fleetc/runtime/queue"
	"github.com/fleetc/fleetc/runtime/wire"
)

// BenchmarkDispatch measures the dispatcher's own cost per message: parse, session id, a
// signed InvokeAgentRuntime call over loopback HTTP to a server that answers "done" at once,
// and reading the envelope. The SQS side is left out (see the worker's StepOverhead).
func BenchmarkDispatch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", wire.OutcomeMediaType)
		w.Write([]byte(`{"format":"fleetc.outcome/1","outcome":"done","output":{"answer":"ok"}}`))
	}))
	defer srv.Close()
	client := bedrockagentcore.New(bedrockagentcore.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1})
	d := &dispatch.Dispatcher{API: client, RuntimeARN: testARN, Class: "deep", SessionField: "conversation_id", SyncLimit: 60e9, Hold: 60e9}
	m := &queue.Message{ID: "m-1", Body: event("t-bench", "conv-1"), ReceiveCount: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if out := d.ProcessMessage(context.Background(), m); out.Action != queue.Delete {
			b.Fatalf("outcome %+v", out)
		}
	}
}
