data "aws_iam_policy_document" "tool_start" {
  statement {
    sid       = "CreateJob"
    effect    = "Allow"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem"]
    resources = [aws_dynamodb_table.jobs.arn]
  }
  statement {
    sid       = "RequestJob"
    effect    = "Allow"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.fleet.arn]
    condition {
      test     = "StringEquals"
      variable = "events:detail-type"
      values   = ["index.requested"]
    }
    condition {
      test     = "StringEquals"
      variable = "events:source"
      values   = ["sink.indexer"]
    }
  }
}

resource "aws_iam_policy" "tool_start" {
  name        = "sink-tool-start"
  description = "Async tools, start_*: create a job (conditional put) and publish its request event."
  policy      = data.aws_iam_policy_document.tool_start.json
}

data "aws_iam_policy_document" "tool_status" {
  statement {
    sid       = "ReadJob"
    effect    = "Allow"
    actions   = ["dynamodb:GetItem"]
    resources = [aws_dynamodb_table.jobs.arn]
  }
}

resource "aws_iam_policy" "tool_status" {
  name        = "sink-tool-status"
  description = "Async tools, get_*_status: read one job; nothing else."
  policy      = data.aws_iam_policy_document.tool_status.json
}
