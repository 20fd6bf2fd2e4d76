package dev

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A fault lasts more than 0 s and at most MaxFault; anything else is a 400 naming the range.
func TestFaultDuration(t *testing.T) {
	for _, tc := range []struct {
		seconds float64
		want    time.Duration
		ok      bool
	}{{0, 0, false}, {-1, 0, false}, {0.5, 500 * time.Millisecond, true}, {MaxFault.Seconds(), MaxFault, true}, {MaxFault.Seconds() + 1, 0, false}} {
		rec := httptest.NewRecorder()
		got, ok := faultDuration(rec, tc.seconds)
		if ok != tc.ok || got != tc.want || (!ok && rec.Code != http.StatusBadRequest) {
			t.Errorf("%g s: %v %v (HTTP %d), want %v %v", tc.seconds, got, ok, rec.Code, tc.want, tc.ok)
		}
	}
}
