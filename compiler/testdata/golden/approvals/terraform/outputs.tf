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
    audit = aws_sqs_queue.audit.url
    draft = aws_sqs_queue.draft.url
    pay   = aws_sqs_queue.pay.url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per agent class."
  value = {
    audit = aws_sqs_queue.audit_dlq.url
    draft = aws_sqs_queue.draft_dlq.url
    pay   = aws_sqs_queue.pay_dlq.url
  }
}

output "worker_role_arns" {
  description = "IAM role ARN per agent class (EKS Pod Identity, Lambda execution or AgentCore runtime role)."
  value = {
    audit = aws_iam_role.audit_worker.arn
    draft = aws_iam_role.draft_worker.arn
    pay   = aws_iam_role.pay_worker.arn
  }
}

output "lambda_function_names" {
  description = "Function name per lambda class."
  value = {
    audit = aws_lambda_function.audit.function_name
    draft = aws_lambda_function.draft.function_name
    pay   = aws_lambda_function.pay.function_name
  }
}

output "agentcore_runtime_arns" {
  description = "AgentCore runtime ARN per agentcore class."
  value       = {}
}

output "state_machine_arns" {
  description = "State machine ARN per workflow."
  value = {
    refund = aws_sfn_state_machine.refund.arn
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
