resource "aws_schemas_registry" "fleet" {
  name        = "support-prod-events"
  description = "Event contracts of fleet support-prod."
}

resource "aws_schemas_schema" "ticket_opened" {
  name          = "support.desk@ticket.opened"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  description   = "A customer opened a support ticket."
  content       = file("${path.module}/../schemas/ticket.opened.json")
}

resource "aws_schemas_schema" "ticket_triaged" {
  name          = "support.workers@ticket.triaged"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  description   = "A ticket has a category and a priority."
  content       = file("${path.module}/../schemas/ticket.triaged.json")
}
