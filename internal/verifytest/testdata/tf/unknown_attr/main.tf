resource "aws_sqs_queue" "work" {
  name               = "orders"
  visibility_timeout = 300
}
