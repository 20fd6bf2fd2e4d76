package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/transport"
)

type never struct{}

func (never) System() string { return "fake" }
func (never) Chat(context.Context, string, *router.Request) (*router.Response, error) {
	return nil, context.Canceled
}

// TestAdmissionBoundsFromThePolicysCaps: a capped policy waits 2 per slot unless told, an
// uncapped one admits the upstream pool's size and, unless told, keeps no waiting room.
func TestAdmissionBoundsFromThePolicysCaps(t *testing.T) {
	dep := []router.Deployment{{Name: "fake/m", Model: "m", Provider: never{}}}
	r, err := router.New([]router.Policy{{Name: "capped", Deployments: dep, Timeout: time.Second, MaxInFlight: 4},
		{Name: "open", Deployments: dep, Timeout: time.Second}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		maxWaiting             int
		policy                 string
		wantSlots, wantWaiting int
	}{
		{0, "capped", 4, 8},
		{3, "capped", 4, 3},
		{0, "open", transport.DefaultIdle, 0},
		{5, "open", transport.DefaultIdle, 5},
	} {
		g := newAdmission(r, c.maxWaiting, nil).gates[c.policy]
		if g.slots != c.wantSlots || g.waiting != c.wantWaiting {
			t.Errorf("%s with max-waiting %d: %d slots, %d waiting; want %d, %d", c.policy, c.maxWaiting, g.slots, g.waiting, c.wantSlots, c.wantWaiting)
		}
	}
}
