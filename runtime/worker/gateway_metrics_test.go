package worker

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/telemetry/metric"
)

// answers is an upstream that answers at once.
type answers struct{}

func (answers) System() string { return "fake" }
func (answers) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	return &router.Response{Model: "m", StopReason: router.StopEndTurn, Message: router.Message{Role: router.RoleAssistant, Content: []router.Block{{Text: "ok"}}}}, nil
}

// TestEmbeddedGatewayRecordsOnTheWorkersRegistry: the gateway an exec handler gets records its
// answers on the worker's registry, which the worker's metrics listener serves.
func TestEmbeddedGatewayRecordsOnTheWorkersRegistry(t *testing.T) {
	tel, err := telemetry.New(telemetry.Options{ServiceName: "test-researcher", Class: "researcher", LogWriter: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New([]router.Policy{{Name: "fast", Deployments: []router.Deployment{{Name: "fake/m", Model: "m", Provider: answers{}}}, Timeout: time.Minute}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.NewExec([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.Models.Policy = "fast"
	gw, err := startGateway(r, cfg, h, func(string) string { return "" }, tel)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gw.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mfs, err := tel.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric.GatewayRequests {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() == 1 && m.GetLabel()[0].GetValue() == "fast" && m.GetLabel()[1].GetValue() == "200" {
				return
			}
		}
	}
	t.Errorf("the worker's registry has no %s of 1 after one call (status %d)", metric.GatewayRequests, resp.StatusCode)
}
