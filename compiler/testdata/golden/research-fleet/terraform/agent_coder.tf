# Dead letters of coder; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "coder_dlq" {
  name                        = "research-coder-dlq.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  message_retention_seconds   = 1209600
  visibility_timeout_seconds  = 300
  sqs_managed_sse_enabled     = true
}

resource "aws_sqs_queue" "coder" {
  name                        = "research-coder.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  message_retention_seconds   = 345600
  visibility_timeout_seconds  = 1800
  receive_wait_time_seconds   = 20
  delay_seconds               = 0
  sqs_managed_sse_enabled     = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.coder_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only research-coder.fifo may dead-letter into research-coder-dlq.fifo.
resource "aws_sqs_queue_redrive_allow_policy" "coder_dlq" {
  queue_url = aws_sqs_queue.coder_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.coder.arn]
  })
}

resource "aws_cloudwatch_event_rule" "coder" {
  name           = "research-coder"
  description    = "Routes agent.step.requested to the coder queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    detail = {
      agent_class = ["coder"]
    }
    "detail-type" = ["agent.step.requested"]
    source        = ["fleet.coordinator"]
  })
}

# A rule target can stamp only one static MessageGroupId on a FIFO queue, which would serialise
# the whole class: the rule delivers to this standard queue, and the pipe below sets the group per event.
resource "aws_sqs_queue" "coder_ingress" {
  name                       = "research-coder-ingress"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 60
  receive_wait_time_seconds  = 20
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.delivery_dlq.arn
    maxReceiveCount     = 3
  })
}

data "aws_iam_policy_document" "coder_pipe_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:pipes:us-east-1:${data.aws_caller_identity.current.account_id}:pipe/research-coder"]
    }
  }
}

data "aws_iam_policy_document" "coder_pipe" {
  statement {
    sid       = "ReadIngress"
    effect    = "Allow"
    actions   = ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.coder_ingress.arn]
  }
  statement {
    sid       = "SendToClassQueue"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.coder.arn]
  }
}

resource "aws_iam_role" "coder_pipe" {
  name               = "research-coder-pipe"
  assume_role_policy = data.aws_iam_policy_document.coder_pipe_trust.json
}

resource "aws_iam_role_policy" "coder_pipe" {
  name   = "research-coder-pipe"
  role   = aws_iam_role.coder_pipe.id
  policy = data.aws_iam_policy_document.coder_pipe.json
}

# Per-group FIFO lanes: the group is read from each event, and the EventBridge event id
# deduplicates redeliveries within SQS's 5-minute window.
resource "aws_pipes_pipe" "coder" {
  name     = "research-coder"
  role_arn = aws_iam_role.coder_pipe.arn
  source   = aws_sqs_queue.coder_ingress.arn
  target   = aws_sqs_queue.coder.arn
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
  depends_on = [aws_iam_role_policy.coder_pipe]
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "coder" {
  rule           = aws_cloudwatch_event_rule.coder.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "coder-queue"
  arn            = aws_sqs_queue.coder_ingress.arn
  retry_policy {
    maximum_retry_attempts       = 24
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "coder_ingress_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.coder_ingress.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.coder.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "coder_ingress" {
  queue_url = aws_sqs_queue.coder_ingress.url
  policy    = data.aws_iam_policy_document.coder_ingress_queue.json
}

resource "aws_cloudwatch_metric_alarm" "coder_dlq_delivery_failed" {
  alarm_name        = "research-coder-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule research-coder: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "research-fleet"
    RuleName     = "research-coder"
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

resource "aws_cloudwatch_metric_alarm" "coder_age" {
  alarm_name        = "research-coder.fifo-age"
  alarm_description = "Oldest coder message is older than step max + 2 x step p95 (1560s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "research-coder.fifo"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 1560
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "coder_dlq_depth" {
  alarm_name        = "research-coder-dlq.fifo-depth"
  alarm_description = "coder dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "research-coder-dlq.fifo"
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

resource "aws_cloudwatch_metric_alarm" "coder_stalled" {
  alarm_name          = "research-coder.fifo-stalled"
  alarm_description   = "Stall canary: coder deleted no message for 20 minutes while messages were waiting."
  comparison_operator = "GreaterThanOrEqualToThreshold"
  threshold           = 1
  evaluation_periods  = 20
  datapoints_to_alarm = 20
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  metric_query {
    id = "visible"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "ApproximateNumberOfMessagesVisible"
      dimensions = {
        QueueName = "research-coder.fifo"
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
        QueueName = "research-coder.fifo"
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

data "aws_iam_policy_document" "coder_worker_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole", "sts:TagSession"]
    principals {
      type        = "Service"
      identifiers = ["pods.eks.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/eks-cluster-name"
      values   = ["agents-prod"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-namespace"
      values   = ["agents"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-service-account"
      values   = ["coder-worker"]
    }
  }
}

data "aws_iam_policy_document" "coder_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.coder.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.coder_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/conversation/*", "${aws_s3_bucket.claimcheck.arn}/inputs/events/agent.step.requested/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/conversation/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/coder/*"]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["agent.step.completed"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["fleet.workers"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    resources = [aws_sfn_state_machine.conversation.arn, "${aws_sfn_state_machine.conversation.arn}/*"]
  }
  statement {
    sid       = "InvokeRoutedModels"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"]
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
      values   = ["arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:us-east-1:${data.aws_caller_identity.current.account_id}:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    }
  }
}

# fleet-worker role of coder (eks).
resource "aws_iam_role" "coder_worker" {
  name               = "research-coder-worker"
  assume_role_policy = data.aws_iam_policy_document.coder_worker_trust.json
}

resource "aws_iam_role_policy" "coder_worker" {
  name   = "research-coder-worker"
  role   = aws_iam_role.coder_worker.id
  policy = data.aws_iam_policy_document.coder_worker.json
}

# eks: the workers run as Deployment agents/coder-worker (k8s/coder/), scaled by KEDA on the queue;
# pods of ServiceAccount coder-worker get the worker role (one association per service account per cluster).
resource "aws_eks_pod_identity_association" "coder_worker" {
  cluster_name    = "agents-prod"
  namespace       = "agents"
  service_account = "coder-worker"
  role_arn        = aws_iam_role.coder_worker.arn
}
