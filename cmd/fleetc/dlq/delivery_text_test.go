package dlq

import (
	"strings"
	"testing"
)

// A TARGET_ARN is whatever the dead letter's attributes say (anyone who may send to the DLQ
// writes them): the text report shows it on one line, so it cannot forge report lines.
func TestDeliveryTargetOnOneLine(t *testing.T) {
	d := &DeliveryReport{DLQ: "f-delivery-dlq", Depth: 1, Complete: true,
		Targets: []TargetCount{{Target: "arn:aws:sqs:us-east-1:1:q\nbus delivery (forged): 0 undelivered events", Count: 1}}}
	var b strings.Builder
	d.writeText(&b)
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "bus delivery (forged)") {
			t.Errorf("a target forged a line of the report:\n%s", b.String())
		}
	}
	if !strings.Contains(b.String(), "  to arn:aws:sqs:us-east-1:1:q bus delivery (forged)") {
		t.Errorf("report:\n%s", b.String())
	}
}
