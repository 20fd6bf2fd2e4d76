package terraform

import (
	"maps"
	"slices"
	"strings"
)

// This file holds the optional customer-managed key (state.kms_key): the key fleetc creates
// (or the ARN it is given), where it encrypts, and who may use it.

// keyARN is the customer-managed key's ARN, or nil for AWS-managed encryption.
func (g *gen) keyARN() tokens {
	switch st := g.f.State; {
	case st.CreateKMSKey:
		return ref("aws_kms_key", "fleet", "arn")
	case st.KMSKeyARN != "":
		return str(st.KMSKeyARN)
	}
	return nil
}

// encryptQueue encrypts a queue with the fleet's key, else with SQS-managed keys.
func (g *gen) encryptQueue(q block) {
	if k := g.keyARN(); k != nil {
		q.set("kms_master_key_id", k)
		return
	}
	q.set("sqs_managed_sse_enabled", boolean(true))
}

// encryptLogs encrypts a log group with the fleet's key (else CloudWatch Logs' own encryption).
func (g *gen) encryptLogs(lg block) {
	if k := g.keyARN(); k != nil {
		lg.set("kms_key_id", k)
	}
}

// keyUse is what a role's action needs of the fleet's key, and through which service: S3
// and SQS encrypt and decrypt with the caller's permissions (DynamoDB uses its own grant,
// made when the table is created). AWS: a reader needs kms:Decrypt; a writer also
// kms:GenerateDataKey (SQS: "Key management" of SSE; S3: SSE-KMS, where Decrypt also
// serves multipart uploads).
type keyUse struct {
	service string
	actions []string
}

var keyUses = map[string]keyUse{
	"s3:GetObject":       {"s3", []string{"kms:Decrypt"}},
	"s3:PutObject":       {"s3", []string{"kms:Decrypt", "kms:GenerateDataKey"}},
	"sqs:ReceiveMessage": {"sqs", []string{"kms:Decrypt"}},
	"sqs:SendMessage":    {"sqs", []string{"kms:Decrypt", "kms:GenerateDataKey"}},
}

// keyGrant adds to a role's policy the use of the fleet's key, when the role reads or
// writes what the key encrypts: one statement per service it goes through (kms:ViaService),
// with only the key actions its own actions need there. A role that only reads its config
// object gets kms:Decrypt via S3, nothing more.
func (g *gen) keyGrant(policy []stmt) []stmt {
	k := g.keyARN()
	if k == nil {
		return policy
	}
	need := map[string][]string{} // service → key actions
	for _, s := range policy {
		for _, a := range s.actions {
			if u, ok := keyUses[a]; ok {
				need[u.service] = append(need[u.service], u.actions...)
			}
		}
	}
	for _, service := range slices.Sorted(maps.Keys(need)) {
		actions := slices.Compact(slices.Sorted(slices.Values(need[service])))
		policy = append(policy, stmt{sid: "UseFleetKeyVia" + strings.ToUpper(service), actions: actions, resources: []tokens{k},
			conditions: []condition{viaService(service, g.f.Region)}})
	}
	return policy
}

// kmsKey emits the key fleetc creates: rotated, with alias/<fleet>, and a key policy that
// leaves its use to the account's IAM policies (the role grants) and lets the two services
// that encrypt without a fleet role use it: CloudWatch Logs for this account's log groups,
// and EventBridge delivering events to the encrypted queues.
func (g *gen) kmsKey(fl *file) {
	if !g.f.State.CreateKMSKey {
		return
	}
	root := tmpl(lit("arn:"), interp(partition()), lit(":iam::"), interp(accountID()), lit(":root"))
	logsARN := tmpl(lit("arn:"), interp(partition()), lit(":logs:"+g.f.Region+":"), interp(accountID()), lit(":log-group:*"))
	doc := g.policyDoc(fl, "fleet_key", "/state/kms_key", []stmt{
		{sid: "KeyAdministration", actions: []string{"kms:*"}, resources: []tokens{str("*")},
			principal: &principal{typ: "AWS", refs: []tokens{root}}},
		{sid: "CloudWatchLogs", actions: []string{"kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"},
			resources:  []tokens{str("*")},
			principal:  &principal{typ: "Service", ids: []string{"logs." + g.f.Region + ".amazonaws.com"}},
			conditions: []condition{{"ArnLike", "kms:EncryptionContext:aws:logs:arn", []tokens{logsARN}}}},
		{sid: "EventBridgeToQueues", actions: []string{"kms:Decrypt", "kms:GenerateDataKey"},
			resources:  []tokens{str("*")},
			principal:  &principal{typ: "Service", ids: []string{"events.amazonaws.com"}},
			conditions: []condition{{"StringEquals", "aws:SourceAccount", []tokens{accountID()}}}},
	})
	g.claim("aws_kms_key", "fleet", "/state/kms_key")
	k := fl.resource("aws_kms_key", "fleet", "The fleet's customer-managed key (state.kms_key: create): bucket, tables, queues and log groups.")
	k.set("description", str("fleetc fleet "+g.f.Name+": claim-check bucket, tables, queues, log groups"))
	k.set("enable_key_rotation", boolean(true))
	k.set("deletion_window_in_days", num(30))
	k.set("policy", doc)
	g.claim("aws_kms_alias", "fleet", "/state/kms_key")
	a := fl.resource("aws_kms_alias", "fleet")
	a.set("name", str("alias/"+strings.ToLower(g.f.Name)))
	a.set("target_key_id", ref("aws_kms_key", "fleet", "key_id"))
}
