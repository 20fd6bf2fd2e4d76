resource "aws_schemas_registry" "fleet" {
  name        = "sink-events"
  description = "Event contracts of fleet sink."
}

resource "aws_schemas_schema" "approval_requested" {
  name          = "sink.approvals@approval.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/approval.requested.json")
}

resource "aws_schemas_schema" "chat_turn" {
  name          = "sink.chat@chat.turn"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/chat.turn.json")
}

resource "aws_schemas_schema" "index_requested" {
  name          = "sink.indexer@index.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/index.requested.json")
}

resource "aws_schemas_schema" "review_requested" {
  name          = "sink.coordinator@review.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/review.requested.json")
}

resource "aws_schemas_schema" "task_completed" {
  name          = "sink.workers@task.completed"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/task.completed.json")
}

resource "aws_schemas_schema" "task_failed" {
  name          = "sink.errors@task.failed"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/task.failed.json")
}

resource "aws_schemas_schema" "task_requested" {
  name          = "sink.coordinator@task.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/task.requested.json")
}
