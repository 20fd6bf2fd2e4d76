resource "aws_schemas_registry" "fleet" {
  name        = "invoices-events"
  description = "Event contracts of fleet invoices."
}

resource "aws_schemas_schema" "invoice_extracted" {
  name          = "invoices.workers@invoice.extracted"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/invoice.extracted.json")
}

resource "aws_schemas_schema" "invoice_received" {
  name          = "invoices.mailroom@invoice.received"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/invoice.received.json")
}
