terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.18, < 7.0"
    }
  }
  # aws_bedrockagentcore_agent_runtime needs provider 6.18 or later.
}

provider "aws" {
  region = "eu-west-1"
  default_tags {
    tags = {
      app           = "kitchen-sink"
      "cost-center" = "4711"
      fleet         = "sink"
      managed_by    = "fleetc"
      team          = "platform"
    }
  }
}

data "aws_caller_identity" "current" {
}

data "aws_partition" "current" {
}
