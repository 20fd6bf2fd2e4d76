// Package output holds the JSON Schemas of the documents fleetc's commands print with
// --format json (one per command, each opening with header.schema.json), so tests and
// consumers validate against the same files.
package output

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed *.schema.json
var files embed.FS

const suffix = ".schema.json"

// Names are the schemas, by file name without ".schema.json" ("capacity", "header", …).
func Names() []string {
	paths, _ := fs.Glob(files, "*"+suffix)
	var out []string
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(p, suffix))
	}
	sort.Strings(out)
	return out
}

// Compile compiles every schema (each under its $id, so they can $ref one another) and
// returns them by name.
func Compile() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	for _, name := range Names() {
		b, err := files.ReadFile(name + suffix)
		if err != nil {
			return nil, err
		}
		var head struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(b, &head); err != nil || head.ID == "" {
			return nil, fmt.Errorf("%s%s: no $id (%v)", name, suffix, err)
		}
		if err := c.AddResource(head.ID, bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
		}
		ids[name] = head.ID
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
		}
		out[name] = s
	}
	return out, nil
}
