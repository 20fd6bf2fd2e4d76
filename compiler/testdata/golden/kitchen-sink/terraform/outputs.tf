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
    concierge  = aws_sqs_queue.concierge.url
    indexer    = aws_sqs_queue.indexer.url
    planner    = aws_sqs_queue.planner.url
    reviewer   = aws_sqs_queue.reviewer.url
    summarizer = aws_sqs_queue.summarizer.url
    triage     = aws_sqs_queue.triage.url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per agent class."
  value = {
    concierge  = aws_sqs_queue.concierge_dlq.url
    indexer    = aws_sqs_queue.indexer_dlq.url
    planner    = aws_sqs_queue.planner_dlq.url
    reviewer   = aws_sqs_queue.reviewer_dlq.url
    summarizer = aws_sqs_queue.summarizer_dlq.url
    triage     = aws_sqs_queue.triage_dlq.url
  }
}

output "worker_role_arns" {
  description = "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role)."
  value = {
    concierge  = aws_iam_role.concierge_worker.arn
    indexer    = aws_iam_role.indexer_worker.arn
    planner    = aws_iam_role.planner_worker.arn
    reviewer   = aws_iam_role.reviewer_worker.arn
    summarizer = aws_iam_role.summarizer_worker.arn
    triage     = aws_iam_role.triage_worker.arn
  }
}

output "lambda_function_names" {
  description = "Function name per lambda class."
  value = {
    indexer    = aws_lambda_function.indexer.function_name
    summarizer = aws_lambda_function.summarizer.function_name
  }
}

output "agentcore_runtime_arns" {
  description = "AgentCore runtime ARN per agentcore class."
  value = {
    concierge = aws_bedrockagentcore_agent_runtime.concierge.agent_runtime_arn
    triage    = aws_bedrockagentcore_agent_runtime.triage.agent_runtime_arn
  }
}

output "state_machine_arns" {
  description = "State machine ARN per workflow."
  value = {
    delivery = aws_sfn_state_machine.delivery.arn
    hotfix   = aws_sfn_state_machine.hotfix.arn
  }
}

output "state_machine_alias_arns" {
  description = "Alias live per workflow with a rollout: start executions here."
  value = {
    delivery = aws_sfn_alias.delivery.arn
  }
}

output "keda_scaler_role_arn" {
  description = "Role the KEDA operator assumes to read the eks queues' depth (every TriggerAuthentication names it)."
  value       = aws_iam_role.keda_scaler.arn
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
