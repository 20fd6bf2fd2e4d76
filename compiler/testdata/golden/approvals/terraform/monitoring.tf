# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "refunds"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class audit (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-audit", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "refunds-audit", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "audit: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "refunds-audit", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "audit: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-audit-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "audit: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "refunds-audit", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "refunds-audit", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "refunds-audit", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "audit: invocations"
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
        markdown   = "## class draft (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-draft", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "refunds-draft", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "draft: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "refunds-draft", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "draft: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-draft-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "draft: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "refunds-draft", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "refunds-draft", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "refunds-draft", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "draft: invocations"
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
        markdown   = "## class pay (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-pay", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "refunds-pay", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "pay: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "refunds-pay", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "pay: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "refunds-pay-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "pay: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 15
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "refunds-pay", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "refunds-pay", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "refunds-pay", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "pay: invocations"
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
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.refund.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "refund: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 22
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## bus refunds"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 28
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "refunds", "RuleName", "refunds-audit", {
          label = "audit"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "refunds", "RuleName", "refunds-draft", {
          label = "draft"
        }]]
        period  = 60
        region  = "eu-west-1"
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
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "refunds", "RuleName", "refunds-audit", {
          label = "audit"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "refunds", "RuleName", "refunds-draft", {
          label = "draft"
        }]]
        period  = 60
        region  = "eu-west-1"
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
