# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "research"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class coder (eks)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "research-coder.fifo", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "research-coder.fifo", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "coder: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "research-coder.fifo", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "coder: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "research-coder-dlq.fifo", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "coder: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "coder", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "coder", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "coder", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "coder: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "claude-haiku-then-sonnet", {
          label = "claude-haiku-then-sonnet"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "coder: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "claude-haiku-then-sonnet", {
          label = "claude-haiku-then-sonnet"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "coder: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 7
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class researcher (eks)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 13
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "research-researcher.fifo", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "research-researcher.fifo", {
          label = "in flight"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "researcher: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "research-researcher.fifo", {
          label = "oldest"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "researcher: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "research-researcher-dlq.fifo", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Maximum"
        title   = "researcher: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "researcher", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "researcher", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "researcher", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "researcher: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "claude-haiku-then-sonnet", {
          label = "claude-haiku-then-sonnet"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "researcher: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 20
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "claude-haiku-then-sonnet", {
          label = "claude-haiku-then-sonnet"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "researcher: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 20
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## workflows"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 26
      }, {
      height = 6
      properties = {
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.conversation.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "us-east-1"
        stacked = false
        stat    = "Sum"
        title   = "conversation: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 27
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## bus research-fleet"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 33
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "research-fleet", "RuleName", "research-coder", {
          label = "coder"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "research-fleet", "RuleName", "research-researcher", {
          label = "researcher"
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
      y     = 34
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "research-fleet", "RuleName", "research-coder", {
          label = "coder"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "research-fleet", "RuleName", "research-researcher", {
          label = "researcher"
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
      y     = 34
    }]
  })
}
