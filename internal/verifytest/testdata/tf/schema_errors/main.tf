resource "aws_sqs_queue" "computed" {
  name = "q"
  arn  = "arn:aws:sqs:us-east-1:123456789012:q"
}

resource "aws_sqs_queu" "typo" {
  name = "q"
}

resource "aws_dynamodb_table" "t" {
  hash_key = "pk"

  ttl {
    attribute_name = "a"
  }
  ttl {
    attribute_name = "b"
  }

  bogus_block {}

  dynamic "attribute" {
    for_each = ["pk"]
    content {
      name  = attribute.value
      type  = "S"
      color = "red"
    }
  }
}

resource "aws_sqs_queue" "meta_ok" {
  name     = "q"
  for_each = toset(["a"])
}

resource "aws_dynamodb_table" "attr_form" {
  name = "t"
  ttl  = [{ attribute_name = "x", enabled = true }]
}

data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["sqs:SendMessage"]
    resources = ["*"]
    principal = "x"
  }
}
