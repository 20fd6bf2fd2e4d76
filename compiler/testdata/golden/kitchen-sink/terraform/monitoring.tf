# Per class queue, DLQ and worker series, per workflow executions, the bus's failures.
# Worker series (namespace fleetc/worker) appear once a collector exports /metrics as EMF (docs/operating.md).
resource "aws_cloudwatch_dashboard" "fleet" {
  dashboard_name = "sink"
  dashboard_body = jsonencode({
    periodOverride = "auto"
    start          = "-PT3H"
    widgets = [{
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class concierge (agentcore)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 0
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-concierge", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-concierge", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "concierge: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-concierge", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "concierge: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-concierge-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "concierge: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "concierge", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "concierge", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "concierge", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "concierge: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 1
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "concierge: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 7
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "concierge: model fallbacks by policy"
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
        markdown   = "## class indexer (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 13
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-indexer.fifo", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-indexer.fifo", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "indexer: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-indexer.fifo", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "indexer: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-indexer-dlq.fifo", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "indexer: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 14
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "sink-indexer", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "sink-indexer", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "sink-indexer", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "indexer: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 14
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class planner (eks)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 20
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-planner.fifo", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-planner.fifo", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "planner: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-planner.fifo", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "planner: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-planner-dlq.fifo", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "planner: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "planner", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "planner", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "planner", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "planner: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 21
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "planner: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 27
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "planner: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 27
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class reviewer (eks)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 33
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-reviewer", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-reviewer", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "reviewer: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 34
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-reviewer", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "reviewer: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 34
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-reviewer-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "reviewer: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 34
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "agent_step_duration_seconds", "class", "reviewer", {
          label = "steps"
          stat  = "SampleCount"
          }], ["fleetc/worker", "agent_step_retries_total", "class", "reviewer", {
          label = "retries"
          }], ["fleetc/worker", "agent_steps_dead_lettered_total", "class", "reviewer", {
          label = "dead-lettered"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "reviewer: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 34
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "secondary", {
          label = "secondary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "reviewer: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 40
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "secondary", {
          label = "secondary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "reviewer: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 40
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class summarizer (lambda)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 46
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-summarizer", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-summarizer", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "summarizer: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 47
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-summarizer", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "summarizer: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 47
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-summarizer-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "summarizer: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 47
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Lambda", "Invocations", "FunctionName", "sink-summarizer", {
          label = "invocations"
          }], ["AWS/Lambda", "Errors", "FunctionName", "sink-summarizer", {
          label = "errors"
          }], ["AWS/Lambda", "Throttles", "FunctionName", "sink-summarizer", {
          label = "throttles"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "summarizer: invocations"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 47
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "summarizer: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 53
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "primary", {
          label = "primary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "summarizer: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 53
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## class triage (agentcore)"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 59
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-triage", {
          label = "waiting"
          }], ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "sink-triage", {
          label = "in flight"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: queue"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 60
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "sink-triage", {
          label = "oldest"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: age of oldest message (s)"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 60
      }, {
      height = 6
      properties = {
        metrics = [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "sink-triage-dlq", {
          label = "dead letters"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Maximum"
        title   = "triage: DLQ depth"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 12
      y     = 60
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
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: steps, retries, dead letters"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 18
      y     = 60
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_tokens_total", "policy", "secondary", {
          label = "secondary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: model tokens by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 66
      }, {
      height = 6
      properties = {
        metrics = [["fleetc/worker", "fleet_model_fallbacks_total", "policy", "secondary", {
          label = "secondary"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "triage: model fallbacks by policy"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 66
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## workflows"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 72
      }, {
      height = 6
      properties = {
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.delivery.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "delivery: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 0
      y     = 73
      }, {
      height = 6
      properties = {
        metrics = [["AWS/States", "ExecutionsStarted", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "started"
          }], ["AWS/States", "ExecutionsSucceeded", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "succeeded"
          }], ["AWS/States", "ExecutionsFailed", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "failed"
          }], ["AWS/States", "ExecutionsTimedOut", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "timed out"
          }], ["AWS/States", "ExecutionsAborted", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "aborted"
          }], ["AWS/States", "ExecutionsRedriven", "StateMachineArn", aws_sfn_state_machine.hotfix.arn, {
          label = "redriven"
        }]]
        period  = 60
        region  = "eu-west-1"
        stacked = false
        stat    = "Sum"
        title   = "hotfix: executions by status"
        view    = "timeSeries"
      }
      type  = "metric"
      width = 6
      x     = 6
      y     = 73
      }, {
      height = 1
      properties = {
        background = "transparent"
        markdown   = "## bus sink-bus"
      }
      type  = "text"
      width = 24
      x     = 0
      y     = 79
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-concierge", {
          label = "concierge"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-indexer", {
          label = "indexer"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-planner", {
          label = "planner"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-reviewer", {
          label = "reviewer"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-summarizer", {
          label = "summarizer"
          }], ["AWS/Events", "FailedInvocations", "EventBusName", "sink-bus", "RuleName", "sink-triage", {
          label = "triage"
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
      y     = 80
      }, {
      height = 6
      properties = {
        metrics = [["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-concierge", {
          label = "concierge"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-indexer", {
          label = "indexer"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-planner", {
          label = "planner"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-reviewer", {
          label = "reviewer"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-summarizer", {
          label = "summarizer"
          }], ["AWS/Events", "ThrottledRules", "EventBusName", "sink-bus", "RuleName", "sink-triage", {
          label = "triage"
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
      y     = 80
    }]
  })
}
