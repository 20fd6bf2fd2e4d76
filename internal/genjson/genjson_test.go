package genjson

import "testing"

func TestForms(t *testing.T) {
	type doc struct {
		Z string  `json:"z"`
		A float64 `json:"a"`
	}
	v := doc{Z: "<a & b>", A: 1.50}
	for _, tc := range []struct {
		name string
		f    func(any) ([]byte, error)
		want string
	}{
		{"Encode keeps struct order, no HTML escaping, newline", Encode, "{\n  \"z\": \"<a & b>\",\n  \"a\": 1.5\n}\n"},
		{"Compact on one line, no newline", Compact, `{"z":"<a & b>","a":1.5}`},
		{"Canonical sorts struct keys", Canonical, "{\n  \"a\": 1.5,\n  \"z\": \"<a & b>\"\n}\n"},
	} {
		got, err := tc.f(v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.want)
		}
	}
	if got, _ := Encode(map[string]int{"b": 1, "a": 2}); string(got) != "{\n  \"a\": 2,\n  \"b\": 1\n}\n" {
		t.Errorf("map keys not sorted: %q", got)
	}
}
