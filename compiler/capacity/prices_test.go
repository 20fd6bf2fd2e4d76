package capacity_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/capacity"
	"github.com/fleetc/fleetc/compiler/ir"
)

// TestModelPricesSourced: every model price names the page it was checked against and the
// day, and a price not confirmed on the provider's own page says so on the cost line.
func TestModelPricesSourced(t *testing.T) {
	for name, p := range capacity.Prices().Models.Prices {
		u, err := url.Parse(p.Source)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: source %q is not a page's address", name, p.Source)
		}
		if _, err := time.Parse(time.DateOnly, p.Checked); err != nil {
			t.Errorf("%s: checked %q is not a date: %v", name, p.Checked, err)
		}
		if !p.Confirmed && p.Note == "" {
			t.Errorf("%s: unconfirmed without a note saying why", name)
		}
		_, src, ok := capacity.PriceOf(&ir.Model{Name: "p", Targets: []string{"x/" + name}})
		if !ok {
			t.Errorf("%s: not found by its own name", name)
			continue
		}
		if said := strings.Contains(src, "not confirmed"); said == p.Confirmed {
			t.Errorf("%s (confirmed %v): the cost line names it %q", name, p.Confirmed, src)
		}
	}
}
