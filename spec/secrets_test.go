package spec

import (
	"strings"
	"testing"
)

// handlerSpec is a minimal fleet whose one class has the handler h (YAML flow mapping).
func handlerSpec(h string) string {
	return `version: 1
fleet: hello
region: eu-west-1
bus: { name: hello }
events:
  task.requested:
    version: 1
    source: hello.app
    detail: { type: object, required: [trace_id], properties: { trace_id: { type: string } } }
agents:
  greeter:
    runtime: lambda
    consumes: { event: task.requested }
    step: { p95: 2s, max: 30s }
    handler: ` + h + "\n"
}

// handler.secrets parses into the same key source as a model policy's api_key, and the
// schema holds it to exec handlers, to exactly one of secret and ssm, and to variable names,
// each refusal at the handler's line.
func TestHandlerSecrets(t *testing.T) {
	f, ds := Load("fleet.yaml", []byte(handlerSpec(`{ exec: ["/app/greet"], secrets: { VENDOR_TOKEN: { secret: fleet/vendor, json_key: token }, SEARCH_KEY: { ssm: /fleet/search, kms_key: "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab" } } }`)))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	got := f.Fleet.Agents["greeter"].Handler.Secrets
	if got["VENDOR_TOKEN"] != (APIKey{Secret: "fleet/vendor", JSONKey: "token"}) || got["SEARCH_KEY"].SSM != "/fleet/search" || got["SEARCH_KEY"].KMSKey == "" || len(got) != 2 {
		t.Fatalf("secrets = %+v", got)
	}
	for name, h := range map[string]string{
		"http handler":   `{ http: "http://127.0.0.1:8080/step", secrets: { VENDOR_TOKEN: { secret: fleet/vendor } } }`,
		"secret and ssm": `{ exec: ["/app/greet"], secrets: { VENDOR_TOKEN: { secret: fleet/vendor, ssm: /fleet/vendor } } }`,
		"json_key alone": `{ exec: ["/app/greet"], secrets: { VENDOR_TOKEN: { ssm: /fleet/vendor, json_key: token } } }`,
		"not a variable": `{ exec: ["/app/greet"], secrets: { "VENDOR-TOKEN": { secret: fleet/vendor } } }`,
		"neither":        `{ exec: ["/app/greet"], secrets: { VENDOR_TOKEN: {} } }`,
	} {
		_, ds := Load("fleet.yaml", []byte(handlerSpec(h)))
		if !ds.HasErrors() {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(ds.Error(), "fleet.yaml:15:") {
			t.Errorf("%s: not positioned at the handler (line 15): %v", name, ds)
		}
	}
}
