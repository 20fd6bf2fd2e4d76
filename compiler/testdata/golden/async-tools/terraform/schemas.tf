resource "aws_schemas_registry" "fleet" {
  name        = "tools-events"
  description = "Event contracts of fleet tools."
}

resource "aws_schemas_schema" "CdkSynthRequested" {
  name          = "com.cheatcoders.agents@CdkSynthRequested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/CdkSynthRequested.json")
}

resource "aws_schemas_schema" "ReleaseQuestionAsked" {
  name          = "com.cheatcoders.chat@ReleaseQuestionAsked"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/ReleaseQuestionAsked.json")
}

resource "aws_schemas_schema" "ToolJobCompleted" {
  name          = "com.cheatcoders.workers@ToolJobCompleted"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/ToolJobCompleted.json")
}
