package dlq

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fleetc/fleetc/runtime/queue"
)

// sendRecorder records the one call send makes (the rest of API is not called).
type sendRecorder struct {
	API
	in *sqs.SendMessageInput
}

func (r *sendRecorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.in = in
	return &sqs.SendMessageOutput{MessageId: aws.String("m-1")}, nil
}

// A letter that was a fairness deferral's copy goes back without the counts it carried: a
// redriven message starts a fresh receive budget and age (runtime/queue/fair.go), while the
// producer's own attributes stay.
func TestSendDropsCarriedDeferralCounts(t *testing.T) {
	str := func(s string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
	}
	l := Letter{ID: "d-1", Body: `{"trace_id":"t-1"}`, Attributes: map[string]types.MessageAttributeValue{
		queue.AttrPriorReceives: str("2"), queue.AttrDeferrals: str("5"), queue.AttrFirstSent: str("1700000000000"),
		"traceparent": str("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
	}}
	rec := &sendRecorder{}
	if _, err := send(context.Background(), rec, &Target{QueueURL: "http://q"}, l, str("s-1")); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{queue.AttrPriorReceives, queue.AttrDeferrals, queue.AttrFirstSent} {
		if _, ok := rec.in.MessageAttributes[a]; ok {
			t.Errorf("redriven message carries %s", a)
		}
	}
	if _, ok := rec.in.MessageAttributes["traceparent"]; !ok {
		t.Error("the producer's traceparent was dropped")
	}
}
