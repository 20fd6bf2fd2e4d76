# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "tools"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class cdk-synth (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-cdk-synth", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "tools-cdk-synth", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "cdk-synth: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "tools-cdk-synth", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "cdk-synth: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-cdk-synth-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "cdk-synth: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "tools-cdk-synth", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "tools-cdk-synth", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "tools-cdk-synth", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "cdk-synth: invocations"
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
        markdown   = "## class release-assistant (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-release-assistant", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "tools-release-assistant", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "release-assistant: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "tools-release-assistant", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "release-assistant: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-release-assistant-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "release-assistant: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "tools-release-assistant", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "tools-release-assistant", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "tools-release-assistant", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "release-assistant: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "assistant", {
          label = "assistant"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "release-assistant: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "assistant", {
          label = "assistant"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "release-assistant: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 14
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class synth-alerts (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 20
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-synth-alerts", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "tools-synth-alerts", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "synth-alerts: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "tools-synth-alerts", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "synth-alerts: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "tools-synth-alerts-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Maximum"
        title   = "synth-alerts: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "tools-synth-alerts", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "tools-synth-alerts", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "tools-synth-alerts", {
          label = "throttles"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "synth-alerts: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 21
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## bus agent-tools"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 27
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "agent-tools", "RuleName", "tools-cdk-synth", {
          label = "cdk-synth"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "agent-tools", "RuleName", "tools-release-assistant", {
          label = "release-assistant"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "agent-tools", "RuleName", "tools-synth-alerts", {
          label = "synth-alerts"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "bus: failed invocations by rule"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 28
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "agent-tools", "RuleName", "tools-cdk-synth", {
          label = "cdk-synth"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "agent-tools", "RuleName", "tools-release-assistant", {
          label = "release-assistant"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "agent-tools", "RuleName", "tools-synth-alerts", {
          label = "synth-alerts"
        }]]
        period  = 60
        region  = "us-west-2"
        stacked = false
        stat    = "Sum"
        title   = "bus: throttled rules"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 28
    }]
  })
}
