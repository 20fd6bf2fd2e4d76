// Package sqsevent is the JSON an SQS event source mapping exchanges with a Lambda function
// that reports batch item failures: the event it delivers and the partial batch response it
// reads. runtime/lambda serves it and fleetc dev's event source mapping sends it; this leaf
// keeps the worker runtime out of fleetc.
package sqsevent

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Event is the SQS event an event source mapping delivers.
type Event struct {
	Records []Record `json:"Records"`
}

// Record is one SQS message in an Event.
type Record struct {
	MessageID         string                      `json:"messageId"`
	ReceiptHandle     string                      `json:"receiptHandle"`
	Body              string                      `json:"body"`
	Attributes        map[string]string           `json:"attributes"`
	MessageAttributes map[string]MessageAttribute `json:"messageAttributes"`
	EventSource       string                      `json:"eventSource"`
	EventSourceARN    string                      `json:"eventSourceARN"`
	AWSRegion         string                      `json:"awsRegion"`
}

// MessageAttribute is the ESM's rendering of an SQS message attribute.
type MessageAttribute struct {
	StringValue *string `json:"stringValue,omitempty"`
	BinaryValue []byte  `json:"binaryValue,omitempty"`
	DataType    string  `json:"dataType"`
}

// Response is the partial batch response.
type Response struct {
	BatchItemFailures []ItemFailure `json:"batchItemFailures"`
}

// ItemFailure names one message to retry.
type ItemFailure struct {
	ItemIdentifier string `json:"itemIdentifier"`
}

// FromSQS renders SDK messages as the ESM would (tests and tools).
func FromSQS(msgs []types.Message, arn, region string) Event {
	ev := Event{Records: make([]Record, len(msgs))}
	for i, m := range msgs {
		ma := map[string]MessageAttribute{}
		for k, v := range m.MessageAttributes {
			ma[k] = MessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
		}
		ev.Records[i] = Record{MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Attributes: m.Attributes, MessageAttributes: ma, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: region}
	}
	return ev
}
