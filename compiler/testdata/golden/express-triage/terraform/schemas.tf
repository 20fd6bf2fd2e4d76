resource "aws_schemas_registry" "fleet" {
  name        = "triage-events"
  description = "Event contracts of fleet triage."
}

resource "aws_schemas_schema" "ticket_opened" {
  name          = "triage.app@ticket.opened"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/ticket.opened.json")
}

resource "aws_schemas_schema" "ticket_triaged" {
  name          = "triage.workers@ticket.triaged"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/ticket.triaged.json")
}
