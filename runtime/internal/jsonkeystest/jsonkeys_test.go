package jsonkeystest

import (
	"slices"
	"testing"
)

func TestDuplicates(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{`{"a":1,"b":{"a":2}}`, nil},
		{`{"class":"x","msg":"m","class":"x"}`, []string{"$.class"}},
		{`{"a":[{"k":1,"k":2}],"g":{"z":1,"z":1}}`, []string{"$.a[0].k", "$.g.z"}},
	} {
		got, err := Duplicates([]byte(tc.doc))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.doc, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":`, `{} {}`, ``} {
		if _, err := Duplicates([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
