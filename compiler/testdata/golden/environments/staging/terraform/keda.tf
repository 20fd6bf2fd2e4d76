data "aws_iam_policy_document" "keda_scaler_trust" {
  statement {
    sid     = "KEDAOperator"
    effect  = "Allow"
    actions = ["sts:AssumeRole", "sts:TagSession"]
    principals {
      type        = "AWS"
      identifiers = ["arn:aws:iam::222233334444:role/keda-operator"]
    }
  }
}

data "aws_iam_policy_document" "keda_scaler" {
  statement {
    sid       = "ReadQueueDepth"
    effect    = "Allow"
    actions   = ["sqs:GetQueueAttributes"]
    resources = [aws_sqs_queue.triage.arn]
  }
}

# Assumed by the KEDA operator (arn:aws:iam::222233334444:role/keda-operator) for the aws-sqs-queue scalers of the eks classes;
# k8s/*/triggerauthentication.yaml names it by ARN.
resource "aws_iam_role" "keda_scaler" {
  name               = "support-staging-keda-scaler"
  assume_role_policy = data.aws_iam_policy_document.keda_scaler_trust.json
  lifecycle {
    precondition {
      condition     = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:role/support-staging-keda-scaler" == "arn:aws:iam::222233334444:role/support-staging-keda-scaler"
      error_message = "The TriggerAuthentications name arn:aws:iam::222233334444:role/support-staging-keda-scaler (account of worker.eks.keda_operator_role); apply this configuration in that account, or correct keda_operator_role and rebuild."
    }
  }
}

resource "aws_iam_role_policy" "keda_scaler" {
  name   = "support-staging-keda-scaler"
  role   = aws_iam_role.keda_scaler.id
  policy = data.aws_iam_policy_document.keda_scaler.json
}
