package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Emulator is a local AWS emulator whose gaps fleetc knows: each has its own gap profile,
// chosen with --emulator or detected from the endpoint (DetectEmulator).
type Emulator string

const (
	// Kumo is github.com/sivchari/kumo (KumoGaps).
	Kumo Emulator = "kumo"
	// Moto is moto's server mode, moto_server (MotoGaps).
	Moto Emulator = "moto"
)

// Emulators are the emulators --emulator accepts.
var Emulators = []Emulator{Kumo, Moto}

// EmulatorNames is Emulators for a flag's help and errors: "kumo|moto".
func EmulatorNames() string {
	names := make([]string, len(Emulators))
	for i, e := range Emulators {
		names[i] = string(e)
	}
	return strings.Join(names, "|")
}

// ParseEmulator reads --emulator; "" is "detect".
func ParseEmulator(s string) (Emulator, error) {
	for _, e := range Emulators {
		if string(e) == s {
			return e, nil
		}
	}
	if s == "" {
		return "", nil
	}
	return "", fmt.Errorf("--emulator %q: want one of %s", s, EmulatorNames())
}

// Gaps is the emulator's gap profile: what the override works around on it.
func (e Emulator) Gaps() []Gap {
	switch e {
	case Kumo:
		return KumoGaps
	case Moto:
		return MotoGaps
	}
	return nil
}

// Probes each emulator answers and the others do not: kumo answers GET /health with
// {"status":"healthy"} (moto reads /health as an S3 bucket and answers NoSuchBucket); moto
// dumps its state at GET /moto-api/data.json, an object of services, each an object of
// models (kumo answers 404).
const (
	kumoProbe = "/health"
	motoProbe = "/moto-api/data.json"
)

// DetectHow says how DetectEmulator tells the emulators apart, for help texts.
const DetectHow = "kumo answers GET " + kumoProbe + ", moto GET " + motoProbe

// detectTimeout bounds each probe: an emulator on loopback answers at once.
const detectTimeout = 5 * time.Second

// DetectEmulator says which emulator answers at endpoint, by the probes above; an endpoint
// that answers neither is an error asking for --emulator.
func DetectEmulator(ctx context.Context, endpoint string) (Emulator, error) {
	base := strings.TrimRight(endpoint, "/")
	code, body := probe(ctx, base+kumoProbe)
	var health struct{ Status string }
	if code == http.StatusOK && json.Unmarshal(body, &health) == nil && health.Status == "healthy" {
		return Kumo, nil
	}
	code, body = probe(ctx, base+motoProbe)
	var services map[string]map[string]json.RawMessage
	if code == http.StatusOK && json.Unmarshal(body, &services) == nil {
		return Moto, nil
	}
	return "", fmt.Errorf("cannot tell which emulator answers at %s (neither kumo's GET %s nor moto's GET %s): pass --emulator %s",
		endpoint, kumoProbe, motoProbe, EmulatorNames())
}

// probe GETs url and returns the status (0 when unreachable) and up to 1 MiB of the body.
func probe(ctx context.Context, url string) (int, []byte) {
	ctx, cancel := context.WithTimeout(ctx, detectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body
}

// MotoGaps are the differences between moto 5.2 (moto_server) and AWS that stop `terraform
// apply` of a generated fleet, as KumoGaps are kumo's; where moto lacks what kumo lacks, the
// workaround is kumo's (asKumo). moto also lacks two Step Functions calls the provider makes
// (ValidateStateMachineDefinition, ListStateMachineVersions), which no override can avoid:
// tools/moto/serve.py runs moto with them.
var MotoGaps = []Gap{
	asKumo("sqs-redrive-allow-policy", "GetQueueAttributes never returns RedriveAllowPolicy, so the provider waits until its timeout"),
	asKumo("schema-registry", "no EventBridge Schemas service (CreateRegistry answers 500)"),
	asKumo("eks-pod-identity", "no Pod Identity association API (CreatePodIdentityAssociation answers 404)"),
	oneAccount("moto-account", MotoAccount),
}

// MotoAccount is the account moto serves by default (MOTO_ACCOUNT_ID unset).
const MotoAccount = "123456789012"

// asKumo is kumo's gap id, for an emulator that lacks the same thing (it does emulator
// instead): one workaround, written once.
func asKumo(id, emulator string) Gap {
	for _, g := range KumoGaps {
		if g.ID == id {
			g.Emulator = emulator
			return g
		}
	}
	panic("deploy: no kumo gap " + id)
}
