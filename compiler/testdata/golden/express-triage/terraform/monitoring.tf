# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "triage"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class classify (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-classify", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "triage-classify", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "classify: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "triage-classify", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "classify: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-classify-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "classify: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "triage-classify", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "triage-classify", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "triage-classify", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "classify: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 1
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class enrich (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-enrich", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "triage-enrich", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "enrich: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "triage-enrich", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "enrich: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-enrich-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "enrich: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "triage-enrich", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "triage-enrich", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "triage-enrich", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "enrich: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 8
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class tag (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-tag", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "triage-tag", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "tag: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "triage-tag", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "tag: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "triage-tag-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "tag: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "triage-tag", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "triage-tag", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "triage-tag", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "tag: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 15
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## workflows"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.bulk_tag.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "bulk-tag: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 22
      }, {
      height = 6
      properties = {
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.quick_triage.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "quick-triage: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 22
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## bus triage"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 28
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "triage", "RuleName", "triage-classify", {
          label = "classify"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "bus: failed invocations by rule"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 29
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "triage", "RuleName", "triage-classify", {
          label = "classify"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "bus: throttled rules"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 29
    }]
  })
}
