resource "aws_cloudwatch_event_bus" "fleet" {
  name = "sink-bus"
}

# Replay re-delivers to every rule: the idempotency table is what makes it safe.
resource "aws_cloudwatch_event_archive" "fleet" {
  name             = "sink-archive"
  event_source_arn = aws_cloudwatch_event_bus.fleet.arn
  retention_days   = 3
}

# Events EventBridge could not deliver to a class queue, with ERROR_CODE and RULE_ARN attributes.
resource "aws_sqs_queue" "delivery_dlq" {
  name                       = "sink-delivery-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 30
  kms_master_key_id          = aws_kms_key.fleet.arn
}

# Only this fleet's rules may dead-letter here; without the grant delivery fails silently.
data "aws_iam_policy_document" "delivery_dlq" {
  statement {
    sid       = "RuleTargetDeadLetters"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.delivery_dlq.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.concierge.arn, aws_cloudwatch_event_rule.indexer.arn, aws_cloudwatch_event_rule.planner.arn, aws_cloudwatch_event_rule.reviewer.arn, aws_cloudwatch_event_rule.summarizer.arn, aws_cloudwatch_event_rule.triage.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "delivery_dlq" {
  queue_url = aws_sqs_queue.delivery_dlq.url
  policy    = data.aws_iam_policy_document.delivery_dlq.json
}

# FIFO classes' ingress queues redrive here (a standard source needs a standard DLQ).
resource "aws_sqs_queue_redrive_allow_policy" "delivery_dlq" {
  queue_url = aws_sqs_queue.delivery_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.indexer_ingress.arn, aws_sqs_queue.planner_ingress.arn]
  })
}

resource "aws_cloudwatch_metric_alarm" "delivery_dlq_depth" {
  alarm_name        = "sink-delivery-dlq-depth"
  alarm_description = "Events for fleet sink were not delivered to a class queue. Group by ERROR_CODE before redriving."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-delivery-dlq"
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
