terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

resource "aws_sfn_state_machine" "dispatch" {
  name       = "dispatch"
  role_arn   = "arn:aws:iam::123456789012:role/sfn"
  definition = file("${path.module}/../statemachines/dispatch.asl.json")
}
