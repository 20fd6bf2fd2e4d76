package terraform

import (
	"fmt"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
)

func (g *gen) bus() {
	f := g.f
	fl := g.file("bus.tf").owner(PartBus, "/bus")
	g.claim("aws_cloudwatch_event_bus", "fleet", f.Bus.Path)
	b := fl.resource("aws_cloudwatch_event_bus", "fleet")
	b.set("name", str(f.Bus.Name))

	if ar := f.Bus.Archive; ar != nil {
		g.claim("aws_cloudwatch_event_archive", "fleet", ar.Path)
		a := fl.resource("aws_cloudwatch_event_archive", "fleet",
			"Replay re-delivers to every rule: the idempotency table is what makes it safe.")
		a.set("name", str(ar.Name))
		a.set("event_source_arn", ref("aws_cloudwatch_event_bus", "fleet", "arn"))
		if ar.Retention > 0 {
			days := (ar.Retention + 24*time.Hour - 1) / (24 * time.Hour)
			a.set("retention_days", num(int64(days)))
		}
	}

	// The rule-target DLQ: one standard queue per fleet (EventBridge refuses FIFO target DLQs).
	q := f.TargetDLQ
	g.claim("aws_sqs_queue", "delivery_dlq", q.Path)
	r := fl.resource("aws_sqs_queue", "delivery_dlq",
		"Events EventBridge could not deliver to a class queue, with ERROR_CODE and RULE_ARN attributes.")
	r.set("name", str(q.Name))
	r.set("message_retention_seconds", seconds(q.Retention))
	r.set("visibility_timeout_seconds", seconds(q.Visibility))
	g.encryptQueue(r)

	var rules []tokens
	var ingress []tokens
	for _, a := range f.Agents {
		if a.Rule == nil {
			continue
		}
		rules = append(rules, ref("aws_cloudwatch_event_rule", local(a.Name), "arn"))
		if a.FIFO {
			ingress = append(ingress, ref("aws_sqs_queue", local(a.Name)+"_ingress", "arn"))
		}
	}
	if len(rules) > 0 {
		doc := g.policyDoc(fl, "delivery_dlq", q.Path, []stmt{{
			sid: "RuleTargetDeadLetters", actions: []string{"sqs:SendMessage"},
			resources:  []tokens{ref("aws_sqs_queue", "delivery_dlq", "arn")},
			principal:  &principal{typ: "Service", ids: []string{"events.amazonaws.com"}},
			conditions: []condition{{"ArnEquals", "aws:SourceArn", rules}},
		}}, "Only this fleet's rules may dead-letter here; without the grant delivery fails silently.")
		g.claim("aws_sqs_queue_policy", "delivery_dlq", q.Path)
		p := fl.resource("aws_sqs_queue_policy", "delivery_dlq")
		p.set("queue_url", ref("aws_sqs_queue", "delivery_dlq", "url"))
		p.set("policy", doc)
	}
	switch {
	case len(ingress) > 10:
		d := g.ds.Warnf("TF003", "/agents", "%d FIFO classes redrive their ingress queues into %s; a redrive allow policy names at most 10 source queues", len(ingress), q.Name)
		d.Detail = "The delivery DLQ is left without a redrive allow policy; split the fleet or reduce FIFO classes."
	case len(ingress) > 0:
		g.claim("aws_sqs_queue_redrive_allow_policy", "delivery_dlq", q.Path)
		ra := fl.resource("aws_sqs_queue_redrive_allow_policy", "delivery_dlq",
			"FIFO classes' ingress queues redrive here (a standard source needs a standard DLQ).")
		ra.set("queue_url", ref("aws_sqs_queue", "delivery_dlq", "url"))
		ra.set("redrive_allow_policy", call("jsonencode", object(
			kv{"redrivePermission", str("byQueue")},
			kv{"sourceQueueArns", list(ingress...)},
		)))
	}

	g.depthAlarm(fl, "delivery_dlq", q.Name, q.Path,
		fmt.Sprintf("Events for fleet %s were not delivered to a class queue. Group by ERROR_CODE before redriving.", f.Name))
}

// depthAlarm fires when a dead-letter queue holds any message.
func (g *gen) depthAlarm(fl *file, name, queueName, path, desc string) {
	g.claim("aws_cloudwatch_metric_alarm", name+"_depth", path)
	a := fl.resource("aws_cloudwatch_metric_alarm", name+"_depth")
	a.set("alarm_name", str(depthAlarmName(queueName)))
	a.set("alarm_description", str(desc))
	a.set("namespace", str("AWS/SQS"))
	a.set("metric_name", str("ApproximateNumberOfMessagesVisible"))
	a.set("dimensions", object(kv{"QueueName", str(queueName)}))
	a.set("statistic", str("Maximum"))
	a.set("period", num(60))
	a.set("evaluation_periods", num(1))
	a.set("comparison_operator", str("GreaterThanThreshold"))
	a.set("threshold", num(0))
	a.set("treat_missing_data", str("notBreaching"))
	g.alarmNotify(a)
}

// queueDims is the dimension map of an SQS metric.
func queueDims(q ir.Queue) tokens { return object(kv{"QueueName", str(q.Name)}) }
