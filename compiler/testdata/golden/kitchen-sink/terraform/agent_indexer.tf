# Dead letters of indexer; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "indexer_dlq" {
  name                        = "sink-indexer-dlq.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  message_retention_seconds   = 1209600
  visibility_timeout_seconds  = 300
  kms_master_key_id           = aws_kms_key.fleet.arn
}

resource "aws_sqs_queue" "indexer" {
  name                        = "sink-indexer.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  message_retention_seconds   = 345600
  visibility_timeout_seconds  = 1080
  receive_wait_time_seconds   = 20
  delay_seconds               = 0
  kms_master_key_id           = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.indexer_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only sink-indexer.fifo may dead-letter into sink-indexer-dlq.fifo.
resource "aws_sqs_queue_redrive_allow_policy" "indexer_dlq" {
  queue_url = aws_sqs_queue.indexer_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.indexer.arn]
  })
}

resource "aws_cloudwatch_event_rule" "indexer" {
  name           = "sink-indexer"
  description    = "Routes index.requested to the indexer queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    detail = {
      tenant = ["acme", "globex"]
    }
    "detail-type" = ["index.requested"]
    source        = ["sink.indexer"]
  })
}

# A rule target can stamp only one static MessageGroupId on a FIFO queue, which would serialise
# the whole class: the rule delivers to this standard queue, and the pipe below sets the group per event.
resource "aws_sqs_queue" "indexer_ingress" {
  name                       = "sink-indexer-ingress"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 60
  receive_wait_time_seconds  = 20
  kms_master_key_id          = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.delivery_dlq.arn
    maxReceiveCount     = 3
  })
}

data "aws_iam_policy_document" "indexer_pipe_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["pipes.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:pipes:eu-west-1:${data.aws_caller_identity.current.account_id}:pipe/sink-indexer"]
    }
  }
}

data "aws_iam_policy_document" "indexer_pipe" {
  statement {
    sid       = "ReadIngress"
    effect    = "Allow"
    actions   = ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.indexer_ingress.arn]
  }
  statement {
    sid       = "SendToClassQueue"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.indexer.arn]
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

resource "aws_iam_role" "indexer_pipe" {
  name               = "sink-indexer-pipe"
  assume_role_policy = data.aws_iam_policy_document.indexer_pipe_trust.json
}

resource "aws_iam_role_policy" "indexer_pipe" {
  name   = "sink-indexer-pipe"
  role   = aws_iam_role.indexer_pipe.id
  policy = data.aws_iam_policy_document.indexer_pipe.json
}

# Per-group FIFO lanes: the group is read from each event, and the EventBridge event id
# deduplicates redeliveries within SQS's 5-minute window.
resource "aws_pipes_pipe" "indexer" {
  name     = "sink-indexer"
  role_arn = aws_iam_role.indexer_pipe.arn
  source   = aws_sqs_queue.indexer_ingress.arn
  target   = aws_sqs_queue.indexer.arn
  source_parameters {
    sqs_queue_parameters {
      batch_size                         = 10
      maximum_batching_window_in_seconds = 0
    }
  }
  target_parameters {
    input_template = "<$.body>"
    sqs_queue_parameters {
      message_group_id         = "$.body.detail.conversation_id"
      message_deduplication_id = "$.body.id"
    }
  }
  depends_on = [aws_iam_role_policy.indexer_pipe]
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "indexer" {
  rule           = aws_cloudwatch_event_rule.indexer.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "indexer-queue"
  arn            = aws_sqs_queue.indexer_ingress.arn
  retry_policy {
    maximum_retry_attempts       = 12
    maximum_event_age_in_seconds = 7200
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "indexer_ingress_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.indexer_ingress.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.indexer.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "indexer_ingress" {
  queue_url = aws_sqs_queue.indexer_ingress.url
  policy    = data.aws_iam_policy_document.indexer_ingress_queue.json
}

resource "aws_cloudwatch_metric_alarm" "indexer_dlq_delivery_failed" {
  alarm_name        = "sink-indexer-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule sink-indexer: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "sink-bus"
    RuleName     = "sink-indexer"
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

resource "aws_cloudwatch_metric_alarm" "indexer_age" {
  alarm_name        = "sink-indexer.fifo-age"
  alarm_description = "Oldest indexer message is older than step max + 2 x step p95 (240s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "sink-indexer.fifo"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 240
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "indexer_dlq_depth" {
  alarm_name        = "sink-indexer-dlq.fifo-depth"
  alarm_description = "indexer dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-indexer-dlq.fifo"
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

resource "aws_cloudwatch_metric_alarm" "indexer_stalled" {
  alarm_name          = "sink-indexer.fifo-stalled"
  alarm_description   = "Stall canary: indexer deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "sink-indexer.fifo"
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
        QueueName = "sink-indexer.fifo"
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

data "aws_iam_policy_document" "indexer_worker_trust" {
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

data "aws_iam_policy_document" "indexer_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.indexer.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.indexer_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/inputs/events/index.requested/*", "${aws_s3_bucket.claimcheck.arn}/outputs/reviewer/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/indexer/*"]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["task.completed", "task.failed"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.errors", "sink.workers"]
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
    resources = ["${aws_cloudwatch_log_group.indexer.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/indexer/*"]
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

# fleet-worker role of indexer (lambda).
resource "aws_iam_role" "indexer_worker" {
  name               = "sink-indexer-worker"
  assume_role_policy = data.aws_iam_policy_document.indexer_worker_trust.json
}

resource "aws_iam_role_policy" "indexer_worker" {
  name   = "sink-indexer-worker"
  role   = aws_iam_role.indexer_worker.id
  policy = data.aws_iam_policy_document.indexer_worker.json
}

resource "aws_cloudwatch_log_group" "indexer" {
  name              = "/aws/lambda/sink-indexer"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

resource "aws_lambda_function" "indexer" {
  function_name = "sink-indexer"
  description   = "Indexes documents; an async tool."
  role          = aws_iam_role.indexer_worker.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 180
  memory_size   = 2048
  image_config {
    command = ["--mode", "lambda"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3 = "s3://${aws_s3_object.indexer_config.bucket}/${aws_s3_object.indexer_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.indexer_config.content)}"
      FLEET_DLQ_URL   = aws_sqs_queue.indexer_dlq.url
      FLEET_QUEUE_URL = aws_sqs_queue.indexer.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.indexer, aws_iam_role_policy.indexer_worker]
}

# The generated runtime/indexer.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "indexer_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/indexer/${filesha256("${path.module}/../runtime/indexer.json")}.json"
  content                = file("${path.module}/../runtime/indexer.json")
  content_type           = "application/json"
  server_side_encryption = "aws:kms"
  kms_key_id             = aws_kms_key.fleet.arn
  bucket_key_enabled     = true
  lifecycle {
    create_before_destroy = true
  }
}

# Partial batch responses: only failed messages return to the queue, not the whole batch.
resource "aws_lambda_event_source_mapping" "indexer" {
  event_source_arn                   = aws_sqs_queue.indexer.arn
  function_name                      = aws_lambda_function.indexer.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
