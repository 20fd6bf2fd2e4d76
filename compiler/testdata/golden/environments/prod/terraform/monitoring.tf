# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "support-prod"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class notifier (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "support-prod-notifier", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "support-prod-notifier", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "notifier: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "support-prod-notifier", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "notifier: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "support-prod-notifier-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "notifier: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "support-prod-notifier", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "support-prod-notifier", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "support-prod-notifier", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "notifier: invocations"
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
        markdown   = "## class triage (eks)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "support-prod-triage", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "support-prod-triage", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "support-prod-triage", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "support-prod-triage-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "triage", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "triage", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "triage", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "triage", {
          label = "triage"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "triage", {
          label = "triage"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: model fallbacks by policy"
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
        markdown   = "## bus support-prod"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 20
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "support-prod", "RuleName", "support-prod-notifier", {
          label = "notifier"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "support-prod", "RuleName", "support-prod-triage", {
          label = "triage"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "bus: failed invocations by rule"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "support-prod", "RuleName", "support-prod-notifier", {
          label = "notifier"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "support-prod", "RuleName", "support-prod-triage", {
          label = "triage"
        }]]
        period  = 60
        region  = "eu-central-1"
        stacked = false
        stat    = "Sum"
        title   = "bus: throttled rules"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 21
    }]
  })
}
