# Dead letters of concierge; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "concierge_dlq" {
  name                       = "sink-concierge-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  kms_master_key_id          = aws_kms_key.fleet.arn
}

resource "aws_sqs_queue" "concierge" {
  name                       = "sink-concierge"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 450
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  kms_master_key_id          = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.concierge_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only sink-concierge may dead-letter into sink-concierge-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "concierge_dlq" {
  queue_url = aws_sqs_queue.concierge_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.concierge.arn]
  })
}

resource "aws_cloudwatch_event_rule" "concierge" {
  name           = "sink-concierge"
  description    = "Routes chat.turn to the concierge queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    detail = {
      channel = ["web", "slack"]
    }
    "detail-type" = ["chat.turn"]
    source        = ["sink.chat"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "concierge" {
  rule           = aws_cloudwatch_event_rule.concierge.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "concierge-queue"
  arn            = aws_sqs_queue.concierge.arn
  retry_policy {
    maximum_retry_attempts       = 12
    maximum_event_age_in_seconds = 7200
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "concierge_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.concierge.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.concierge.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "concierge" {
  queue_url = aws_sqs_queue.concierge.url
  policy    = data.aws_iam_policy_document.concierge_queue.json
}

resource "aws_cloudwatch_metric_alarm" "concierge_dlq_delivery_failed" {
  alarm_name        = "sink-concierge-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule sink-concierge: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "sink-bus"
    RuleName     = "sink-concierge"
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

resource "aws_cloudwatch_metric_alarm" "concierge_age" {
  alarm_name        = "sink-concierge-age"
  alarm_description = "Oldest concierge message is older than step max + 2 x step p95 (340s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "sink-concierge"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 340
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "concierge_dlq_depth" {
  alarm_name        = "sink-concierge-dlq-depth"
  alarm_description = "concierge dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-concierge-dlq"
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

resource "aws_cloudwatch_metric_alarm" "concierge_stalled" {
  alarm_name          = "sink-concierge-stalled"
  alarm_description   = "Stall canary: concierge deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "sink-concierge"
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
        QueueName = "sink-concierge"
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

data "aws_iam_policy_document" "concierge_worker_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["bedrock-agentcore.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:bedrock-agentcore:eu-west-1:${data.aws_caller_identity.current.account_id}:*"]
    }
  }
}

data "aws_iam_policy_document" "concierge_worker" {
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/inputs/events/chat.turn/*", "${aws_s3_bucket.claimcheck.arn}/outputs/triage/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/concierge/*"]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["review.requested", "task.requested"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.coordinator"]
    }
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
  statement {
    sid       = "PullWorkerImage"
    effect    = "Allow"
    actions   = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    resources = ["arn:aws:ecr:eu-west-1:111122223333:repository/fleet-worker"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards ecr:GetAuthorizationToken has no resource-level permissions: AWS accepts only "*".
  statement {
    sid       = "AuthenticateToECR"
    effect    = "Allow"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/concierge/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards AgentCore names each runtime's log group at run time, under /aws/bedrock-agentcore/runtimes/ only.
  statement {
    sid       = "WriteRuntimeLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["arn:${data.aws_partition.current.partition}:logs:eu-west-1:${data.aws_caller_identity.current.account_id}:log-group:/aws/bedrock-agentcore/runtimes/*"]
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
}

# fleet-worker role of concierge (agentcore).
resource "aws_iam_role" "concierge_worker" {
  name               = "sink-concierge-worker"
  assume_role_policy = data.aws_iam_policy_document.concierge_worker_trust.json
}

resource "aws_iam_role_policy" "concierge_worker" {
  name   = "sink-concierge-worker"
  role   = aws_iam_role.concierge_worker.id
  policy = data.aws_iam_policy_document.concierge_worker.json
}

resource "aws_bedrockagentcore_agent_runtime" "concierge" {
  agent_runtime_name = "sink_concierge"
  description        = "Conversational agent with a session."
  role_arn           = aws_iam_role.concierge_worker.arn
  environment_variables = {
    FLEET_CONFIG_S3 = "s3://${aws_s3_object.concierge_config.bucket}/${aws_s3_object.concierge_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.concierge_config.content)}"
    FLEET_DLQ_URL   = aws_sqs_queue.concierge_dlq.url
    FLEET_MODE      = "agentcore"
    FLEET_QUEUE_URL = aws_sqs_queue.concierge.url
  }
  lifecycle_configuration = [{
    idle_runtime_session_timeout = 900
    max_lifetime                 = 3600
  }]
  agent_runtime_artifact {
    container_configuration {
      container_uri = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
    }
  }
  network_configuration {
    network_mode = "PUBLIC"
  }
  protocol_configuration {
    server_protocol = "HTTP"
  }
  request_header_configuration {
    request_header_allowlist = ["X-Amzn-Bedrock-AgentCore-Runtime-Custom-Fleet-Attempt", "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Fleet-Outcome"]
  }
  depends_on = [aws_iam_role_policy.concierge_worker]
}

# The generated runtime/concierge.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "concierge_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/runtime/concierge/${filesha256("${path.module}/../runtime/concierge.json")}.json"
  content                = file("${path.module}/../runtime/concierge.json")
  content_type           = "application/json"
  server_side_encryption = "aws:kms"
  kms_key_id             = aws_kms_key.fleet.arn
  bucket_key_enabled     = true
  lifecycle {
    create_before_destroy = true
  }
}

data "aws_iam_policy_document" "concierge_dispatch_trust" {
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

data "aws_iam_policy_document" "concierge_dispatch" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.concierge.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.concierge_dlq.arn]
  }
  statement {
    sid       = "InvokeClassRuntime"
    effect    = "Allow"
    actions   = ["bedrock-agentcore:InvokeAgentRuntime"]
    resources = [aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn, "${aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn}/runtime-endpoint/DEFAULT"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.concierge_dispatch.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/runtime/concierge/*"]
  }
  statement {
    sid       = "DeferOverCapMessages"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.concierge.arn]
  }
  statement {
    sid       = "UseFleetKeyViaS3"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
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

# Dispatcher of concierge: reads its queue and invokes its AgentCore runtime.
resource "aws_iam_role" "concierge_dispatch" {
  name               = "sink-concierge-dispatch"
  assume_role_policy = data.aws_iam_policy_document.concierge_dispatch_trust.json
}

resource "aws_iam_role_policy" "concierge_dispatch" {
  name   = "sink-concierge-dispatch"
  role   = aws_iam_role.concierge_dispatch.id
  policy = data.aws_iam_policy_document.concierge_dispatch.json
}

resource "aws_cloudwatch_log_group" "concierge_dispatch" {
  name              = "/aws/lambda/sink-concierge-dispatch"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

# fleet-worker --mode dispatch: each message of sink-concierge becomes an InvokeAgentRuntime call in its conversation's session.
resource "aws_lambda_function" "concierge_dispatch" {
  function_name = "sink-concierge-dispatch"
  description   = "Feeds AgentCore runtime sink_concierge from queue sink-concierge."
  role          = aws_iam_role.concierge_dispatch.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  architectures = ["arm64"]
  timeout       = 450
  memory_size   = 512
  image_config {
    command = ["--mode", "dispatch"]
  }
  environment {
    variables = {
      FLEET_CONFIG_S3         = "s3://${aws_s3_object.concierge_config.bucket}/${aws_s3_object.concierge_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.concierge_config.content)}"
      FLEET_DLQ_URL           = aws_sqs_queue.concierge_dlq.url
      FLEET_AGENT_RUNTIME_ARN = aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn
      FLEET_QUEUE_URL         = aws_sqs_queue.concierge.url
    }
  }
  depends_on = [aws_cloudwatch_log_group.concierge_dispatch, aws_iam_role_policy.concierge_dispatch]
}

# One message per invocation, partial batch responses: a failed message returns alone, after its retry delay.
resource "aws_lambda_event_source_mapping" "concierge_dispatch" {
  event_source_arn                   = aws_sqs_queue.concierge.arn
  function_name                      = aws_lambda_function.concierge_dispatch.arn
  batch_size                         = 1
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 10
  }
}
