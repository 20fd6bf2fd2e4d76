terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

variable "key_attributes" {
  type    = map(string)
  default = { pk = "S", sk = "S" }
}

resource "aws_sqs_queue" "dlq" {
  name                      = "orders-dlq"
  message_retention_seconds = 1209600
}

resource "aws_sqs_queue" "work" {
  name                       = "orders"
  visibility_timeout_seconds = 300
  receive_wait_time_seconds  = 20
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = 5
  })
  tags = { fleet = "demo" }

  lifecycle {
    prevent_destroy = false
  }
}

resource "aws_dynamodb_table" "idem" {
  name         = "idempotency"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"

  dynamic "attribute" {
    for_each = var.key_attributes
    content {
      name = attribute.key
      type = attribute.value
    }
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }
}
