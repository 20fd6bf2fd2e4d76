package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestEachMemberFindsWhatAMapDecodeFinds: on valid objects, the scan's members (the last of
// duplicates winning) are exactly the keys and values encoding/json decodes into a map,
// through strings holding braces, brackets, commas and escaped quotes, nested values,
// scalars last and odd whitespace; a key written with escapes is left to the map.
func TestEachMemberFindsWhatAMapDecodeFinds(t *testing.T) {
	for _, body := range []string{
		`{}`, ` { } `,
		`{"model":"fast","max_tokens":256}`,
		`{"a":1,"b":-2.5e3,"c":true,"d":null,"e":false}`,
		"{\n\t\"messages\" : [ {\"role\":\"user\",\"content\":\"} ] , { \\\" \\\\\"}], \"n\" : 1\r\n}",
		`{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}],"seed":7}`,
		`{"stop":["}",",","]"],"user":"u\"v","logit_bias":{"50256":-100}}`,
		`{"seed":1,"seed":2}`,
		`{"seed":1,"seed":null}`,
		`{"x":"\u00e9\\"}`,
	} {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		got := map[string]json.RawMessage{}
		if !eachMember([]byte(body), func(k string, v []byte) { got[k] = v }) {
			t.Errorf("%s: the scan gave up on a body without escaped keys", body)
			continue
		}
		if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
			t.Errorf("%s: keys %v, want %v", body, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Errorf("%s: %s = %s, want %s", body, k, got[k], v)
			}
		}
	}
	if eachMember([]byte(`{"se\u0065d":1}`), func(string, []byte) {}) {
		t.Error("a key written with escapes was scanned: its name is not its bytes")
	}
}

// TestDecodeRequestRefusesAndCarriesAsBefore: the first unsupported field in sorted order is
// named (also when its key is escaped and the map path decodes it), extras travel, a null
// extra does not, the last duplicate wins.
func TestDecodeRequestRefusesAndCarriesAsBefore(t *testing.T) {
	for body, want := range map[string]string{
		`{"zeta":1,"messages":[],"alpha":2}`: `unsupported field "alpha"`,
		`{"messages":[],"\u007a":1}`:         `unsupported field "z"`,
	} {
		if _, err := DecodeRequest([]byte(body)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
	cr, err := DecodeRequest([]byte(`{"messages":[],"seed":1,"seed":2,"user":null,"metadata":{"a":"b"},"top_logprobs":3,"metadata":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Extra) != 2 || string(cr.Extra["seed"]) != "2" || string(cr.Extra["top_logprobs"]) != "3" {
		t.Errorf("extra %v, want seed 2 and top_logprobs 3 (user and the last metadata null: dropped)", cr.Extra)
	}
}
