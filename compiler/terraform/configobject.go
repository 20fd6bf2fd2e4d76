package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/schemas/awslimits"
	"github.com/fleetc/fleetc/schemas/contract"
)

// configPrefix is where the generated configs live in the claim-check bucket, under their
// output path without .json and named by their content's SHA-256
// (config/runtime/<class>/<sha256>.json, config/tools/tools/<sha256>.json). The bucket's
// lifecycle expires only the payload prefixes (ir.ClaimCheckRoots), never this one.
const configPrefix = "config/"

// configDir is the prefix of the objects of configPath's config, one per content.
func configDir(configPath string) string {
	return configPrefix + strings.TrimSuffix(configPath, ".json") + "/"
}

// ConfigObjectType is the resource type carrying a generated config (configObject).
const ConfigObjectType = "aws_s3_object"

// configObject emits the S3 object carrying the generated config at configPath (relative to
// the output root) and returns the value of the one variable a function keeps for it:
// contract.ObjectRef, with the SHA-256 of exactly the content uploaded. Lambda caps all
// variables at 4 KB, so configs no longer ride in the environment; a config change still
// changes the variable, so it deploys a new function version, and the worker refuses an
// object whose hash differs from its version's.
func (g *gen) configObject(fl *file, n, path, configPath string) tokens {
	g.claim(ConfigObjectType, n, path)
	o := fl.resource(ConfigObjectType, n,
		"The generated "+configPath+", read by the worker at start (FLEET_*_S3 names it and its SHA-256).")
	o.set("bucket", ref("aws_s3_bucket", "claimcheck", "id"))
	// Content-addressed: a changed config is a new object beside the old one, never an
	// overwrite, so a function version still running (or cold-starting) during an apply reads
	// the config its variable's hash names. The key changing replaces the resource, and
	// create_before_destroy orders the replacement: the new object first, then the functions
	// whose variable names it (they depend on it), and the old object last, once no
	// configuration names it. Without it Terraform deletes the old object first, and an old
	// version starting in between finds nothing; with a fixed key, creating before
	// destroying would delete the object just written.
	o.set("key", tmpl(lit(configDir(configPath)), interp(call("filesha256", pathModule("../"+configPath))), lit(".json")))
	o.set("content", call("file", pathModule("../"+configPath)))
	o.set("content_type", str("application/json"))
	// Encrypted as the bucket encrypts its payloads.
	if k := g.keyARN(); k != nil {
		o.set("server_side_encryption", str("aws:kms"))
		o.set("kms_key_id", k)
		o.set("bucket_key_enabled", boolean(true))
	} else {
		o.set("server_side_encryption", str("AES256"))
	}
	o.nested("lifecycle").set("create_before_destroy", boolean(true))
	obj := func(attr string) tpart { return interp(ref(ConfigObjectType, n, attr)) }
	return tmpl(lit("s3://"), obj("bucket"), lit("/"), obj("key"),
		lit("?"+contract.ObjectOwnerParam+"="), interp(accountID()),
		lit("&"+contract.ObjectSHA256Param+"="), interp(call("sha256", ref(ConfigObjectType, n, "content"))))
}

// configObjectARN is the ARN pattern of the objects configObject writes for configPath (one
// per content): the only objects a role that runs from it may read.
func configObjectARN(configPath string) tokens {
	return tmpl(interp(ref("aws_s3_bucket", "claimcheck", "arn")), lit("/"+configDir(configPath)+"*"))
}

// readConfig is the statement letting a role read the config objects of configPath, and
// nothing else of the bucket's.
func readConfig(configPath string) stmt {
	return stmt{sid: "ReadOwnConfig", actions: []string{"s3:GetObject"}, resources: []tokens{configObjectARN(configPath)}}
}

// configRef is the variable's value as Terraform renders it for cfg (the account id is a
// stand-in of the same length), for sizing the environment.
func (g *gen) configRef(configPath string, cfg []byte) string {
	sum := sha256.Sum256(cfg)
	return contract.ObjectRef{Bucket: g.f.State.ClaimCheckBucket, Key: configDir(configPath) + hex.EncodeToString(sum[:]) + ".json", Owner: sizingAccount,
		SHA256: hex.EncodeToString(sum[:])}.String()
}

// sizingAccount stands in for the account id (always 12 digits) where fleetc sizes values
// Terraform renders with the real one.
const sizingAccount = "123456789012"

// RetainedConfigTag and RetainedConfigTagValue tag a config object `fleetc apply` put back
// after Terraform deleted it, for the function version a traffic shift still routes to
// (KeepsOldConfig): the bucket's lifecycle expires exactly the objects so tagged.
const (
	RetainedConfigTag      = "fleetc-retained"
	RetainedConfigTagValue = "true"
)

// retainedConfigRule is the id of the lifecycle rule expiring the retained config objects.
const retainedConfigRule = "expire-retained-configs"

// RetainedConfigDays is how long a retained config object lives: past CodeDeploy's longest
// shift, plus a day, since S3 counts from the object's creation (just before the shift
// starts) and rounds to a midnight UTC.
func RetainedConfigDays() int64 {
	day := 24 * time.Hour
	return int64((awslimits.CodeDeployLambdaMaxShift+day-1)/day) + 1
}

// KeepsOldConfig reports whether a's previous function version keeps taking traffic after an
// apply, for a canary or linear shift, so its config object must outlive Terraform's delete.
func KeepsOldConfig(a *ir.Agent) bool {
	return a.Lambda != nil && a.Rollout != nil && a.Rollout.Shifts() > 0
}

// ConfigObjectAddress is the address of the object carrying lambda class a's runtime config.
func ConfigObjectAddress(a *ir.Agent) string {
	return ConfigObjectType + "." + configObjectName(local(a.Name))
}

// configObjectName is the Terraform name of the config object of the function named n.
func configObjectName(n string) string { return n + "_config" }

// retainedConfigs adds to the claim-check lifecycle lc the rule expiring the config objects
// `fleetc apply` retained, when some class's shift needs them; other fleets keep no object.
func (g *gen) retainedConfigs(lc block) {
	keeps := false
	for _, a := range g.f.Agents {
		keeps = keeps || KeepsOldConfig(a)
	}
	if !keeps {
		return
	}
	rule := lc.nested("rule")
	rule.set("id", str(retainedConfigRule))
	rule.set("status", str("Enabled"))
	and := rule.nested("filter").nested("and")
	and.set("prefix", str(configPrefix))
	and.set("tags", object(kv{RetainedConfigTag, str(RetainedConfigTagValue)}))
	rule.nested("expiration").set("days", num(RetainedConfigDays()))
}
