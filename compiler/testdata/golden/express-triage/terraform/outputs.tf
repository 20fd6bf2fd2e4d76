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
    classify = aws_sqs_queue.classify.url
    enrich   = aws_sqs_queue.enrich.url
    tag      = aws_sqs_queue.tag.url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per agent class."
  value = {
    classify = aws_sqs_queue.classify_dlq.url
    enrich   = aws_sqs_queue.enrich_dlq.url
    tag      = aws_sqs_queue.tag_dlq.url
  }
}

output "worker_role_arns" {
  description = "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role)."
  value = {
    classify = aws_iam_role.classify_worker.arn
    enrich   = aws_iam_role.enrich_worker.arn
    tag      = aws_iam_role.tag_worker.arn
  }
}

output "lambda_function_names" {
  description = "Function name per lambda class."
  value = {
    classify = aws_lambda_function.classify.function_name
    enrich   = aws_lambda_function.enrich.function_name
    tag      = aws_lambda_function.tag.function_name
  }
}

output "agentcore_runtime_arns" {
  description = "AgentCore runtime ARN per agentcore class."
  value       = {}
}

output "state_machine_arns" {
  description = "State machine ARN per workflow."
  value = {
    "bulk-tag"     = aws_sfn_state_machine.bulk_tag.arn
    "quick-triage" = aws_sfn_state_machine.quick_triage.arn
  }
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
