// Package jobs is the async-tool job record: the one shape the start/status tools
// (fleet-worker --mode tools) write and read and the worker moves RUNNING -> SUCCEEDED |
// FAILED, and the names the compiler gives the jobs table's keys, index and TTL attribute.
//
// It is a leaf, like schemas/runtimeconfig: the compiler and the runtime both import it, so a
// key, attribute or status is spelled once. docs/async-tools.md documents the record.
package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Status is a job's state. A job is created QUEUED (or FAILED_TO_START when the bus refused
// its request event), the worker moves it RUNNING and then SUCCEEDED or FAILED; a finished
// job never moves again (every write is conditional on the status it leaves).
type Status string

const (
	Queued    Status = "QUEUED"
	Running   Status = "RUNNING"
	Succeeded Status = "SUCCEEDED"
	Failed    Status = "FAILED"
	// FailedToStart: the job was written but the bus refused its request event, so no worker
	// will ever see it. A repeated start with the same idempotency key publishes it again.
	FailedToStart Status = "FAILED_TO_START"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{Queued, Running, Succeeded, Failed, FailedToStart}

// Finished reports whether s is terminal: SUCCEEDED and FAILED never change again.
func (s Status) Finished() bool { return s == Succeeded || s == Failed }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Table layout. The table's hash key is PK ("JOB#<jobId>"); the OwnerIndex GSI is
// partitioned by Owner ("OWNER#<principal>#<session>") and sorted by CreatedAt, so
// list_my_jobs is one Query, newest first. ExpiresAt (epoch seconds) is the table's TTL.
const (
	AttrPK             = "pk"
	AttrJobID          = "jobId"
	AttrClass          = "class"
	AttrTool           = "tool"
	AttrStatus         = "status"
	AttrPrincipal      = "principalId"
	AttrSession        = "sessionId"
	AttrOwner          = "ownerKey"
	AttrIdempotencyKey = "idempotencyKey"
	AttrCreatedAt      = "createdAt"
	AttrUpdatedAt      = "updatedAt"
	AttrExpiresAt      = "expiresAt"
	AttrArtifactURI    = "artifactUri"
	AttrResult         = "result"
	AttrResultRef      = "result_ref"
	AttrError          = "errorMessage"

	// OwnerIndex is the GSI list_my_jobs queries.
	OwnerIndex = "by_owner"

	// KeyPrefix and OwnerPrefix are the leading characters of every PK and Owner value: the
	// tools role's dynamodb:LeadingKeys conditions allow only keys that start with them.
	KeyPrefix   = "JOB#"
	OwnerPrefix = "OWNER#"
)

// Key is the table key value of a job.
func Key(jobID string) string { return KeyPrefix + jobID }

// JobIDPrefix starts every job id principal's starts create: the first 8 hex digits of the
// principal's SHA-256, which replace a job UUID's first group (the version and variant bits
// are elsewhere, so the id stays a UUID, as request-event contracts declare it). An id so
// says whose it is without naming the principal, and a role that acts as one principal can
// be held to its own jobs' items by their keys (JobKeyPrefix), not only by the runtime's
// ownership check.
func JobIDPrefix(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(sum[:4])
}

// JobKeyPrefix starts the table key of every job of principal: an llm class's role may get
// and put only items whose key starts with JobKeyPrefix(ClassPrincipal(class))
// (dynamodb:LeadingKeys), so it cannot read or overwrite another principal's job by its id.
func JobKeyPrefix(principal string) string { return Key(JobIDPrefix(principal)) }

// ClassPrincipal is the principal an llm class's async tool calls run as ("class:<class>"),
// so the jobs one class starts are its own to read and list; its worker role's Query on the
// owner index is held to OwnerKeyPrefix(ClassPrincipal(class)).
func ClassPrincipal(class string) string { return "class:" + class }

// OwnerKeyPrefix starts every OwnerKey of principal, whatever the session: the leading key
// an IAM condition can hold a principal's index queries to.
func OwnerKeyPrefix(principal string) string { return OwnerKey(principal, "") }

// OwnerKey is the index key of a principal's jobs in one session. The principal is
// length-prefixed so that no (principal, session) pair can spell another's key.
func OwnerKey(principal, session string) string {
	var b strings.Builder
	b.WriteString(OwnerPrefix)
	b.WriteString(strconv.Itoa(len(principal)))
	b.WriteByte(':')
	b.WriteString(principal)
	b.WriteByte('#')
	b.WriteString(session)
	return b.String()
}

// TimeLayout is how CreatedAt and UpdatedAt are written: fixed width (milliseconds, always
// three digits, UTC), so the index's string sort key sorts by time.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// LogFailed is the message fleet-worker logs (JSON, field "class") when it marks a job
// FAILED; the compiler's per-class failed-jobs metric filter matches it.
const LogFailed = "job FAILED"

// FailedJobsMetric is the CloudWatch metric (namespace MetricNamespace, dimension "class")
// the metric filter counts failed jobs into.
const (
	MetricNamespace  = "fleetc/jobs"
	FailedJobsMetric = "FailedJobs"
)

// Record is one job as stored and as get_<tool>_status reads it. Field names are the
// attribute names above (dynamodbav) and the JSON names of the status answer.
type Record struct {
	JobID          string `dynamodbav:"jobId" json:"jobId"`
	Class          string `dynamodbav:"class,omitempty" json:"class,omitempty"`
	Tool           string `dynamodbav:"tool,omitempty" json:"tool,omitempty"`
	Status         Status `dynamodbav:"status" json:"status"`
	PrincipalID    string `dynamodbav:"principalId,omitempty" json:"-"`
	SessionID      string `dynamodbav:"sessionId,omitempty" json:"sessionId,omitempty"`
	IdempotencyKey string `dynamodbav:"idempotencyKey,omitempty" json:"-"`
	CreatedAt      string `dynamodbav:"createdAt,omitempty" json:"createdAt,omitempty"`
	UpdatedAt      string `dynamodbav:"updatedAt,omitempty" json:"updatedAt,omitempty"`
	ExpiresAt      int64  `dynamodbav:"expiresAt,omitempty" json:"-"`
	ArtifactURI    string `dynamodbav:"artifactUri,omitempty" json:"artifactUri,omitempty"`
	Result         string `dynamodbav:"result,omitempty" json:"-"`
	ResultRef      string `dynamodbav:"result_ref,omitempty" json:"-"`
	ErrorMessage   string `dynamodbav:"errorMessage,omitempty" json:"errorMessage,omitempty"`
}
