data "aws_iam_policy_document" "async_tools_trust" {
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

data "aws_iam_policy_document" "async_tools" {
  statement {
    sid       = "CreateAndReadJobs"
    effect    = "Allow"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem"]
    resources = [aws_dynamodb_table.jobs.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["JOB#*"]
    }
  }
  statement {
    sid       = "ListOwnersJobs"
    effect    = "Allow"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/by_owner"]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["OWNER#*"]
    }
  }
  statement {
    sid       = "RequestJobs"
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
  # tfsec:ignore:aws-iam-no-policy-wildcards Log streams are created at run time inside this function's own log group (<group>:*).
  statement {
    sid       = "WriteFunctionLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.async_tools.arn}:*"]
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A config object is named by its content's SHA-256 (config/<path>/<sha256>.json) so a function version keeps reading its own during an apply: <path>/* is this function's configs, old and new, and nothing else.
  statement {
    sid       = "ReadOwnConfig"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.claimcheck.arn}/config/tools/tools/*"]
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
}

# Agent side of the async tools: request events and job items only; never a worker's permissions.
resource "aws_iam_role" "async_tools" {
  name               = "sink-async-tools"
  assume_role_policy = data.aws_iam_policy_document.async_tools_trust.json
}

resource "aws_iam_role_policy" "async_tools" {
  name   = "sink-async-tools"
  role   = aws_iam_role.async_tools.id
  policy = data.aws_iam_policy_document.async_tools.json
}

resource "aws_cloudwatch_log_group" "async_tools" {
  name              = "/aws/lambda/sink-async-tools"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.fleet.arn
}

# fleet-worker --mode tools: Bedrock Agents action groups (function details), AgentCore Gateway
# Lambda targets and the function URL (HTTP+JSON) all reach the same start/status/list code.
resource "aws_lambda_function" "async_tools" {
  function_name = "sink-async-tools"
  description   = "Async tools of fleet sink: start_*, get_*_status, list_my_jobs."
  role          = aws_iam_role.async_tools.arn
  package_type  = "Image"
  image_uri     = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/fleet-worker:0.1.0"
  timeout       = 30
  memory_size   = 256
  image_config {
    command = ["--mode", "tools"]
  }
  environment {
    variables = {
      FLEET_TOOLS_S3 = "s3://${aws_s3_object.async_tools_config.bucket}/${aws_s3_object.async_tools_config.key}?expected-bucket-owner=${data.aws_caller_identity.current.account_id}&sha256=${sha256(aws_s3_object.async_tools_config.content)}"
    }
  }
  depends_on = [aws_cloudwatch_log_group.async_tools, aws_iam_role_policy.async_tools]
}

# The generated tools/tools.json, read by the worker at start (FLEET_*_S3 names it and its SHA-256).
resource "aws_s3_object" "async_tools_config" {
  bucket                 = aws_s3_bucket.claimcheck.id
  key                    = "config/tools/tools/${filesha256("${path.module}/../tools/tools.json")}.json"
  content                = file("${path.module}/../tools/tools.json")
  content_type           = "application/json"
  server_side_encryption = "aws:kms"
  kms_key_id             = aws_kms_key.fleet.arn
  bucket_key_enabled     = true
  lifecycle {
    create_before_destroy = true
  }
}

# HTTP+JSON and MCP callers sign their requests (SigV4); nothing reaches the tools anonymously.
resource "aws_lambda_function_url" "async_tools" {
  function_name      = aws_lambda_function.async_tools.function_name
  authorization_type = "AWS_IAM"
}

# Bedrock Agents of this account may call the tools as an action group (function details).
resource "aws_lambda_permission" "async_tools_bedrock_agents" {
  statement_id   = "BedrockAgentsInvoke"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.async_tools.function_name
  principal      = "bedrock.amazonaws.com"
  source_account = data.aws_caller_identity.current.account_id
  source_arn     = "arn:${data.aws_partition.current.partition}:bedrock:eu-west-1:${data.aws_caller_identity.current.account_id}:agent/*"
}

data "aws_iam_policy_document" "async_tools_invoke" {
  # tfsec:ignore:aws-iam-no-policy-wildcards <function>:* names the function's versions and aliases, which a caller may invoke by qualified ARN; no other function.
  statement {
    sid       = "InvokeTools"
    effect    = "Allow"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.async_tools.arn, "${aws_lambda_function.async_tools.arn}:*"]
  }
  statement {
    sid       = "InvokeToolsURL"
    effect    = "Allow"
    actions   = ["lambda:InvokeFunctionUrl"]
    resources = [aws_lambda_function.async_tools.arn]
    condition {
      test     = "StringEquals"
      variable = "lambda:FunctionUrlAuthType"
      values   = ["AWS_IAM"]
    }
  }
}

# Attach to an AgentCore Gateway's execution role (Lambda target) or any caller of the function URL.
resource "aws_iam_policy" "async_tools_invoke" {
  name        = "sink-async-tools-invoke"
  description = "Call the async tools of fleet sink (Lambda invoke and the AWS_IAM function URL)."
  policy      = data.aws_iam_policy_document.async_tools_invoke.json
}

resource "aws_cloudwatch_log_metric_filter" "indexer_failed_jobs" {
  name           = "sink-indexer-failed-jobs"
  log_group_name = aws_cloudwatch_log_group.indexer.name
  pattern        = "{ $.msg = \"job FAILED\" }"
  metric_transformation {
    name      = "FailedJobs"
    namespace = "fleetc/jobs"
    value     = "1"
    dimensions = {
      class = "$.class"
    }
    unit = "Count"
  }
}

resource "aws_cloudwatch_metric_alarm" "indexer_failed_jobs" {
  alarm_name        = "sink-indexer-failed-jobs"
  alarm_description = "indexer marked a job FAILED: get_indexer_status answers replan. Triage the DLQ."
  namespace         = "fleetc/jobs"
  metric_name       = "FailedJobs"
  dimensions = {
    class = "indexer"
  }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  depends_on          = [aws_cloudwatch_log_metric_filter.indexer_failed_jobs]
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}
