# Scheduled events Scheduler could not put on the bus after its retries.
resource "aws_sqs_queue" "schedules_dlq" {
  name                      = "sink-schedules-dlq"
  message_retention_seconds = 1209600
  kms_master_key_id         = aws_kms_key.fleet.arn
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
  statement {
    sid       = "UseFleetKeyViaSQS"
    effect    = "Allow"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["sqs.eu-west-1.amazonaws.com"]
    }
  }
}

# Role of the fleet's schedules: put events on the fleet's bus and dead-letter what fails, nothing else.
resource "aws_iam_role" "scheduler" {
  name               = "sink-scheduler"
  assume_role_policy = data.aws_iam_policy_document.scheduler_trust.json
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "sink-scheduler"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}

resource "aws_scheduler_schedule" "schedule_hourly_index" {
  name                = "sink-hourly-index"
  description         = "Puts index.requested on the sink-bus bus."
  schedule_expression = "rate(1 hour)"
  flexible_time_window {
    mode = "OFF"
  }
  target {
    arn      = aws_cloudwatch_event_bus.fleet.arn
    role_arn = aws_iam_role.scheduler.arn
    input = jsonencode({
      conversation_id = "hourly"
      tenant          = "acme"
      trace_id        = "scheduled-index"
    })
    eventbridge_parameters {
      detail_type = "index.requested"
      source      = "sink.indexer"
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

resource "aws_scheduler_schedule" "schedule_nightly_replan" {
  name                         = "sink-nightly-replan"
  description                  = "Puts task.requested on the sink-bus bus."
  schedule_expression          = "cron(0 2 * * ? *)"
  schedule_expression_timezone = "Europe/Berlin"
  flexible_time_window {
    mode                      = "FLEXIBLE"
    maximum_window_in_minutes = 10
  }
  target {
    arn      = aws_cloudwatch_event_bus.fleet.arn
    role_arn = aws_iam_role.scheduler.arn
    input = jsonencode({
      conversation_id = "nightly"
      kind            = "replan"
      priority        = 2
      trace_id        = "scheduled-replan"
    })
    eventbridge_parameters {
      detail_type = "task.requested"
      source      = "sink.coordinator"
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
  alarm_name        = "sink-schedules-dlq-depth"
  alarm_description = "Scheduled events of fleet sink were not put on the bus."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-schedules-dlq"
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
