// Package jsonkeystest finds duplicate object keys in a JSON document, which encoding/json
// silently accepts (last wins) but strict log pipelines reject. Only tests import it (on log lines).
package jsonkeystest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Duplicates returns "path.key" for every key that appears twice in one object of doc, or an
// error when doc is not one JSON value.
func Duplicates(doc []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var dups []string
	if err := value(dec, "$", &dups); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return dups, nil
}

func value(dec *json.Decoder, path string, dups *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				*dups = append(*dups, path+"."+key)
			}
			seen[key] = true
			if err := value(dec, path+"."+key, dups); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := value(dec, fmt.Sprintf("%s[%d]", path, i), dups); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
