# Dead letters of cdk-synth; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "cdk_synth_dlq" {
  name                       = "tools-cdk-synth-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue" "cdk_synth" {
  name                       = "tools-cdk-synth"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 1800
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.cdk_synth_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only tools-cdk-synth may dead-letter into tools-cdk-synth-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "cdk_synth_dlq" {
  queue_url = aws_sqs_queue.cdk_synth_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.cdk_synth.arn]
  })
}

resource "aws_cloudwatch_event_rule" "cdk_synth" {
  name           = "tools-cdk-synth"
  description    = "Routes CdkSynthRequested to the cdk-synth queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    "detail-type" = ["CdkSynthRequested"]
    source        = ["com.cheatcoders.agents"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "cdk_synth" {
  rule           = aws_cloudwatch_event_rule.cdk_synth.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "cdk-synth-queue"
  arn            = aws_sqs_queue.cdk_synth.arn
  retry_policy {
    maximum_retry_attempts       = 24
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "cdk_synth_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.cdk_synth.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.cdk_synth.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "cdk_synth" {
  queue_url = aws_sqs_queue.cdk_synth.url
  policy    = data.aws_iam_policy_document.cdk_synth_queue.json
}

resource "aws_cloudwatch_metric_alarm" "cdk_synth_dlq_delivery_failed" {
  alarm_name        = "tools-cdk-synth-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule tools-cdk-synth: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "agent-tools"
    RuleName     = "tools-cdk-synth"
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

resource "aws_cloudwatch_metric_alarm" "cdk_synth_age" {
  alarm_name        = "tools-cdk-synth-age"
  alarm_description = "Oldest cdk-synth message is older than step max + 2 x step p95 (480s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "tools-cdk-synth"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 480
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "cdk_synth_dlq_depth" {
  alarm_name        = "tools-cdk-synth-dlq-depth"
  alarm_description = "cdk-synth dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "tools-cdk-synth-dlq"
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

resource "aws_cloudwatch_metric_alarm" "cdk_synth_stalled" {
  alarm_name          = "tools-cdk-synth-stalled"
  alarm_description   = "Stall canary: cdk-synth deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "tools-cdk-synth"
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
        QueueName = "tools-cdk-synth"
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

data "aws_iam_policy_document" "cdk_synth_worker_trust" {
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

data "aws_iam_policy_document" "cdk_synth_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.cdk_synth.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.cdk_synth_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/inputs/events/CdkSynthRequested/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/cdk-synth/*"]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["ToolJobCompleted"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["com.cheatcoders.workers"]
    }
  }
  statement {
    sid       = "JobStatus"
    effect    = "Allow"
    actions   = ["dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["JOB#*"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.cdk_synth.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/cdk-synth/*"]
  }
}

# fleet-worker role of cdk-synth (lambda).
resource "aws_iam_role" "cdk_synth_worker" {
  name               = "tools-cdk-synth-worker"
  assume_role_policy = data.aws_iam_policy_document.cdk_synth_worker_trust.json
}

resource "aws_iam_role_policy" "cdk_synth_worker" {
  name   = "tools-cdk-synth-worker"
  role   = aws_iam_role.cdk_synth_worker.id
  policy = data.aws_iam_policy_document.cdk_synth_worker.json
}

resource "aws_cloudwatch_log_group" "cdk_synth" {
  name              = "/aws/lambda/tools-cdk-synth"
  retention_in_days = 30
}

resource "aws_lambda_function" "cdk_synth" {
  function_name = "tools-cdk-synth"
  description   = "Runs `cdk synth` for a stack at a git ref; 60-180 s per job."
  role          = aws_iam_role.cdk_synth_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.us-west-2.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 300
  memory_size   = 3008
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.cdk_synth_config.bucket}/${aws_s3_object.cdk_synth_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.cdk_synth_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.cdk_synth_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.cdk_synth.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.cdk_synth, aws_iam_role_policy.cdk_synth_worker]
}

# The generated runtime/cdk-synth.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "cdk_synth_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/cdk-synth/${filesha256("${path.module}/../runtime/cdk-synth.json")}.json"
  content                = file("${path.module}/../runtime/cdk-synth.json")
  content_type           = "application/json"
  server_side_encryption = "AES256"
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "cdk_synth" {
  event_source_arn                   = aws_sqs_queue.cdk_synth.arn
  function_name                      = aws_lambda_function.cdk_synth.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
