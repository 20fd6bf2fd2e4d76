resource "aws_cloudwatch_log_group" "refund_sfn" {
  name              = "/aws/vendedlogs/states/refunds-refund"
  retention_in_days = 30
}

data "aws_iam_policy_document" "refund_sfn_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:refunds-refund"]
    }
  }
}

data "aws_iam_policy_document" "refund_sfn" {
  statement {
    sid       = "DispatchToClassQueues"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.draft.arn, aws_sqs_queue.pay.arn]
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
}

# Role of state machine refunds-refund: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "refund_sfn" {
  name               = "refunds-refund-sfn"
  assume_role_policy = data.aws_iam_policy_document.refund_sfn_trust.json
}

resource "aws_iam_role_policy" "refund_sfn" {
  name   = "refunds-refund-sfn"
  role   = aws_iam_role.refund_sfn.id
  policy = data.aws_iam_policy_document.refund_sfn.json
}

resource "aws_sfn_state_machine" "refund" {
  name     = "refunds-refund"
  type     = "STANDARD"
  role_arn = aws_iam_role.refund_sfn.arn
  definition = templatefile("${path.module}/../statemachines/refund.asl.json", {
    approval_recorder_arn = aws_sfn_state_machine.fleetc_approvals.arn
    queue_url_draft       = aws_sqs_queue.draft.url
    queue_url_pay         = aws_sqs_queue.pay.url
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.refund_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.refund_sfn]
}

resource "aws_cloudwatch_log_group" "fleetc_approvals_sfn" {
  name              = "/aws/vendedlogs/states/refunds-approvals"
  retention_in_days = 30
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
      values   = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:refunds-approvals"]
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
      values   = ["refund.approval.requested"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["refunds.approvals"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Task tokens belong to executions created at run time: <machine>/* names the executions of these machines only.
  statement {
    sid       = "TaskTokenCallbacks"
    effect    = "Allow"
    actions   = ["states:SendTaskFailure"]
    resources = ["arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:refunds-refund", "arn:${data.aws_partition.current.partition}:states:eu-west-1:${data.aws_caller_identity.current.account_id}:stateMachine:refunds-refund/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
  }
}

# Role of the approval recorder refunds-approvals: put a token in the idempotency table and the notify event on the bus, nothing else.
resource "aws_iam_role" "fleetc_approvals_sfn" {
  name               = "refunds-approvals-sfn"
  assume_role_policy = data.aws_iam_policy_document.fleetc_approvals_sfn_trust.json
}

resource "aws_iam_role_policy" "fleetc_approvals_sfn" {
  name   = "refunds-approvals-sfn"
  role   = aws_iam_role.fleetc_approvals_sfn.id
  policy = data.aws_iam_policy_document.fleetc_approvals_sfn.json
}

resource "aws_sfn_state_machine" "fleetc_approvals" {
  name     = "refunds-approvals"
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
