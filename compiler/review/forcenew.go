package review

// forceNew lists, for every resource type fleetc emits, the arguments whose change makes the
// hashicorp/aws provider destroy and re-create the resource (ForceNew / RequiresReplace in
// the provider's schema, 5.x and 6.x alike). Nested blocks are named by their top-level
// block. TestForceNewCoversEveryEmittedType keeps the table complete, and the kumo-backed
// TestPredictionsMatchTerraformPlan holds it to what `terraform plan` really does.
var forceNew = map[string][]string{
	"aws_bedrockagentcore_agent_runtime":                 {"agent_runtime_name"},
	"aws_cloudwatch_event_archive":                       {"name", "event_source_arn"},
	"aws_cloudwatch_event_bus":                           {"name", "event_source_name"},
	"aws_cloudwatch_event_rule":                          {"name", "name_prefix", "event_bus_name"},
	"aws_cloudwatch_event_target":                        {"rule", "target_id", "event_bus_name"},
	"aws_cloudwatch_log_group":                           {"name", "name_prefix", "log_group_class"},
	"aws_cloudwatch_metric_alarm":                        {"alarm_name"},
	"aws_dynamodb_table":                                 {"name", "hash_key", "range_key", "local_secondary_index"},
	"aws_eks_pod_identity_association":                   {"cluster_name", "namespace", "service_account"},
	"aws_iam_policy":                                     {"name", "name_prefix", "path", "description"},
	"aws_iam_role":                                       {"name", "name_prefix", "path"},
	"aws_iam_role_policy":                                {"name", "name_prefix", "role"},
	"aws_iam_role_policy_attachment":                     {"role", "policy_arn"},
	"aws_lambda_event_source_mapping":                    {"event_source_arn", "starting_position", "starting_position_timestamp"},
	"aws_lambda_function":                                {"function_name", "package_type"},
	"aws_pipes_pipe":                                     {"name", "name_prefix", "source"},
	"aws_s3_bucket":                                      {"bucket", "bucket_prefix", "object_lock_enabled"},
	"aws_s3_bucket_lifecycle_configuration":              {"bucket", "expected_bucket_owner"},
	"aws_s3_bucket_public_access_block":                  {"bucket"},
	"aws_s3_bucket_server_side_encryption_configuration": {"bucket", "expected_bucket_owner"},
	"aws_s3_bucket_versioning":                           {"bucket", "expected_bucket_owner"},
	"aws_schemas_registry":                               {"name"},
	"aws_schemas_schema":                                 {"name", "registry_name"},
	"aws_sfn_state_machine":                              {"name", "name_prefix", "type"},
	"aws_sqs_queue":                                      {"name", "name_prefix", "fifo_queue"},
	"aws_sqs_queue_policy":                               {"queue_url"},
	"aws_sqs_queue_redrive_allow_policy":                 {"queue_url"},
}

// forcesNew reports whether changing the argument at path replaces a resource of type t.
func forcesNew(t, path string) bool {
	top := topAttr(path)
	for _, a := range forceNew[t] {
		if a == top {
			return true
		}
	}
	return false
}

// holds says what is lost when a resource of type t is destroyed; "" for resources that
// hold nothing (policies, rules, alarms: re-created without loss).
var holds = map[string]string{
	"aws_sqs_queue":                      "its messages: in-flight and waiting work is lost",
	"aws_dynamodb_table":                 "its records",
	"aws_s3_bucket":                      "its objects (claim-checked payloads and results); a non-empty bucket also blocks the delete",
	"aws_cloudwatch_event_archive":       "its archived events: replay history is gone",
	"aws_sfn_state_machine":              "its running executions and their history",
	"aws_cloudwatch_log_group":           "its logs",
	"aws_schemas_schema":                 "its schema versions",
	"aws_schemas_registry":               "every schema version in it",
	"aws_bedrockagentcore_agent_runtime": "its sessions",
}
