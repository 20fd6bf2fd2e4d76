// Package lifecycle is what fleetc knows about the life of the AWS resources it emits: which
// argument changes make the hashicorp/aws provider destroy and re-create a resource, and what
// is lost when one is destroyed. fleetc diff predicts replacements from it; fleetc plan, apply
// and destroy name what a replacement destroys and guard the stateful resources with it.
package lifecycle

import (
	"strconv"
	"strings"
)

// forceNew lists, for every resource type fleetc emits, the arguments whose change makes the
// hashicorp/aws provider destroy and re-create the resource (ForceNew / RequiresReplace in
// the provider's schema, 5.x and 6.x alike). Nested blocks are named by their top-level
// block. review's TestForceNewCoversEveryEmittedType keeps the table complete, and the
// kumo-backed TestFullLoopOnKumo (cmd/fleetc/cli) holds fleetc diff's predictions built on it
// to what `terraform plan` really does.
var forceNew = map[string][]string{
	"aws_bedrockagentcore_agent_runtime":                 {"agent_runtime_name"},
	"aws_cloudwatch_dashboard":                           {"dashboard_name"},
	"aws_cloudwatch_event_archive":                       {"name", "event_source_arn"},
	"aws_cloudwatch_event_bus":                           {"name", "event_source_name"},
	"aws_cloudwatch_event_rule":                          {"name", "name_prefix", "event_bus_name"},
	"aws_cloudwatch_event_target":                        {"rule", "target_id", "event_bus_name"},
	"aws_cloudwatch_log_group":                           {"name", "name_prefix", "log_group_class"},
	"aws_cloudwatch_log_metric_filter":                   {"log_group_name"},
	"aws_cloudwatch_metric_alarm":                        {"alarm_name"},
	"aws_codedeploy_app":                                 {"compute_platform"},
	"aws_codedeploy_deployment_config":                   {"deployment_config_name", "compute_platform", "minimum_healthy_hosts", "traffic_routing_config", "zonal_config"},
	"aws_codedeploy_deployment_group":                    {"app_name"},
	"aws_dynamodb_table":                                 {"name", "hash_key", "range_key", "local_secondary_index"},
	"aws_eks_pod_identity_association":                   {"cluster_name", "namespace", "service_account"},
	"aws_iam_policy":                                     {"name", "name_prefix", "path", "description"},
	"aws_iam_role":                                       {"name", "name_prefix", "path"},
	"aws_iam_role_policy":                                {"name", "name_prefix", "role"},
	"aws_iam_role_policy_attachment":                     {"role", "policy_arn"},
	"aws_lambda_alias":                                   {"name", "function_name"},
	"aws_lambda_event_source_mapping":                    {"event_source_arn", "starting_position", "starting_position_timestamp"},
	"aws_lambda_function":                                {"function_name", "package_type"},
	"aws_lambda_function_url":                            {"function_name", "qualifier"},
	"aws_lambda_permission":                              {"action", "event_source_token", "function_name", "function_url_auth_type", "principal", "principal_org_id", "qualifier", "source_account", "source_arn", "statement_id", "statement_id_prefix"},
	"aws_pipes_pipe":                                     {"name", "name_prefix", "source"},
	"aws_s3_bucket":                                      {"bucket", "bucket_prefix", "object_lock_enabled"},
	"aws_s3_bucket_lifecycle_configuration":              {"bucket", "expected_bucket_owner"},
	"aws_s3_bucket_policy":                               {"bucket"},
	"aws_s3_bucket_public_access_block":                  {"bucket"},
	"aws_s3_bucket_server_side_encryption_configuration": {"bucket", "expected_bucket_owner"},
	"aws_s3_bucket_versioning":                           {"bucket", "expected_bucket_owner"},
	"aws_s3_object":                                      {"bucket", "key"},
	"aws_schemas_registry":                               {"name"},
	"aws_schemas_schema":                                 {"name", "registry_name"},
	"aws_sfn_alias":                                      {"name"},
	"aws_sfn_state_machine":                              {"name", "name_prefix", "type"},
	"aws_sns_topic":                                      {"name", "name_prefix", "fifo_topic"},
	"aws_sqs_queue":                                      {"name", "name_prefix", "fifo_queue"},
	"aws_sqs_queue_policy":                               {"queue_url"},
	"aws_sqs_queue_redrive_allow_policy":                 {"queue_url"},
}

