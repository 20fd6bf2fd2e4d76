resource "aws_schemas_registry" "fleet" {
  name        = "hello-events"
  description = "Event contracts of fleet hello."
}

resource "aws_schemas_schema" "greeting_requested" {
  name          = "hello.app@greeting.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/greeting.requested.json")
}
