# Scheduled events Scheduler could not put on the bus after its retries.
resource "aws_sqs_queue" "schedules_dlq" {
  name                      = "refunds-schedules-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

data "aws_iam_policy_document" "scheduler_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

data "aws_iam_policy_document" "scheduler" {
  statement {
    sid       = "PutScheduledEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
  }
  statement {
    sid       = "DeadLetterScheduledEvents"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.schedules_dlq.arn]
  }
}

# Role of the fleet's schedules: put events on the fleet's bus and dead-letter what fails, nothing else.
resource "aws_iam_role" "scheduler" {
  name               = "refunds-scheduler"
  assume_role_policy = data.aws_iam_policy_document.scheduler_trust.json
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "refunds-scheduler"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}

resource "aws_scheduler_schedule" "schedule_weekday_audit" {
  name                         = "refunds-weekday-audit"
  description                  = "Puts refund.audit.due on the refunds bus."
  schedule_expression          = "cron(30 7 ? * MON-FRI *)"
  schedule_expression_timezone = "Europe/Paris"
  flexible_time_window {
    mode                      = "FLEXIBLE"
    maximum_window_in_minutes = 15
  }
  target {
    arn      = aws_cloudwatch_event_bus.fleet.arn
    role_arn = aws_iam_role.scheduler.arn
    input = jsonencode({
      trace_id = "scheduled-audit"
      window   = "yesterday"
    })
    eventbridge_parameters {
      detail_type = "refund.audit.due"
      source      = "refunds.schedules"
    }
    retry_policy {
      maximum_event_age_in_seconds = 3600
      maximum_retry_attempts       = 24
    }
    dead_letter_config {
      arn = aws_sqs_queue.schedules_dlq.arn
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "schedules_dlq_depth" {
  alarm_name        = "refunds-schedules-dlq-depth"
  alarm_description = "Scheduled events of fleet refunds were not put on the bus."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "refunds-schedules-dlq"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}
