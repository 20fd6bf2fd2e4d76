package compat

import "testing"

// pointerOrRoot on every shape of pointer, those the walker makes and the keyword-ending ones
// it could: a properties or definitions keyword is dropped between names but kept where it is
// the place itself (the last segment) or a property's name; items reads [] anywhere, the
// root's own items included.
func TestPointerOrRoot(t *testing.T) {
	for p, want := range map[string]string{
		"":                                      "the event",
		"/properties/detail/properties/a":       "detail.a",
		"/properties/detail/properties/a/items": "detail.a[]",
		"/properties/detail/properties/a/items/properties/b": "detail.a[].b",
		"/items":              "[]",
		"/items/properties/b": "[].b",
		"/properties/detail/properties/properties": "detail.properties",
		"/properties/detail/properties/items":      "detail.items",
		"/properties/detail/properties":            "detail.properties",
		"/properties":                              "properties",
		"/definitions":                             "definitions",
		"/definitions/money/properties/amount":     "definitions.money.amount",
		"/properties/detail/properties/a~1b":       "detail.a/b",
	} {
		if got := pointerOrRoot(p); got != want {
			t.Errorf("pointerOrRoot(%q) = %q, want %q", p, got, want)
		}
	}
}
