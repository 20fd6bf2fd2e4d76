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
    notifier = aws_sqs_queue.notifier.url
    triage   = aws_sqs_queue.triage.url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per agent class."
  value = {
    notifier = aws_sqs_queue.notifier_dlq.url
    triage   = aws_sqs_queue.triage_dlq.url
  }
}

output "worker_role_arns" {
  description = "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role)."
  value = {
    notifier = aws_iam_role.notifier_worker.arn
    triage   = aws_iam_role.triage_worker.arn
  }
}

output "lambda_function_names" {
  description = "Function name per lambda class."
  value = {
    notifier = aws_lambda_function.notifier.function_name
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

output "keda_scaler_role_arn" {
  description = "Role the KEDA operator assumes to read the eks queues' depth (every TriggerAuthentication names it)."
  value       = aws_iam_role.keda_scaler.arn
}

output "idempotency_table" {
  description = "DynamoDB idempotency table."
  value       = aws_dynamodb_table.idempotency.name
}

output "claim_check_bucket" {
  description = "S3 bucket for claim-check payloads."
  value       = aws_s3_bucket.claimcheck.bucket
}

output "schema_registry" {
  description = "EventBridge Schema Registry holding the event contracts."
  value       = aws_schemas_registry.fleet.name
}
