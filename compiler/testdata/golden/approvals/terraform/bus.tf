resource "aws_cloudwatch_event_bus" "fleet" {
  name = "refunds"
}

# Events EventBridge could not deliver to a class queue, with ERROR_CODE and RULE_ARN attributes.
resource "aws_sqs_queue" "delivery_dlq" {
  name                       = "refunds-delivery-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 30
  sqs_managed_sse_enabled    = true
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
      values   = [aws_cloudwatch_event_rule.audit.arn, aws_cloudwatch_event_rule.draft.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "delivery_dlq" {
  queue_url = aws_sqs_queue.delivery_dlq.url
  policy    = data.aws_iam_policy_document.delivery_dlq.json
}

resource "aws_cloudwatch_metric_alarm" "delivery_dlq_depth" {
  alarm_name        = "refunds-delivery-dlq-depth"
  alarm_description = "Events for fleet refunds were not delivered to a class queue. Group by ERROR_CODE before redriving."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "refunds-delivery-dlq"
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
