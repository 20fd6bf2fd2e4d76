data "aws_iam_policy_document" "keda_scaler" {
  statement {
    sid       = "ReadQueueDepth"
    effect    = "Allow"
    actions   = ["sqs:GetQueueAttributes"]
    resources = [aws_sqs_queue.planner.arn, aws_sqs_queue.reviewer.arn]
  }
}

# Attach to the KEDA operator's IAM role (output keda_scaler_policy_arn); the worker roles stay the workers' own.
resource "aws_iam_policy" "keda_scaler" {
  name        = "sink-keda-scaler"
  description = "Queue depth reads for the KEDA aws-sqs-queue scalers of fleet sink."
  policy      = data.aws_iam_policy_document.keda_scaler.json
}
