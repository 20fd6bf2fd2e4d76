resource "aws_sqs_queue" "work" {
name = "orders"
  delay_seconds=0
}
