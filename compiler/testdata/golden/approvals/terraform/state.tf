# pk = work key, sk = class; conditional puts claim a step, expires_at (TTL) ends the window.
resource "aws_dynamodb_table" "idempotency" {
  name         = "refunds-idempotency"
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
    enabled = true
  }
}

# Claim-check payloads: anything over a class's threshold travels as an S3 reference.
resource "aws_s3_bucket" "claimcheck" {
  bucket = "refunds-claimcheck-eu-west-1"
}

resource "aws_s3_bucket_public_access_block" "claimcheck" {
  bucket                  = aws_s3_bucket.claimcheck.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# tfsec:ignore:aws-s3-encryption-customer-key SSE-S3 (AES256) unless state.kms_key names a customer-managed key: payloads expire, and no key policy is needed.
resource "aws_s3_bucket_server_side_encryption_configuration" "claimcheck" {
  bucket = aws_s3_bucket.claimcheck.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
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
