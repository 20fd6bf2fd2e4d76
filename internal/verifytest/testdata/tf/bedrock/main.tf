terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.0"
    }
  }
}

resource "aws_bedrockagentcore_agent_runtime" "triage" {
  agent_runtime_name = "triage"
  role_arn           = "arn:aws:iam::123456789012:role/triage"

  agent_runtime_artifact {
    container_configuration {
      container_uri = "123456789012.dkr.ecr.us-east-1.amazonaws.com/triage:1"
    }
  }

  network_configuration {
    network_mode = "PUBLIC"
  }
}
