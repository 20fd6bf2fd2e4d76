resource "aws_cloudwatch_log_group" "delivery_sfn" {
  name              = "/aws/vendedlogs/states/sink-delivery"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

data "aws_iam_policy_document" "delivery_sfn_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery/*", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery:*"]
    }
  }
}

data "aws_iam_policy_document" "delivery_sfn" {
  statement {
    sid       = "DispatchToClassQueues"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.planner.arn, aws_sqs_queue.reviewer.arn]
  }
  statement {
    sid       = "DistributedMapStart"
    effect    = "Allow"
    actions   = ["states:StartExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Distributed Map child executions are named at run time: only <machine>/* and execution:<machine>/* can name them.
  statement {
    sid       = "DistributedMapChildren"
    effect    = "Allow"
    actions   = ["states:DescribeExecution", "states:StopExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:execution:sink-delivery/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards ResultWriter exports are objects Step Functions names at run time, under this workflow's fanout/<workflow>/ prefix only.
  statement {
    sid       = "FanOutResultWriter"
    effect    = "Allow"
    actions   = ["s3:AbortMultipartUpload", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/delivery/Fanout/*"]
  }
  statement {
    sid       = "StartApprovalRecorder"
    effect    = "Allow"
    actions   = ["states:StartExecution"]
    resources = [aws_sfn_state_machine.fleetc_approvals.arn]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
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

# Role of state machine sink-delivery: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "delivery_sfn" {
  name               = "sink-delivery-sfn"
  assume_role_policy = data.aws_iam_policy_document.delivery_sfn_trust.json
}

resource "aws_iam_role_policy" "delivery_sfn" {
  name   = "sink-delivery-sfn"
  role   = aws_iam_role.delivery_sfn.id
  policy = data.aws_iam_policy_document.delivery_sfn.json
}

resource "aws_sfn_state_machine" "delivery" {
  name     = "sink-delivery"
  type     = "STANDARD"
  role_arn = aws_iam_role.delivery_sfn.arn
  definition = templatefile("${path.module}/../statemachines/delivery.asl.json", {
    claim_check_bucket    = aws_s3_bucket.claimcheck.bucket
    approval_recorder_arn = aws_sfn_state_machine.fleetc_approvals.arn
    queue_url_planner     = aws_sqs_queue.planner.url
    queue_url_reviewer    = aws_sqs_queue.reviewer.url
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.delivery_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  publish    = true
  depends_on = [aws_iam_role_policy.delivery_sfn]
}

# Start executions of sink-delivery here (output state_machine_alias_arns): each runs on the version it started on.
resource "aws_sfn_alias" "delivery" {
  name = "live"
  routing_configuration {
    state_machine_version_arn = aws_sfn_state_machine.delivery.state_machine_version_arn
    weight                    = 100
  }
}

resource "aws_cloudwatch_log_group" "hotfix_sfn" {
  name              = "/aws/vendedlogs/states/sink-hotfix"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

data "aws_iam_policy_document" "hotfix_sfn_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-hotfix"]
    }
  }
}

data "aws_iam_policy_document" "hotfix_sfn" {
  statement {
    sid       = "DispatchToClassQueues"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.planner.arn, aws_sqs_queue.reviewer.arn, aws_sqs_queue.summarizer.arn]
  }
  statement {
    sid       = "StartApprovalRecorder"
    effect    = "Allow"
    actions   = ["states:StartExecution"]
    resources = [aws_sfn_state_machine.fleetc_approvals.arn]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
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

# Role of state machine sink-hotfix: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "hotfix_sfn" {
  name               = "sink-hotfix-sfn"
  assume_role_policy = data.aws_iam_policy_document.hotfix_sfn_trust.json
}

resource "aws_iam_role_policy" "hotfix_sfn" {
  name   = "sink-hotfix-sfn"
  role   = aws_iam_role.hotfix_sfn.id
  policy = data.aws_iam_policy_document.hotfix_sfn.json
}

resource "aws_sfn_state_machine" "hotfix" {
  name     = "sink-hotfix"
  type     = "STANDARD"
  role_arn = aws_iam_role.hotfix_sfn.arn
  definition = templatefile("${path.module}/../statemachines/hotfix.asl.json", {
    approval_recorder_arn = aws_sfn_state_machine.fleetc_approvals.arn
    queue_url_planner     = aws_sqs_queue.planner.url
    queue_url_reviewer    = aws_sqs_queue.reviewer.url
    queue_url_summarizer  = aws_sqs_queue.summarizer.url
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.hotfix_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.hotfix_sfn]
}

resource "aws_cloudwatch_log_group" "fleetc_approvals_sfn" {
  name              = "/aws/vendedlogs/states/sink-approvals"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

data "aws_iam_policy_document" "fleetc_approvals_sfn_trust" {
  statement {
    sid     = "AssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-approvals"]
    }
  }
}

data "aws_iam_policy_document" "fleetc_approvals_sfn" {
  statement {
    sid       = "RecordApprovalTokens"
    effect    = "Allow"
    actions   = ["dynamodb:PutItem"]
    resources = [aws_dynamodb_table.idempotency.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["approval#*"]
    }
  }
  statement {
    sid       = "AnnounceApprovals"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["approval.requested"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.approvals"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure"]
    resources = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-delivery/*", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-hotfix", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:sink-hotfix/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
  }
}

# Role of the approval recorder sink-approvals: put a token in the idempotency table and the notify event on the bus, nothing else.
resource "aws_iam_role" "fleetc_approvals_sfn" {
  name               = "sink-approvals-sfn"
  assume_role_policy = data.aws_iam_policy_document.fleetc_approvals_sfn_trust.json
}

resource "aws_iam_role_policy" "fleetc_approvals_sfn" {
  name   = "sink-approvals-sfn"
  role   = aws_iam_role.fleetc_approvals_sfn.id
  policy = data.aws_iam_policy_document.fleetc_approvals_sfn.json
}

resource "aws_sfn_state_machine" "fleetc_approvals" {
  name     = "sink-approvals"
  type     = "EXPRESS"
  role_arn = aws_iam_role.fleetc_approvals_sfn.arn
  definition = templatefile("${path.module}/../statemachines/fleetc/approvals.asl.json", {
    bus_name          = aws_cloudwatch_event_bus.fleet.name
    idempotency_table = aws_dynamodb_table.idempotency.name
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.fleetc_approvals_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.fleetc_approvals_sfn]
}
