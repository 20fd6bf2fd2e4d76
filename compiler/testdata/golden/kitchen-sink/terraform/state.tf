data "aws_iam_policy_document" "fleet_key" {
  # tfsec:ignore:aws-iam-no-policy-wildcards A key policy's resource is always "*", the key itself; kms:* for this account leaves the key's use to IAM (the roles' UseFleetKeyVia<service> grants).
  statement {
    sid       = "KeyAdministration"
    effect    = "Allow"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A key policy's resource is always "*", the key itself; CloudWatch Logs may use it only for this account's log groups in the region (encryption context).
  statement {
    sid       = "CloudWatchLogs"
    effect    = "Allow"
    actions   = ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.eu-west-1.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${data.aws_partition.current.partition}:logs:eu-west-1:${data.aws_caller_identity.current.account_id}:log-group:*"]
    }
  }
  # tfsec:ignore:aws-iam-no-policy-wildcards A key policy's resource is always "*", the key itself; EventBridge may use it only for this account's rules, to deliver into the encrypted queues.
  statement {
    sid       = "EventBridgeToQueues"
    effect    = "Allow"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

# The fleet's customer-managed key (state.kms_key: create): bucket, tables, queues and log groups.
resource "aws_kms_key" "fleet" {
  description             = "fleetc fleet sink: claim-check bucket, tables, queues, log groups"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.fleet_key.json
}

resource "aws_kms_alias" "fleet" {
  name          = "alias/sink"
  target_key_id = aws_kms_key.fleet.key_id
}

# pk = work key, sk = class; conditional puts claim a step, expires_at (TTL) ends the window.
resource "aws_dynamodb_table" "idempotency" {
  name         = "sink-idempotency"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"
  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "sk"
    type = "S"
  }
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }
  point_in_time_recovery {
    enabled = true
  }
  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.fleet.arn
  }
}

# Async tool jobs (schemas/jobs.Record), JOB#<id>; by_owner lists a principal's jobs in a session,
# newest first; expiresAt (epoch seconds, the class's idempotency window) expires them.
resource "aws_dynamodb_table" "jobs" {
  name         = "sink-jobs"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "ownerKey"
    type = "S"
  }
  attribute {
    name = "createdAt"
    type = "S"
  }
  global_secondary_index {
    name            = "by_owner"
    hash_key        = "ownerKey"
    range_key       = "createdAt"
    projection_type = "ALL"
  }
  ttl {
    attribute_name = "expiresAt"
    enabled        = true
  }
  point_in_time_recovery {
    enabled = true
  }
  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.fleet.arn
  }
}

# Claim-check payloads: anything over a class's threshold travels as an S3 reference.
resource "aws_s3_bucket" "claimcheck" {
  bucket = "sink-claimcheck-eu-west-1"
}

resource "aws_s3_bucket_public_access_block" "claimcheck" {
  bucket                  = aws_s3_bucket.claimcheck.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "claimcheck" {
  bucket = aws_s3_bucket.claimcheck.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.fleet.arn
    }
    bucket_key_enabled = true
  }
}

data "aws_iam_policy_document" "claimcheck_tls_only" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.claimcheck.arn, "${aws_s3_bucket.claimcheck.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

# TLS only: any request over plain HTTP is denied.
resource "aws_s3_bucket_policy" "claimcheck" {
  bucket     = aws_s3_bucket.claimcheck.id
  policy     = data.aws_iam_policy_document.claimcheck_tls_only.json
  depends_on = [aws_s3_bucket_public_access_block.claimcheck]
}

# Payloads are transient: they expire, so the bucket is not versioned (no noncurrent copies to keep).
# Only the payload prefixes expire: the config objects under config/ live as long as their functions.
resource "aws_s3_bucket_lifecycle_configuration" "claimcheck" {
  bucket = aws_s3_bucket.claimcheck.id
  rule {
    id     = "expire-claim-checks-inputs"
    status = "Enabled"
    filter {
      prefix = "inputs/"
    }
    expiration {
      days = 14
    }
  }
  rule {
    id     = "expire-claim-checks-outputs"
    status = "Enabled"
    filter {
      prefix = "outputs/"
    }
    expiration {
      days = 14
    }
  }
  rule {
    id     = "expire-claim-checks-fanout"
    status = "Enabled"
    filter {
      prefix = "fanout/"
    }
    expiration {
      days = 14
    }
  }
}