// Known reports whether the force-new arguments of resource type t are on record.
func Known(t string) bool {
	_, ok := forceNew[t]
	return ok
}

// ForcesNew reports whether changing the argument at path ("name", "retry_policy.0.x")
// replaces a resource of type t.
func ForcesNew(t, path string) bool {
	top, _, _ := strings.Cut(path, ".")
	for _, a := range forceNew[t] {
		if a == top {
			return true
		}
	}
	return false
}

// stateful are the resources whose replacement or deletion loses data: `fleetc apply` and
// `destroy` refuse to replace or delete them unless each is named with --allow-replace.
var stateful = map[string]string{
	"aws_sqs_queue":                "a queue and every message in it",
	"aws_dynamodb_table":           "a table and all its records",
	"aws_s3_bucket":                "a bucket and the objects in it",
	"aws_cloudwatch_event_archive": "an event archive and the events kept for replay",
}

// lossy are resources that hold something worth a reviewer's attention but are not guarded:
// re-creating them loses history, not work.
var lossy = map[string]string{
	"aws_sfn_state_machine":              "a state machine and its running executions",
	"aws_cloudwatch_log_group":           "a log group and its logs",
	"aws_schemas_schema":                 "a registry schema and its versions",
	"aws_schemas_registry":               "a schema registry and every schema version in it",
	"aws_bedrockagentcore_agent_runtime": "an AgentCore runtime and its sessions",
	"aws_codedeploy_deployment_group":    "a deployment group, its deployment history and any shift in progress",
}

// Stateful reports whether destroying a resource of type t loses work or records, so that
// apply and destroy must be told to go ahead.
func Stateful(t string) bool { return stateful[t] != "" }

// Destroys names what destroying the resource (type t, local name) loses; "" when nothing
// is lost (policies, rules, alarms are re-created as they were).
func Destroys(t, name string) string {
	switch {
	case t == "aws_sqs_queue" && strings.HasSuffix(name, "dlq"):
		return "a dead-letter queue and every dead-lettered message in it"
	case t == "aws_dynamodb_table" && name == "idempotency":
		return "the idempotency table and its claims (completed steps may run again)"
	case t == "aws_dynamodb_table" && name == "jobs":
		return "the jobs table and the status of every async tool job"
	case t == "aws_s3_bucket" && name == "claimcheck":
		return "the claim-check bucket and the payloads in flight"
	}
	if what := stateful[t]; what != "" {
		return what
	}
	return lossy[t]
}

// Action is what Terraform does to one resource address, in the words of `terraform show
// -json`: fleetc diff predicts it, fleetc plan and apply report it.
type Action string

const (
	Create  Action = "create"
	Update  Action = "update"
	Replace Action = "replace"
	Delete  Action = "delete"
)

// Destructive reports whether the action destroys what the resource holds.
func (a Action) Destructive() bool { return a == Replace || a == Delete }

// Actions are the changes in the order fleetc counts them: plan's summary per class and
// diff's predicted plan print the same line.
var Actions = []Action{Create, Update, Replace, Delete}

// Tally is "2 to create, 1 to replace": the actions counted above 0, in Actions' order; ""
// when there are none.
func Tally(count map[Action]int) string {
	var parts []string
	for _, a := range Actions {
		if count[a] > 0 {
			parts = append(parts, strconv.Itoa(count[a])+" to "+string(a))
		}
	}
	return strings.Join(parts, ", ")
}
