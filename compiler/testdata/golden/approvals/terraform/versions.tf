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
  region = "eu-west-1"
  default_tags {
    tags = {
      fleet      = "refunds"
      managed_by = "fleetc"
    }
  }
}

data "aws_caller_identity" "current" {
}

data "aws_partition" "current" {
}
