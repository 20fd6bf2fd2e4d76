resource "aws_schemas_registry" "fleet" {
  name        = "research-events"
  description = "Event contracts of fleet research."
}

resource "aws_schemas_schema" "agent_step_completed" {
  name          = "fleet.workers@agent.step.completed"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  description   = "An agent class finished a step."
  content       = file("${path.module}/../schemas/agent.step.completed.json")
}

resource "aws_schemas_schema" "agent_step_requested" {
  name          = "fleet.coordinator@agent.step.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  description   = "A conversation needs its next step done by an agent class."
  content       = file("${path.module}/../schemas/agent.step.requested.json")
}
