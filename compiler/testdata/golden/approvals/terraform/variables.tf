# Inputs of the fleet's root module (the same for every fleet: copied from fleetc's templates/).
variable "alarm_actions" {
  description = "ARNs notified when any fleet alarm enters ALARM or returns to OK (SNS topics, incident-manager response plans, ...). Empty: the alarms are visible in CloudWatch only."
  type        = list(string)
  default     = []
}
