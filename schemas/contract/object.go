package contract

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// A Lambda function's variables may total 4 KB, so a generated function (and an AgentCore
// runtime) does not carry its config: Terraform writes it as an S3 object and sets one
// variable naming that object and the SHA-256 of its content. A config change changes the
// variable, so it deploys a new function version; the worker fetches the object at start and
// refuses one whose hash differs, so it never runs a config its function version was not
// deployed with (EnvConfigS3, EnvToolsS3). The fetch is runtime/config/s3config's: this
// package stays free of the AWS SDK.

// The query parameters of an object reference: s3://<bucket>/<key>?<owner>=<account>&<hash>=<hex>.
const (
	ObjectOwnerParam  = "expected-bucket-owner"
	ObjectSHA256Param = "sha256"
)

// ObjectRef is a config object: where it is, the account that must own its bucket (S3
// refuses the read otherwise, so a bucket re-created by someone else after deletion cannot
// feed the worker), and the SHA-256 its content must have.
type ObjectRef struct {
	Bucket, Key, Owner, SHA256 string
}

var (
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// String is the reference as the environment carries it.
func (r ObjectRef) String() string {
	return "s3://" + r.Bucket + "/" + r.Key + "?" + ObjectOwnerParam + "=" + r.Owner + "&" + ObjectSHA256Param + "=" + r.SHA256
}

// ParseObjectRef reads a reference from the variable name (named in errors).
func ParseObjectRef(name, v string) (ObjectRef, error) {
	bad := func(why string) (ObjectRef, error) {
		return ObjectRef{}, fmt.Errorf("%s=%q: %s (want s3://<bucket>/<key>?%s=<account id>&%s=<hex>)", name, v, why, ObjectOwnerParam, ObjectSHA256Param)
	}
	u, err := url.Parse(v)
	if err != nil {
		return bad(err.Error())
	}
	q := u.Query()
	r := ObjectRef{Bucket: u.Host, Key: strings.TrimPrefix(u.Path, "/"), Owner: q.Get(ObjectOwnerParam), SHA256: q.Get(ObjectSHA256Param)}
	switch {
	case u.Scheme != "s3" || r.Bucket == "" || r.Key == "":
		return bad("not an s3://bucket/key URL")
	case !accountRE.MatchString(r.Owner):
		return bad(ObjectOwnerParam + " is not a 12-digit account id")
	case !sha256RE.MatchString(r.SHA256):
		return bad(ObjectSHA256Param + " is not 64 lowercase hex digits")
	}
	return r, nil
}
