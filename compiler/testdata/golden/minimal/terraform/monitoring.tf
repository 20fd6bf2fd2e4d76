# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "hello"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class greeter (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "hello-greeter", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "hello-greeter", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "greeter: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "hello-greeter", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "greeter: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "hello-greeter-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "greeter: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "hello-greeter", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "hello-greeter", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "hello-greeter", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "greeter: invocations"
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
        markdown   = "## bus hello"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "hello", "RuleName", "hello-greeter", {
          label = "greeter"
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
      y     = 8
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "hello", "RuleName", "hello-greeter", {
          label = "greeter"
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
      y     = 8
    }]
  })
}
