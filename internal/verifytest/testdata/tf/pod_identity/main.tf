# In the released 5.100.0 schema only (the 6.x subset lacks it): checked through the supplement.
resource "aws_eks_pod_identity_association" "a" {
  cluster_name    = "agents"
  namespace       = "agents"
  service_account = "a-worker"
  role_arn        = "arn:aws:iam::111122223333:role/a"
}

# The supplement's version of the type, so a wrong argument is still caught.
resource "aws_eks_pod_identity_association" "b" {
  cluster         = "agents"
  namespace       = "agents"
  service_account = "b-worker"
  role_arn        = "arn:aws:iam::111122223333:role/b"
}
