# A value only the provider itself rejects: Terraform's schema says number, the provider's
# validator says 0-43200 (12 hours, SQS's maximum visibility timeout).
resource "aws_sqs_queue" "orders" {
  name                       = "orders"
  visibility_timeout_seconds = 50000
}
