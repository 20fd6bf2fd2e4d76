terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100, < 7.0"
    }
  }
}

provider "aws" {
  region = "us-west-2"
  default_tags {
    tags = {
      fleet      = "tools"
      managed_by = "fleetc"
      team       = "developer-experience"
    }
  }
}

data "aws_caller_identity" "current" {
}

data "aws_partition" "current" {
}
