# Dead letters of planner; retention outlives the source queue so triage never races expiry.
resource "aws_sqs_queue" "planner_dlq" {
  name                        = "sink-planner-dlq.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  message_retention_seconds   = 1209600
  visibility_timeout_seconds  = 300
  kms_master_key_id           = aws_kms_key.fleet.arn
}

resource "aws_sqs_queue" "planner" {
  name                        = "sink-planner.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  deduplication_scope         = "messageGroup"
  fifo_throughput_limit       = "perMessageGroupId"
  message_retention_seconds   = 345600
  visibility_timeout_seconds  = 900
  receive_wait_time_seconds   = 20
  delay_seconds               = 0
  kms_master_key_id           = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.planner_dlq.arn
    maxReceiveCount     = 3
  })
}

# Only sink-planner.fifo may dead-letter into sink-planner-dlq.fifo.
resource "aws_sqs_queue_redrive_allow_policy" "planner_dlq" {
  queue_url = aws_sqs_queue.planner_dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.planner.arn]
  })
}

resource "aws_cloudwatch_event_rule" "planner" {
  name           = "sink-planner"
  description    = "Routes task.requested to the planner queue."
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  event_pattern = jsonencode({
    detail = {
      kind     = ["plan", "replan"]
      priority = [1, 2]
    }
    "detail-type" = ["task.requested"]
    source        = ["sink.coordinator"]
  })
}

# A rule target can stamp only one static MessageGroupId on a FIFO queue, which would serialise
# the whole class: the rule delivers to this standard queue, and the pipe below sets the group per event.
resource "aws_sqs_queue" "planner_ingress" {
  name                       = "sink-planner-ingress"
  message_retention_seconds  = 345600
  visibility_timeout_seconds = 60
  receive_wait_time_seconds  = 20
  kms_master_key_id          = aws_kms_key.fleet.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.delivery_dlq.arn
    maxReceiveCount     = 3
  })
}

data "aws_iam_policy_document" "planner_pipe_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:pipes:eu-west-1:${data.aws_caller_identity.current.account_id}:pipe/sink-planner"]
    }
  }
}

data "aws_iam_policy_document" "planner_pipe" {
  statement {
    sid       = "ReadIngress"
    effect    = "Allow"
    actions   = ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.planner_ingress.arn]
  }
  statement {
    sid       = "SendToClassQueue"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.planner.arn]
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

resource "aws_iam_role" "planner_pipe" {
  name               = "sink-planner-pipe"
  assume_role_policy = data.aws_iam_policy_document.planner_pipe_trust.json
}

resource "aws_iam_role_policy" "planner_pipe" {
  name   = "sink-planner-pipe"
  role   = aws_iam_role.planner_pipe.id
  policy = data.aws_iam_policy_document.planner_pipe.json
}

# Per-group FIFO lanes: the group is read from each event, and the EventBridge event id
# deduplicates redeliveries within SQS's 5-minute window.
resource "aws_pipes_pipe" "planner" {
  name     = "sink-planner"
  role_arn = aws_iam_role.planner_pipe.arn
  source   = aws_sqs_queue.planner_ingress.arn
  target   = aws_sqs_queue.planner.arn
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
  depends_on = [aws_iam_role_policy.planner_pipe]
}

# Bounded retries, then the fleet's delivery DLQ: a loud drop beats a day of silent retries.
resource "aws_cloudwatch_event_target" "planner" {
  rule           = aws_cloudwatch_event_rule.planner.name
  event_bus_name = aws_cloudwatch_event_bus.fleet.name
  target_id      = "planner-queue"
  arn            = aws_sqs_queue.planner_ingress.arn
  retry_policy {
    maximum_retry_attempts       = 12
    maximum_event_age_in_seconds = 7200
  }
  dead_letter_config {
    arn = aws_sqs_queue.delivery_dlq.arn
  }
}

# Without this grant EventBridge delivery fails silently; aws:SourceArn limits it to this class's rule.
data "aws_iam_policy_document" "planner_ingress_queue" {
  statement {
    sid       = "RuleDelivery"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.planner_ingress.arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.planner.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "planner_ingress" {
  queue_url = aws_sqs_queue.planner_ingress.url
  policy    = data.aws_iam_policy_document.planner_ingress_queue.json
}

resource "aws_cloudwatch_metric_alarm" "planner_dlq_delivery_failed" {
  alarm_name        = "sink-planner-dlq-delivery-failed"
  alarm_description = "EventBridge could not dead-letter events of rule sink-planner: they are being dropped. Check the delivery DLQ policy."
  namespace         = "AWS/Events"
  metric_name       = "InvocationsFailedToBeSentToDLQ"
  dimensions = {
    EventBusName = "sink-bus"
    RuleName     = "sink-planner"
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

resource "aws_cloudwatch_metric_alarm" "planner_age" {
  alarm_name        = "sink-planner.fifo-age"
  alarm_description = "Oldest planner message is older than step max + 2 x step p95 (720s) for 5 minutes: workers are not keeping pace."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = "sink-planner.fifo"
  }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 720
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "planner_dlq_depth" {
  alarm_name        = "sink-planner-dlq.fifo-depth"
  alarm_description = "planner dead-lettered a message after 3 receives. Triage, fix, then redrive with StartMessageMoveTask."
  namespace         = "AWS/SQS"
  metric_name       = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = "sink-planner-dlq.fifo"
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

resource "aws_cloudwatch_metric_alarm" "planner_stalled" {
  alarm_name          = "sink-planner.fifo-stalled"
  alarm_description   = "Stall canary: planner deleted no message for 10 minutes while messages were waiting."
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
        QueueName = "sink-planner.fifo"
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
        QueueName = "sink-planner.fifo"
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

data "aws_iam_policy_document" "planner_worker_trust" {
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
      values   = ["planner-worker"]
    }
  }
}

data "aws_iam_policy_document" "planner_worker" {
  statement {
    sid       = "ConsumeClassQueue"
    effect    = "Allow"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.planner.arn]
  }
  statement {
    sid       = "DeadLetterOwnMessages"
    effect    = "Allow"
    actions   = ["sqs:GetQueueUrl", "sqs:SendMessage"]
    resources = [aws_sqs_queue.planner_dlq.arn]
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
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/delivery/*", "${aws_s3_bucket.claimcheck.arn}/fanout/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/inputs/events/task.requested/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/delivery/*", "${aws_s3_bucket.claimcheck.arn}/inputs/workflows/hotfix/*", "${aws_s3_bucket.claimcheck.arn}/outputs/concierge/*", "${aws_s3_bucket.claimcheck.arn}/outputs/triage/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Outputs are objects named per message under this class's own outputs/<class>/ prefix.
  statement {
    sid       = "WriteOwnClaimCheckOutputs"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/outputs/planner/*"]
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

# fleet-worker role of planner (eks).
resource "aws_iam_role" "planner_worker" {
  name               = "sink-planner-worker"
  assume_role_policy = data.aws_iam_policy_document.planner_worker_trust.json
}

resource "aws_iam_role_policy" "planner_worker" {
  name   = "sink-planner-worker"
  role   = aws_iam_role.planner_worker.id
  policy = data.aws_iam_policy_document.planner_worker.json
}

# eks: the workers run as Deployment sink/planner-worker (k8s/planner/), scaled by KEDA on the queue;
# pods of ServiceAccount planner-worker get the worker role (one association per service account per cluster).
resource "aws_eks_pod_identity_association" "planner_worker" {
  cluster_name    = "sink-cluster"
  namespace       = "sink"
  service_account = "planner-worker"
  role_arn        = aws_iam_role.planner_worker.arn
}
