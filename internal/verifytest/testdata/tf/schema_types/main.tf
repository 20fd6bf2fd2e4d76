terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.0"
    }
  }
}

resource "aws_sqs_queue" "work" {
  name          = "orders"
  delay_seconds = "soon"
}

resource "aws_bedrockagentcore_agent_runtime" "triage" {
  agent_runtime_name = "triage"
  role_arn           = "arn:aws:iam::123456789012:role/triage"
}

output "runtime_arn" {
  value = aws_bedrockagentcore_agent_runtime.triage.agent_runtime_arnx
}
