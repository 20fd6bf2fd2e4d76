resource "aws_cloudwatch_log_group" "bulk_tag_sfn" {
  name              = "/aws/vendedlogs/states/triage-bulk-tag"
  retention_in_days = 30
}

data "aws_iam_policy_document" "bulk_tag_sfn_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:triage-bulk-tag", "arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:triage-bulk-tag/*"]
    }
  }
}

data "aws_iam_policy_document" "bulk_tag_sfn" {
  statement {
    sid       = "InvokeClassFunctions"
    effect    = "Allow"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.tag.arn]
  }
  statement {
    sid       = "DistributedMapStart"
    effect    = "Allow"
    actions   = ["states:StartExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:triage-bulk-tag"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Distributed Map child executions are named at run time: only <machine>/* and execution:<machine>/* can name them.
  statement {
    sid       = "DistributedMapChildren"
    effect    = "Allow"
    actions   = ["states:DescribeExecution", "states:StopExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:execution:triage-bulk-tag/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards ResultWriter exports are objects Step Functions names at run time, under this workflow's fanout/<workflow>/ prefix only.
  statement {
    sid       = "FanOutResultWriter"
    effect    = "Allow"
    actions   = ["s3:AbortMultipartUpload", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/bulk-tag/TagFanOut/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
  }
}

# Role of state machine triage-bulk-tag: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "bulk_tag_sfn" {
  name               = "triage-bulk-tag-sfn"
  assume_role_policy = data.aws_iam_policy_document.bulk_tag_sfn_trust.json
}

resource "aws_iam_role_policy" "bulk_tag_sfn" {
  name   = "triage-bulk-tag-sfn"
  role   = aws_iam_role.bulk_tag_sfn.id
  policy = data.aws_iam_policy_document.bulk_tag_sfn.json
}

resource "aws_sfn_state_machine" "bulk_tag" {
  name     = "triage-bulk-tag"
  type     = "STANDARD"
  role_arn = aws_iam_role.bulk_tag_sfn.arn
  definition = templatefile("${path.module}/../statemachines/bulk-tag.asl.json", {
    claim_check_bucket = aws_s3_bucket.claimcheck.bucket
    function_arn_tag   = aws_lambda_function.tag.arn
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.bulk_tag_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.bulk_tag_sfn]
}

resource "aws_cloudwatch_log_group" "quick_triage_sfn" {
  name              = "/aws/vendedlogs/states/triage-quick-triage"
  retention_in_days = 30
}

data "aws_iam_policy_document" "quick_triage_sfn_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:triage-quick-triage"]
    }
  }
}

data "aws_iam_policy_document" "quick_triage_sfn" {
  statement {
    sid       = "InvokeClassFunctions"
    effect    = "Allow"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.classify.arn, aws_lambda_function.enrich.arn]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
  }
}

# Role of state machine triage-quick-triage: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "quick_triage_sfn" {
  name               = "triage-quick-triage-sfn"
  assume_role_policy = data.aws_iam_policy_document.quick_triage_sfn_trust.json
}

resource "aws_iam_role_policy" "quick_triage_sfn" {
  name   = "triage-quick-triage-sfn"
  role   = aws_iam_role.quick_triage_sfn.id
  policy = data.aws_iam_policy_document.quick_triage_sfn.json
}

resource "aws_sfn_state_machine" "quick_triage" {
  name     = "triage-quick-triage"
  type     = "EXPRESS"
  role_arn = aws_iam_role.quick_triage_sfn.arn
  definition = templatefile("${path.module}/../statemachines/quick-triage.asl.json", {
    function_arn_classify = aws_lambda_function.classify.arn
    function_arn_enrich   = aws_lambda_function.enrich.arn
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.quick_triage_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.quick_triage_sfn]
}
