//go:build tools

package fleetc

import (
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	_ "github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/aws/aws-sdk-go-v2/service/schemas"
	_ "github.com/aws/aws-sdk-go-v2/service/sfn"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/hcl/v2/hclwrite"
	_ "github.com/hashicorp/terraform-exec/tfexec"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "gopkg.in/yaml.v3"
	_ "sigs.k8s.io/yaml"
)
