output "bus_name" {
  description = "EventBridge bus the fleet publishes to."
  value       = aws_cloudwatch_event_bus.fleet.name
}

output "bus_arn" {
  description = "EventBridge bus ARN."
  value       = aws_cloudwatch_event_bus.fleet.arn
}

output "delivery_dlq_url" {
  description = "Queue of events EventBridge could not deliver to a class queue."
  value       = aws_sqs_queue.delivery_dlq.url
}

output "queue_urls" {
  description = "Work queue URL per agent class."
  value = {
    "cdk-synth"         = aws_sqs_queue.cdk_synth.url
    "release-assistant" = aws_sqs_queue.release_assistant.url
    "synth-alerts"      = aws_sqs_queue.synth_alerts.url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per agent class."
  value = {
    "cdk-synth"         = aws_sqs_queue.cdk_synth_dlq.url
    "release-assistant" = aws_sqs_queue.release_assistant_dlq.url
    "synth-alerts"      = aws_sqs_queue.synth_alerts_dlq.url
  }
}

output "worker_role_arns" {
  description = "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role)."
  value = {
    "cdk-synth"         = aws_iam_role.cdk_synth_worker.arn
    "release-assistant" = aws_iam_role.release_assistant_worker.arn
    "synth-alerts"      = aws_iam_role.synth_alerts_worker.arn
  }
}

output "lambda_function_names" {
  description = "Function name per lambda class."
  value = {
    "cdk-synth"         = aws_lambda_function.cdk_synth.function_name
    "release-assistant" = aws_lambda_function.release_assistant.function_name
    "synth-alerts"      = aws_lambda_function.synth_alerts.function_name
  }
}

output "agentcore_runtime_arns" {
  description = "AgentCore runtime ARN per agentcore class."
  value       = {}
}

output "state_machine_arns" {
  description = "State machine ARN per workflow."
  value       = {}
}

output "idempotency_table" {
  description = "DynamoDB idempotency table."
  value       = aws_dynamodb_table.idempotency.name
}

output "jobs_table" {
  description = "DynamoDB table of async tool jobs."
  value       = aws_dynamodb_table.jobs.name
}

output "tools_function_name" {
  description = "Lambda function serving the async tools (Bedrock Agents action group, AgentCore Gateway target)."
  value       = aws_lambda_function.async_tools.function_name
}

output "tools_function_arn" {
  description = "ARN of the async tools function."
  value       = aws_lambda_function.async_tools.arn
}

output "tools_function_url" {
  description = "Function URL (AWS_IAM) of the async tools: HTTP+JSON under /tools/, MCP at /mcp."
  value       = aws_lambda_function_url.async_tools.function_url
}

output "tools_role_arn" {
  description = "Role of the async tools function: request events and job items only."
  value       = aws_iam_role.async_tools.arn
}

output "tools_invoke_policy_arn" {
  description = "Attach to an AgentCore Gateway execution role or a function URL caller."
  value       = aws_iam_policy.async_tools_invoke.arn
}

output "claim_check_bucket" {
  description = "S3 bucket for claim-check payloads."
  value       = aws_s3_bucket.claimcheck.bucket
}

output "schema_registry" {
  description = "EventBridge Schema Registry holding the event contracts."
  value       = aws_schemas_registry.fleet.name
}
