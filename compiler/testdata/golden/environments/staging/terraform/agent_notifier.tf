# Dead letters of notifier; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "notifier_dlq" {
  name                       = "support-staging-notifier-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue" "notifier" {
  name                       = "support-staging-notifier"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 180
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.notifier_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only support-staging-notifier may dead-letter into support-staging-notifier-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "notifier_dlq" {
  queue_url = aws_sqs_queue.notifier_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.notifier.arn]
  })
}

resource "aws_cloudwatch_event_rule" "notifier" {
  name           = "support-staging-notifier"
  description    = "Routes ticket.triaged to the notifier queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    "detail-type" = ["ticket.triaged"]
    source        = ["support.workers"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "notifier" {
  rule           = aws_cloudwatch_event_rule.notifier.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "notifier-queue"
  arn            = aws_sqs_queue.notifier.arn
  retry_policy {
    maximum_retry_attempts       = 24
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "notifier_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.notifier.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.notifier.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "notifier" {
  queue_url = aws_sqs_queue.notifier.url
  policy    = data.aws_iam_policy_document.notifier_queue.json
}

resource "aws_cloudwatch_metric_alarm" "notifier_dlq_delivery_failed" {
  alarm_name        = "support-staging-notifier-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule support-staging-notifier: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "support-staging"
    RuleName     = "support-staging-notifier"
  }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "notifier_age" {
  alarm_name        = "support-staging-notifier-age"
  alarm_description = "Oldest notifier message is older than step max + 2 x step p95 (60s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "support-staging-notifier"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 60
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "notifier_dlq_depth" {
  alarm_name        = "support-staging-notifier-dlq-depth"
  alarm_description = "notifier dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "support-staging-notifier-dlq"
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

resource "aws_cloudwatch_metric_alarm" "notifier_stalled" {
  alarm_name          = "support-staging-notifier-stalled"
  alarm_description   = "Stall canary: notifier deleted no message for 10 minutes while messages were waiting."
  comparison_operator = "GreaterThanOrEqualToThreshold"
  threshold           = 1
  evaluation_periods  = 10
  datapoints_to_alarm = 10
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  metric_query {
    id = "visible"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "ApproximateNumberOfMessagesVisible"
      dimensions = {
        QueueName = "support-staging-notifier"
      }
      period = 60
      stat   = "Maximum"
    }
  }
  metric_query {
    id = "deleted"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "NumberOfMessagesDeleted"
      dimensions = {
        QueueName = "support-staging-notifier"
      }
      period = 60
      stat   = "Sum"
    }
  }
  metric_query {
    id          = "stalled"
    expression  = "IF(visible > 0 AND deleted == 0, 1, 0)"
    label       = "waiting messages and zero completions"
    return_data = true
  }
}

data "aws_iam_policy_document" "notifier_worker_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "notifier_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.notifier.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.notifier_dlq.arn]
  }
  statement {
    sid       = "IdempotencyClaims"
    effect    = "Allow"
    actions   = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.idempotency.arn]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Payloads are objects named per message under the prefixes this class may read (inputs/ of the event it consumes and of its workflows, its producers' outputs/, its workflows' fanout/); fleet-worker refuses any other key (claim_check.read_prefixes).
  statement {
    sid       = "ReadClaimCheckPayloads"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/inputs/events/ticket.triaged/*", "${aws_s3_bucket.claimcheck.arn}/outputs/triage/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/notifier/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.notifier.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/notifier/*"]
  }
}

# fleet-worker role of notifier (lambda).
resource "aws_iam_role" "notifier_worker" {
  name               = "support-staging-notifier-worker"
  assume_role_policy = data.aws_iam_policy_document.notifier_worker_trust.json
}

resource "aws_iam_role_policy" "notifier_worker" {
  name   = "support-staging-notifier-worker"
  role   = aws_iam_role.notifier_worker.id
  policy = data.aws_iam_policy_document.notifier_worker.json
}

resource "aws_cloudwatch_log_group" "notifier" {
  name              = "/aws/lambda/support-staging-notifier"
  retention_in_days = 30
}

resource "aws_lambda_function" "notifier" {
  function_name = "support-staging-notifier"
  description   = "Tells the customer their ticket's category."
  role          = aws_iam_role.notifier_worker.arn
  package_type  = "Image"
  image_uri     = "222233334444.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 30
  memory_size   = 1024
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.notifier_config.bucket}/${aws_s3_object.notifier_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.notifier_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.notifier_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.notifier.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.notifier, aws_iam_role_policy.notifier_worker]
}

# The generated runtime/notifier.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "notifier_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/notifier/${filesha256("${path.module}/../runtime/notifier.json")}.json"
  content                = file("${path.module}/../runtime/notifier.json")
  content_type           = "application/json"
  server_side_encryption = "AES256"
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "notifier" {
  event_source_arn                   = aws_sqs_queue.notifier.arn
  function_name                      = aws_lambda_function.notifier.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
