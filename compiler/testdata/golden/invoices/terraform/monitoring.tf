# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "invoices"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class book (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "invoices-book", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "invoices-book", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "book: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "invoices-book", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "book: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "invoices-book-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "book: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "invoices-book", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "invoices-book", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "invoices-book", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "book: invocations"
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
        markdown   = "## class extract (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "invoices-extract", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "invoices-extract", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "extract: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "invoices-extract", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "extract: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "invoices-extract-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "extract: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "invoices-extract", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "invoices-extract", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "invoices-extract", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "extract: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "fast", {
          label = "fast"
          }], ["fleetc/worker", "fleet_model_tokens_total", "policy", "careful", {
          label = "careful"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "extract: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "fast", {
          label = "fast"
          }], ["fleetc/worker", "fleet_model_fallbacks_total", "policy", "careful", {
          label = "careful"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "extract: model fallbacks by policy"
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
        markdown   = "## bus invoices"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 20
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "invoices", "RuleName", "invoices-book", {
          label = "book"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "invoices", "RuleName", "invoices-extract", {
          label = "extract"
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
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "invoices", "RuleName", "invoices-book", {
          label = "book"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "invoices", "RuleName", "invoices-extract", {
          label = "extract"
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
      y     = 21
    }]
  })
}
