package awsconfig

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// credsFake is one loopback server standing in for three credential
// sources and for SQS: GET /v1/credentials answers as the EKS Pod
// Identity agent (the container credential provider's JSON, AWS SDKs and
// Tools Reference Guide "Container credential provider"), a form POST
// with Action=AssumeRoleWithWebIdentity answers as STS, anything else as
// SQS GetQueueUrl. It records the access key id each SQS call was signed
// with. No local emulator of the Pod Identity agent exists, hence httptest.
type credsFake struct {
	mu       sync.Mutex
	signedBy []string
	srv      *httptest.Server
}

const podIdentityToken = "eks-pod-identity-token-value"

func newCredsFake(t *testing.T) *credsFake {
	f := &credsFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/credentials":
			if r.Method != http.MethodGet || r.Header.Get("Authorization") != podIdentityToken {
				t.Errorf("agent request %s %s Authorization=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				w.WriteHeader(http.StatusForbidden)
				return
			}
			fmt.Fprintf(w, `{"AccessKeyId":"ASIAPODIDENTITY","SecretAccessKey":"pod-secret","Token":"pod-token","AccountId":"123456789012","Expiration":%q}`,
				time.Now().Add(6*time.Hour).UTC().Format(time.RFC3339))
		case strings.Contains(string(body), "Action=AssumeRoleWithWebIdentity"):
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>`+
				`<Credentials><AccessKeyId>ASIAWEBIDENTITY</AccessKeyId><SecretAccessKey>wi-secret</SecretAccessKey><SessionToken>wi-token</SessionToken>`+
				`<Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
				time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		default:
			f.mu.Lock()
			f.signedBy = append(f.signedBy, accessKeyID(r.Header.Get("Authorization")))
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(`{"QueueUrl":"u"}`))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// accessKeyID extracts AKID from "AWS4-HMAC-SHA256 Credential=AKID/...".
func accessKeyID(auth string) string {
	if scope := credentialScope(auth); scope != nil {
		return scope[0]
	}
	return ""
}

// With a loopback endpoint (kumo, a test proxy), Load substitutes dummy
// credentials only when the environment names no credential source; EKS
// Pod Identity, web identity, a profile and static keys all reach the
// SDK's default chain and sign the calls.
func TestLoopbackEndpointKeepsNamedCredentialSources(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "eks-pod-identity-token")
	webIDFile := filepath.Join(dir, "web-identity-token")
	configFile := filepath.Join(dir, "config")
	os.WriteFile(tokenFile, []byte(podIdentityToken), 0o600)
	os.WriteFile(webIDFile, []byte("jwt"), 0o600)
	os.WriteFile(configFile, []byte("[profile worker]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profile-secret\n"), 0o600)
	f := newCredsFake(t)
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no source: kumo dummy credentials", nil, "test"},
		{"static keys", map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret"}, "AKIAENV"},
		{"EKS Pod Identity", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": f.srv.URL + "/v1/credentials",
			"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile}, "ASIAPODIDENTITY"},
		{"web identity (IRSA)", map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": webIDFile, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/w",
			"AWS_ENDPOINT_URL_STS": f.srv.URL}, "ASIAWEBIDENTITY"},
		{"profile", map[string]string{"AWS_PROFILE": "worker", "AWS_CONFIG_FILE": configFile}, "AKIAPROFILE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir()) // no ~/.aws from the machine running the test
			for _, k := range append(credentialEnv, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
				"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_ROLE_ARN", "AWS_ENDPOINT_URL_STS", EnvEndpoint, EnvEndpointSDK) {
				t.Setenv(k, c.env[k])
			}
			cfg, err := Load(context.Background(), Options{Region: "us-east-1", Endpoint: f.srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := SQS(cfg).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")}); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			got := f.signedBy[len(f.signedBy)-1]
			f.mu.Unlock()
			if got != c.want {
				t.Fatalf("call signed with access key %q, want %q", got, c.want)
			}
		})
	}
}

func TestCredentialSourceInEnv(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if credentialSourceInEnv(getenv) {
		t.Fatal("empty environment names no source")
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE"} {
		env = map[string]string{k: "x"}
		if !credentialSourceInEnv(getenv) {
			t.Errorf("%s names a credential source", k)
		}
	}
}
