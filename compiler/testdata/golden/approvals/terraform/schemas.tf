resource "aws_schemas_registry" "fleet" {
  name        = "refunds-events"
  description = "Event contracts of fleet refunds."
}

resource "aws_schemas_schema" "refund_approval_requested" {
  name          = "refunds.approvals@refund.approval.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  description   = "A refund waits for a person; approve or reject it with fleetc approve/reject."
  content       = file("${path.module}/../schemas/refund.approval.requested.json")
}

resource "aws_schemas_schema" "refund_audit_due" {
  name          = "refunds.schedules@refund.audit.due"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/refund.audit.due.json")
}

resource "aws_schemas_schema" "refund_requested" {
  name          = "refunds.app@refund.requested"
  registry_name = aws_schemas_registry.fleet.name
  type          = "JSONSchemaDraft4"
  content       = file("${path.module}/../schemas/refund.requested.json")
}
