package terraform

import (
	"fmt"

	"github.com/fleetc/fleetc/compiler/ir"
)

// Terraform names of the blocks every schedule shares.
const (
	schedulerLocal    = "scheduler"
	schedulesDLQLocal = "schedules_dlq"
	schedulesPart     = "/schedules"
)

// schedules emits one EventBridge Scheduler schedule per spec schedule, putting its event on
// the fleet's bus through the EventBridge target (eventbridge_parameters: source and
// detail-type; input: the detail), with the role they assume and their dead-letter queue.
func (g *gen) schedules() {
	f := g.f
	if len(f.Schedules) == 0 {
		return
	}
	fl := g.file("schedules.tf").owner(PartBus, schedulesPart)

	g.claim("aws_sqs_queue", schedulesDLQLocal, schedulesPart)
	q := fl.resource("aws_sqs_queue", schedulesDLQLocal,
		"Scheduled events Scheduler could not put on the bus after its retries.")
	q.set("name", str(ir.SchedulesDLQName(f)))
	q.set("message_retention_seconds", seconds(ir.Defaults.DLQRetention))
	g.encryptQueue(q)

	// Scheduler sends to the DLQ with the schedule's own execution role (no queue policy).
	st := []stmt{
		{sid: "PutScheduledEvents", actions: []string{"events:PutEvents"}, resources: []tokens{ref("aws_cloudwatch_event_bus", "fleet", "arn")}},
		{sid: "DeadLetterScheduledEvents", actions: []string{"sqs:SendMessage"}, resources: []tokens{ref("aws_sqs_queue", schedulesDLQLocal, "arn")}},
	}
	g.role(fl, schedulerLocal, ir.SchedulerRoleName(f), schedulesPart,
		serviceTrust("scheduler.amazonaws.com", true, nil, "sts:AssumeRole"), st,
		"Role of the fleet's schedules: put events on the fleet's bus and dead-letter what fails, nothing else.")

	for _, sc := range f.Schedules {
		g.schedule(fl.owner(PartBus, sc.Path), sc)
	}
	g.depthAlarm(fl.owner(PartBus, schedulesPart), schedulesDLQLocal, ir.SchedulesDLQName(f), schedulesPart,
		fmt.Sprintf("Scheduled events of fleet %s were not put on the bus.", f.Name))
}

func (g *gen) schedule(fl *file, sc *ir.Schedule) {
	n := "schedule_" + local(sc.Name)
	detail, err := value(sc.Detail)
	if err != nil {
		g.ds.Errorf("TF004", sc.Path+"/detail", "detail of schedule %s cannot be rendered: %v", sc.Name, err)
		return
	}
	g.claim("aws_scheduler_schedule", n, sc.Path)
	r := fl.resource("aws_scheduler_schedule", n)
	r.set("name", str(sc.ScheduleName))
	desc := sc.Description
	if desc == "" {
		desc = fmt.Sprintf("Puts %s on the %s bus.", sc.Event.DetailType, g.f.Bus.Name)
	}
	r.set("description", str(desc))
	r.set("schedule_expression", str(sc.Expression))
	if sc.Timezone != "" {
		r.set("schedule_expression_timezone", str(sc.Timezone))
	}
	w := r.nested("flexible_time_window")
	if sc.FlexibleWindow > 0 {
		w.set("mode", str("FLEXIBLE"))
		w.set("maximum_window_in_minutes", num(int64(sc.FlexibleWindow.Minutes())))
	} else {
		w.set("mode", str("OFF"))
	}
	t := r.nested("target")
	t.set("arn", ref("aws_cloudwatch_event_bus", "fleet", "arn"))
	t.set("role_arn", ref("aws_iam_role", schedulerLocal, "arn"))
	t.set("input", call("jsonencode", detail))
	eb := t.nested("eventbridge_parameters")
	eb.set("detail_type", str(sc.Event.DetailType))
	eb.set("source", str(sc.Event.Source))
	// The same retry policy as the fleet's rule targets (delivery.attempts / max_age defaults).
	rp := t.nested("retry_policy")
	rp.set("maximum_event_age_in_seconds", seconds(ir.Defaults.DeliveryMaxAge))
	rp.set("maximum_retry_attempts", num(int64(ir.Defaults.DeliveryAttempts)))
	t.nested("dead_letter_config").set("arn", ref("aws_sqs_queue", schedulesDLQLocal, "arn"))
}
