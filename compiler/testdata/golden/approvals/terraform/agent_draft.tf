# Dead letters of draft; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "draft_dlq" {
  name                       = "refunds-draft-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue" "draft" {
  name                       = "refunds-draft"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 360
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.draft_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only refunds-draft may dead-letter into refunds-draft-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "draft_dlq" {
  queue_url = aws_sqs_queue.draft_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.draft.arn]
  })
}

resource "aws_cloudwatch_event_rule" "draft" {
  name           = "refunds-draft"
  description    = "Routes refund.requested to the draft queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    "detail-type" = ["refund.requested"]
    source        = ["refunds.app"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "draft" {
  rule           = aws_cloudwatch_event_rule.draft.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "draft-queue"
  arn            = aws_sqs_queue.draft.arn
  retry_policy {
    maximum_retry_attempts       = 24
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "draft_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.draft.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.draft.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "draft" {
  queue_url = aws_sqs_queue.draft.url
  policy    = data.aws_iam_policy_document.draft_queue.json
}

resource "aws_cloudwatch_metric_alarm" "draft_dlq_delivery_failed" {
  alarm_name        = "refunds-draft-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule refunds-draft: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "refunds"
    RuleName     = "refunds-draft"
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

resource "aws_cloudwatch_metric_alarm" "draft_age" {
  alarm_name        = "refunds-draft-age"
  alarm_description = "Oldest draft message is older than step max + 2 x step p95 (70s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "refunds-draft"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 70
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "draft_dlq_depth" {
  alarm_name        = "refunds-draft-dlq-depth"
  alarm_description = "draft dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "refunds-draft-dlq"
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

resource "aws_cloudwatch_metric_alarm" "draft_stalled" {
  alarm_name          = "refunds-draft-stalled"
  alarm_description   = "Stall canary: draft deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "refunds-draft"
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
        QueueName = "refunds-draft"
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

data "aws_iam_policy_document" "draft_worker_trust" {
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

data "aws_iam_policy_document" "draft_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.draft.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.draft_dlq.arn]
  }
  statement {
    sid       = "IdempotencyClaims"
    effect    = "Allow"
    actions   = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.idempotency.arn]
    condition {
      test     = "ForAllValues:StringNotLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["approval#*"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Payloads are objects named per message under the prefixes this class may read (inputs/ of the event it consumes and of its workflows, its producers' outputs/, its workflows' fanout/); fleet-worker refuses any other key (claim_check.read_prefixes).
  statement {
    sid       = "ReadClaimCheckPayloads"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/refund/*", "${aws_s3_bucket.claimcheck.arn}/inputs/events/refund.requested/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/refund/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/draft/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    resources = [aws_sfn_state_machine.refund.arn, "${aws_sfn_state_machine.refund.arn}/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.draft.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/draft/*"]
  }
}

# fleet-worker role of draft (lambda).
resource "aws_iam_role" "draft_worker" {
  name               = "refunds-draft-worker"
  assume_role_policy = data.aws_iam_policy_document.draft_worker_trust.json
}

resource "aws_iam_role_policy" "draft_worker" {
  name   = "refunds-draft-worker"
  role   = aws_iam_role.draft_worker.id
  policy = data.aws_iam_policy_document.draft_worker.json
}

resource "aws_cloudwatch_log_group" "draft" {
  name              = "/aws/lambda/refunds-draft"
  retention_in_days = 30
}

resource "aws_lambda_function" "draft" {
  function_name = "refunds-draft"
  role          = aws_iam_role.draft_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 60
  memory_size   = 1024
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.draft_config.bucket}/${aws_s3_object.draft_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.draft_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.draft_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.draft.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.draft, aws_iam_role_policy.draft_worker]
}

# The generated runtime/draft.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "draft_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/draft/${filesha256("${path.module}/../runtime/draft.json")}.json"
  content                = file("${path.module}/../runtime/draft.json")
  content_type           = "application/json"
  server_side_encryption = "AES256"
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "draft" {
  event_source_arn                   = aws_sqs_queue.draft.arn
  function_name                      = aws_lambda_function.draft.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
