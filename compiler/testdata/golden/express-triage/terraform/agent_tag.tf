# Dead letters of tag; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "tag_dlq" {
  name                       = "triage-tag-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue" "tag" {
  name                       = "triage-tag"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 120
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.tag_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only triage-tag may dead-letter into triage-tag-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "tag_dlq" {
  queue_url = aws_sqs_queue.tag_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.tag.arn]
  })
}

resource "aws_cloudwatch_metric_alarm" "tag_age" {
  alarm_name        = "triage-tag-age"
  alarm_description = "Oldest tag message is older than step max + 2 x step p95 (60s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "triage-tag"
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

resource "aws_cloudwatch_metric_alarm" "tag_dlq_depth" {
  alarm_name        = "triage-tag-dlq-depth"
  alarm_description = "tag dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "triage-tag-dlq"
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

resource "aws_cloudwatch_metric_alarm" "tag_stalled" {
  alarm_name          = "triage-tag-stalled"
  alarm_description   = "Stall canary: tag deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "triage-tag"
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
        QueueName = "triage-tag"
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

data "aws_iam_policy_document" "tag_worker_trust" {
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

data "aws_iam_policy_document" "tag_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.tag.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.tag_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/bulk-tag/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/bulk-tag/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/tag/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.tag.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/tag/*"]
  }
}

# fleet-worker role of tag (lambda).
resource "aws_iam_role" "tag_worker" {
  name               = "triage-tag-worker"
  assume_role_policy = data.aws_iam_policy_document.tag_worker_trust.json
}

resource "aws_iam_role_policy" "tag_worker" {
  name   = "triage-tag-worker"
  role   = aws_iam_role.tag_worker.id
  policy = data.aws_iam_policy_document.tag_worker.json
}

resource "aws_cloudwatch_log_group" "tag" {
  name              = "/aws/lambda/triage-tag"
  retention_in_days = 30
}

resource "aws_lambda_function" "tag" {
  function_name = "triage-tag"
  role          = aws_iam_role.tag_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.us-east-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 20
  memory_size   = 1024
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.tag_config.bucket}/${aws_s3_object.tag_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.tag_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.tag_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.tag.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.tag, aws_iam_role_policy.tag_worker]
}

# The generated runtime/tag.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "tag_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/tag/${filesha256("${path.module}/../runtime/tag.json")}.json"
  content                = file("${path.module}/../runtime/tag.json")
  content_type           = "application/json"
  server_side_encryption = "AES256"
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "tag" {
  event_source_arn                   = aws_sqs_queue.tag.arn
  function_name                      = aws_lambda_function.tag.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
