# Dead letters of reviewer; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "reviewer_dlq" {
  name                       = "sink-reviewer-dlq"
  message_retention_seconds  = 1209600
  visibility_timeout_seconds = 300
  kms_master_key_id          = aws_kms_key.fleet.arn
}

resource "aws_sqs_queue" "reviewer" {
  name                       = "sink-reviewer"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 1350
  receive_wait_time_seconds  = 20
  delay_seconds              = 0
  kms_master_key_id          = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.reviewer_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only sink-reviewer may dead-letter into sink-reviewer-dlq.
resource "aws_sqs_queue_redrive_allow_policy" "reviewer_dlq" {
  queue_url = aws_sqs_queue.reviewer_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.reviewer.arn]
  })
}

resource "aws_cloudwatch_event_rule" "reviewer" {
  name           = "sink-reviewer"
  description    = "Routes review.requested to the reviewer queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    detail = {
      lang = ["go", "rust"]
    }
    "detail-type" = ["review.requested"]
    source        = ["sink.coordinator"]
  })
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "reviewer" {
  rule           = aws_cloudwatch_event_rule.reviewer.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "reviewer-queue"
  arn            = aws_sqs_queue.reviewer.arn
  retry_policy {
    maximum_retry_attempts       = 12
    maximum_event_age_in_seconds = 7200
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "reviewer_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.reviewer.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.reviewer.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "reviewer" {
  queue_url = aws_sqs_queue.reviewer.url
  policy    = data.aws_iam_policy_document.reviewer_queue.json
}

resource "aws_cloudwatch_metric_alarm" "reviewer_dlq_delivery_failed" {
  alarm_name        = "sink-reviewer-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule sink-reviewer: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "sink-bus"
    RuleName     = "sink-reviewer"
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

resource "aws_cloudwatch_metric_alarm" "reviewer_age" {
  alarm_name        = "sink-reviewer-age"
  alarm_description = "Oldest reviewer message is older than step max + 2 x step p95 (1140s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "sink-reviewer"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 1140
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "reviewer_dlq_depth" {
  alarm_name        = "sink-reviewer-dlq-depth"
  alarm_description = "reviewer dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-reviewer-dlq"
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

resource "aws_cloudwatch_metric_alarm" "reviewer_stalled" {
  alarm_name          = "sink-reviewer-stalled"
  alarm_description   = "Stall canary: reviewer deleted no message for 15 minutes while messages were waiting."
  comparison_operator = "GreaterThanOrEqualToThreshold"
  threshold           = 1
  evaluation_periods  = 15
  datapoints_to_alarm = 15
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  metric_query {
    id = "visible"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "ApproximateNumberOfMessagesVisible"
      dimensions = {
        QueueName = "sink-reviewer"
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
        QueueName = "sink-reviewer"
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

data "aws_iam_policy_document" "reviewer_worker_trust" {
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
      values   = ["sink-cluster"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-namespace"
      values   = ["sink"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-service-account"
      values   = ["reviewer-worker"]
    }
  }
}

data "aws_iam_policy_document" "reviewer_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.reviewer.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.reviewer_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/delivery/*", "${aws_s3_bucket.claimcheck.arn}/fanout/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/inputs/events/review.requested/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/delivery/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/outputs/concierge/*", "${aws_s3_bucket.claimcheck.arn}/outputs/summarizer/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/reviewer/*"]
  }
  statement {
    sid       = "DeferOverCapMessages"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.reviewer.arn]
  }
  statement {
    sid       = "PublishCompletionEvents"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["index.requested", "task.completed", "task.failed"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.errors", "sink.indexer", "sink.workers"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    resources = [aws_sfn_state_machine.delivery.arn, "${aws_sfn_state_machine.delivery.arn}/*", aws_sfn_state_machine.hotfix.arn, "${aws_sfn_state_machine.hotfix.arn}/*"]
  }
  statement {
    sid       = "InvokeRoutedModels"
    effect    = "Allow"
    actions   = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = ["arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0"]
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
      values   = ["arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    }
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

# fleet-worker role of reviewer (eks).
resource "aws_iam_role" "reviewer_worker" {
  name               = "sink-reviewer-worker"
  assume_role_policy = data.aws_iam_policy_document.reviewer_worker_trust.json
}

resource "aws_iam_role_policy" "reviewer_worker" {
  name   = "sink-reviewer-worker"
  role   = aws_iam_role.reviewer_worker.id
  policy = data.aws_iam_policy_document.reviewer_worker.json
}

# eks: the workers run as Deployment sink/reviewer-worker (k8s/reviewer/), scaled by KEDA on the queue;
# pods of ServiceAccount reviewer-worker get the worker role (one association per service account per cluster).
resource "aws_eks_pod_identity_association" "reviewer_worker" {
  cluster_name    = "sink-cluster"
  namespace       = "sink"
  service_account = "reviewer-worker"
  role_arn        = aws_iam_role.reviewer_worker.arn
}
