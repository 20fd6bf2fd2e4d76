package review

import (
	"sort"
	"strings"

	"github.com/fleetc/fleetc/compiler/artifact"
)

// resource is one resource or data block of the generated Terraform, flattened: every
// attribute, nested blocks included, keyed by its path ("retry_policy.0.maximum_retry_attempts").
type resource struct {
	Address string // aws_sqs_queue.coder, data.aws_iam_policy_document.coder
	Type    string
	Data    bool
	File    string
	Attrs   map[string]string   // path → expression source, as generated (formatting is canonical)
	Refs    map[string][]string // path → referenced "address.attribute" traversals
	// Inputs maps an argument to the generated files it reads with file() or templatefile()
	// (runtime configs, schemas, state machine definitions), as output-root paths
	// ("runtime/coder.json"): their bytes are part of the argument's value.
	Inputs map[string][]string
}

// moduleResources reads a set's Terraform module, as the backend recorded it while writing
// the files, into resources keyed by address.
func moduleResources(set *artifact.Set) map[string]*resource {
	out := map[string]*resource{}
	for _, b := range set.Module().Blocks {
		if b.Kind != artifact.KindResource && b.Kind != artifact.KindData {
			continue
		}
		r := &resource{Address: b.Address(), Type: b.Type, Data: b.Kind == artifact.KindData, File: b.File,
			Attrs: map[string]string{}, Refs: map[string][]string{}, Inputs: map[string][]string{}}
		for _, a := range b.Attrs {
			r.Attrs[a.Path] = a.Src
			for _, t := range a.Refs {
				if ref := traversalRef(t.Text); ref != "" {
					r.Refs[a.Path] = append(r.Refs[a.Path], ref)
				}
			}
			sort.Strings(r.Refs[a.Path])
			var in []string
			for _, i := range a.Inputs {
				in = append(in, i.File)
			}
			if len(in) > 0 {
				sort.Strings(in)
				r.Inputs[a.Path] = in
			}
		}
		out[r.Address] = r
	}
	return out
}

// traversalRef renders a reference to another block as "address.attribute"
// (aws_sqs_queue.coder.arn, data.aws_iam_policy_document.x.json); "" for variables, locals
// and other roots that are not blocks.
func traversalRef(traversal string) string {
	parts := strings.Split(traversal, ".")
	switch {
	case len(parts) >= 4 && parts[0] == "data":
		return strings.Join(parts[:4], ".")
	case len(parts) >= 3 && strings.HasPrefix(parts[0], "aws_"):
		return strings.Join(parts[:3], ".")
	}
	return ""
}

// splitRef splits "aws_sqs_queue.coder.arn" into the block address and the attribute.
func splitRef(ref string) (address, attr string) {
	i := strings.LastIndexByte(ref, '.')
	return ref[:i], ref[i+1:]
}
