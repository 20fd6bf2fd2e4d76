# Dead letters of release-assistant; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "release_assistant_dlq" {
  name                       = "tools-release-assistant-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue" "release_assistant" {
  name                       = "tools-release-assistant"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 1800
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.release_assistant_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only tools-release-assistant may dead-letter into tools-release-assistant-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "release_assistant_dlq" {
  queue_url = aws_sqs_queue.release_assistant_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.release_assistant.arn]
  })
}

resource "aws_cloudwatch_event_rule" "release_assistant" {
  name           = "tools-release-assistant"
  description    = "Routes ReleaseQuestionAsked to the release-assistant queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    "detail-type" = ["ReleaseQuestionAsked"]
    source        = ["com.cheatcoders.chat"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "release_assistant" {
  rule           = aws_cloudwatch_event_rule.release_assistant.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "release-assistant-queue"
  arn            = aws_sqs_queue.release_assistant.arn
  retry_policy {
    maximum_retry_attempts       = 24
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "release_assistant_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.release_assistant.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.release_assistant.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "release_assistant" {
  queue_url = aws_sqs_queue.release_assistant.url
  policy    = data.aws_iam_policy_document.release_assistant_queue.json
}

resource "aws_cloudwatch_metric_alarm" "release_assistant_dlq_delivery_failed" {
  alarm_name        = "tools-release-assistant-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule tools-release-assistant: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "agent-tools"
    RuleName     = "tools-release-assistant"
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

resource "aws_cloudwatch_metric_alarm" "release_assistant_age" {
  alarm_name        = "tools-release-assistant-age"
  alarm_description = "Oldest release-assistant message is older than step max + 2 x step p95 (360s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "tools-release-assistant"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 360
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "release_assistant_dlq_depth" {
  alarm_name        = "tools-release-assistant-dlq-depth"
  alarm_description = "release-assistant dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "tools-release-assistant-dlq"
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

resource "aws_cloudwatch_metric_alarm" "release_assistant_stalled" {
  alarm_name          = "tools-release-assistant-stalled"
  alarm_description   = "Stall canary: release-assistant deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "tools-release-assistant"
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
        QueueName = "tools-release-assistant"
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

data "aws_iam_policy_document" "release_assistant_worker_trust" {
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

data "aws_iam_policy_document" "release_assistant_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.release_assistant.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.release_assistant_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/inputs/events/ReleaseQuestionAsked/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/release-assistant/*"]
  }
  statement {
    sid       = "InvokeRoutedModels"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:us-west-2:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-west-2:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A cross-region inference profile routes to its foundation model in any region it spans (global ones in any region): bedrock:*::foundation-model/<model>, that model only, and only through this fleet's profiles (bedrock:InferenceProfileArn).
  statement {
    sid       = "InvokeModelsThroughProfiles"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"]
    condition {
      test     = "ArnEquals"
      variable = "bedrock:InferenceProfileArn"
      values   = ["arn:${data.aws_partition.current.partition}:bedrock:us-west-2:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-west-2:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0"]
    }
  }
  statement {
    sid       = "CreateAndReadJobs"
    effect    = "Allow"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem"]
    resources = [aws_dynamodb_table.jobs.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["JOB#bccd9bb3*"]
    }
  }
  statement {
    sid       = "ListOwnersJobs"
    effect    = "Allow"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/by_owner"]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["OWNER#23:class:release-assistant#*"]
    }
  }
  statement {
    sid       = "RequestJobs"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["CdkSynthRequested"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["com.cheatcoders.agents"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.release_assistant.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/release-assistant/*"]
  }
}

# fleet-worker role of release-assistant (lambda).
resource "aws_iam_role" "release_assistant_worker" {
  name               = "tools-release-assistant-worker"
  assume_role_policy = data.aws_iam_policy_document.release_assistant_worker_trust.json
}

resource "aws_iam_role_policy" "release_assistant_worker" {
  name   = "tools-release-assistant-worker"
  role   = aws_iam_role.release_assistant_worker.id
  policy = data.aws_iam_policy_document.release_assistant_worker.json
}

resource "aws_cloudwatch_log_group" "release_assistant" {
  name              = "/aws/lambda/tools-release-assistant"
  retention_in_days = 30
}

resource "aws_lambda_function" "release_assistant" {
  function_name = "tools-release-assistant"
  description   = "Answers release questions in a chat; starts a synth and polls it without blocking."
  role          = aws_iam_role.release_assistant_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.us-west-2.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 300
  memory_size   = 1024
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.release_assistant_config.bucket}/${aws_s3_object.release_assistant_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.release_assistant_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.release_assistant_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.release_assistant.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.release_assistant, aws_iam_role_policy.release_assistant_worker]
}

# The generated runtime/release-assistant.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "release_assistant_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/release-assistant/${filesha256("${path.module}/../runtime/release-assistant.json")}.json"
  content                = file("${path.module}/../runtime/release-assistant.json")
  content_type           = "application/json"
  server_side_encryption = "AES256"
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "release_assistant" {
  event_source_arn                   = aws_sqs_queue.release_assistant.arn
  function_name                      = aws_lambda_function.release_assistant.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
