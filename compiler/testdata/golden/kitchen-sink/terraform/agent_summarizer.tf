# Dead letters of summarizer; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "summarizer_dlq" {
  name                       = "sink-summarizer-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  kms_master_key_id          = aws_kms_key.fleet.arn
}

resource "aws_sqs_queue" "summarizer" {
  name                       = "sink-summarizer"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 720
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  kms_master_key_id          = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.summarizer_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only sink-summarizer may dead-letter into sink-summarizer-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "summarizer_dlq" {
  queue_url = aws_sqs_queue.summarizer_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.summarizer.arn]
  })
}

resource "aws_cloudwatch_event_rule" "summarizer" {
  name           = "sink-summarizer"
  description    = "Routes task.completed to the summarizer queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    "detail-type" = ["task.completed"]
    source        = ["sink.workers"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "summarizer" {
  rule           = aws_cloudwatch_event_rule.summarizer.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "summarizer-queue"
  arn            = aws_sqs_queue.summarizer.arn
  retry_policy {
    maximum_retry_attempts       = 12
    maximum_event_age_in_seconds = 7200
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "summarizer_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.summarizer.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.summarizer.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "summarizer" {
  queue_url = aws_sqs_queue.summarizer.url
  policy    = data.aws_iam_policy_document.summarizer_queue.json
}

resource "aws_cloudwatch_metric_alarm" "summarizer_dlq_delivery_failed" {
  alarm_name        = "sink-summarizer-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule sink-summarizer: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "sink-bus"
    RuleName     = "sink-summarizer"
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

resource "aws_cloudwatch_metric_alarm" "summarizer_age" {
  alarm_name        = "sink-summarizer-age"
  alarm_description = "Oldest summarizer message is older than step max + 2 x step p95 (160s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "sink-summarizer"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 160
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "summarizer_dlq_depth" {
  alarm_name        = "sink-summarizer-dlq-depth"
  alarm_description = "summarizer dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-summarizer-dlq"
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

resource "aws_cloudwatch_metric_alarm" "summarizer_stalled" {
  alarm_name          = "sink-summarizer-stalled"
  alarm_description   = "Stall canary: summarizer deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "sink-summarizer"
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
        QueueName = "sink-summarizer"
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

data "aws_iam_policy_document" "summarizer_worker_trust" {
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

data "aws_iam_policy_document" "summarizer_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.summarizer.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.summarizer_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/inputs/events/task.completed/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/outputs/indexer/*", "${aws_s3_bucket.claimcheck.arn}/outputs/planner/*", "${aws_s3_bucket.claimcheck.arn}/outputs/reviewer/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/summarizer/*"]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["review.requested", "task.failed"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.coordinator", "sink.errors"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    resources = [aws_sfn_state_machine.hotfix.arn, "${aws_sfn_state_machine.hotfix.arn}/*"]
  }
  statement {
    sid       = "InvokeRoutedModels"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A cross-region inference profile routes to its foundation model in any region it spans (global ones in any region): bedrock:*::foundation-model/<model>, that model only, and only through this fleet's profiles (bedrock:InferenceProfileArn).
  statement {
    sid       = "InvokeModelsThroughProfiles"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"]
    condition {
      test     = "ArnEquals"
      variable = "bedrock:InferenceProfileArn"
      values   = ["arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.summarizer.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/summarizer/*"]
  }
  statement {
    sid       = "UseFleetKeyViaS3"
    effect    = "Allow"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.eu-west-1.amazonaws.com"]
    }
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

# fleet-worker role of summarizer (lambda).
resource "aws_iam_role" "summarizer_worker" {
  name               = "sink-summarizer-worker"
  assume_role_policy = data.aws_iam_policy_document.summarizer_worker_trust.json
}

resource "aws_iam_role_policy" "summarizer_worker" {
  name   = "sink-summarizer-worker"
  role   = aws_iam_role.summarizer_worker.id
  policy = data.aws_iam_policy_document.summarizer_worker.json
}

resource "aws_cloudwatch_log_group" "summarizer" {
  name              = "/aws/lambda/sink-summarizer"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

resource "aws_lambda_function" "summarizer" {
  function_name = "sink-summarizer"
  description   = "Summarises finished tasks."
  role          = aws_iam_role.summarizer_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 120
  memory_size   = 1024
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.summarizer_config.bucket}/${aws_s3_object.summarizer_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.summarizer_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.summarizer_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.summarizer.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.summarizer, aws_iam_role_policy.summarizer_worker]
}

# The generated runtime/summarizer.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "summarizer_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/summarizer/${filesha256("${path.module}/../runtime/summarizer.json")}.json"
  content                = file("${path.module}/../runtime/summarizer.json")
  content_type           = "application/json"
  server_side_encryption = "aws:kms"
  kms_key_id             = aws_kms_key.fleet.arn
  bucket_key_enabled     = true
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "summarizer" {
  event_source_arn                   = aws_sqs_queue.summarizer.arn
  function_name                      = aws_lambda_function.summarizer.arn
  batch_size                         = 5
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
