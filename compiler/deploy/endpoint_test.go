package deploy

import (
	"os"
	"strings"
	"testing"
)

// Against an emulator, Terraform never sees a way to real credentials: before, a set
// AWS_PROFILE kept the operator's profile (and a request the override missed reached AWS
// signed by it).
func TestEmulatorEnvironmentHasOnlyDummyCredentials(t *testing.T) {
	environ := []string{
		"AWS_PROFILE=prod", "AWS_DEFAULT_PROFILE=prod", "AWS_ACCESS_KEY_ID=AKIAREALKEY",
		"AWS_SECRET_ACCESS_KEY=real-secret", "AWS_SESSION_TOKEN=real-session",
		"AWS_ROLE_ARN=arn:aws:iam::111122223333:role/ci", "AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/token",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials",
		"AWS_SHARED_CREDENTIALS_FILE=/home/ci/.aws/credentials", "HOME=/home/ci", "PATH=/usr/bin",
	}
	env := terraformEnv(environ, "http://127.0.0.1:4566")
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := env[k]; ok && strings.Contains(kv, v) && k != "HOME" && k != "PATH" {
			t.Errorf("%s=%s reaches terraform", k, v)
		}
	}
	if env["AWS_ACCESS_KEY_ID"] != "test" || env["AWS_SECRET_ACCESS_KEY"] != "test" || env["AWS_CONFIG_FILE"] != os.DevNull ||
		env["AWS_EC2_METADATA_DISABLED"] != "true" || env["HOME"] != "/home/ci" {
		t.Errorf("emulator environment: %v", env)
	}
	// Against AWS the environment passes through.
	env = terraformEnv(environ, "")
	if env["AWS_PROFILE"] != "prod" || env["AWS_SESSION_TOKEN"] != "real-session" || env["AWS_ACCESS_KEY_ID"] != "AKIAREALKEY" {
		t.Errorf("AWS environment changed: %v", env)
	}
}

func TestEndpointMustBeLoopback(t *testing.T) {
	for _, ok := range []string{"", "http://127.0.0.1:4566", "http://localhost:4566", "http://[::1]:4566", "https://127.0.0.2"} {
		if err := CheckEndpoint(ok, false); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.5:4566", "https://s3.amazonaws.com", "http://localhost.evil.example:4566", "ftp://127.0.0.1", "127.0.0.1:4566"} {
		if err := CheckEndpoint(bad, false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckEndpoint("http://10.0.0.5:4566", true); err != nil {
		t.Errorf("--force: %v", err)
	}
}
