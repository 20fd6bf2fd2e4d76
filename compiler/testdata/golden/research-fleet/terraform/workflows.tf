resource "aws_cloudwatch_log_group" "conversation_sfn" {
  name              = "/aws/vendedlogs/states/research-conversation"
  retention_in_days = 30
}

data "aws_iam_policy_document" "conversation_sfn_trust" {
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
      values   = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:research-conversation", "arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:research-conversation/*"]
    }
  }
}

data "aws_iam_policy_document" "conversation_sfn" {
  statement {
    sid       = "DispatchToClassQueues"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.coder.arn, aws_sqs_queue.researcher.arn]
  }
  statement {
    sid       = "DistributedMapStart"
    effect    = "Allow"
    actions   = ["states:StartExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:stateMachine:research-conversation"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Distributed Map child executions are named at run time: only <machine>/* and execution:<machine>/* can name them.
  statement {
    sid       = "DistributedMapChildren"
    effect    = "Allow"
    actions   = ["states:DescribeExecution", "states:StopExecution"]
    resources = ["arn:${data.aws_partition.current.partition}:states:us-east-1:${data.aws_caller_identity.current.account_id}:execution:research-conversation/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards ResultWriter exports are objects Step Functions names at run time, under this workflow's fanout/<workflow>/ prefix only.
  statement {
    sid       = "FanOutResultWriter"
    effect    = "Allow"
    actions   = ["s3:AbortMultipartUpload", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:PutObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/fanout/conversation/SubQueries/*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards Step Functions log delivery (logs:CreateLogDelivery and friends) supports no resource-level permissions: AWS documents only "*".
  statement {
    sid       = "LogDelivery"
    effect    = "Allow"
    actions   = ["logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"]
    resources = ["*"]
  }
}

# Role of state machine research-conversation: send to the queues it dispatches to and invoke the functions it calls synchronously, nothing else.
resource "aws_iam_role" "conversation_sfn" {
  name               = "research-conversation-sfn"
  assume_role_policy = data.aws_iam_policy_document.conversation_sfn_trust.json
}

resource "aws_iam_role_policy" "conversation_sfn" {
  name   = "research-conversation-sfn"
  role   = aws_iam_role.conversation_sfn.id
  policy = data.aws_iam_policy_document.conversation_sfn.json
}

resource "aws_sfn_state_machine" "conversation" {
  name     = "research-conversation"
  type     = "STANDARD"
  role_arn = aws_iam_role.conversation_sfn.arn
  definition = templatefile("${path.module}/../statemachines/conversation.asl.json", {
    claim_check_bucket   = aws_s3_bucket.claimcheck.bucket
    queue_url_coder      = aws_sqs_queue.coder.url
    queue_url_researcher = aws_sqs_queue.researcher.url
  })
  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.conversation_sfn.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
  depends_on = [aws_iam_role_policy.conversation_sfn]
}
