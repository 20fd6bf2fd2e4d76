package artifact

// Module is the generated Terraform as the backend wrote it: the inventory (which spec part
// owns each resource) and every resource, data and output block with its attributes. The
// backend records it while it writes the files, so the consumers that reason about the
// configuration (fleetc diff's prediction, the emulator override) read it from here instead of
// parsing the generated HCL back.
type Module struct {
	Inventory []Resource // resource and data blocks, sorted by address
	Blocks    []Block    // resource, data and output blocks, in file then source order
}

// BlockKind is what a top-level block of the module is.
type BlockKind string

const (
	KindResource BlockKind = "resource"
	KindData     BlockKind = "data"
	KindOutput   BlockKind = "output"
)

// Block is one resource, data or output block.
type Block struct {
	Kind BlockKind
	Type string // resource or data source type; "" for an output
	Name string
	File string // terraform/agent_coder.tf
	// Attrs is every attribute, those of nested blocks included, in source order. A nested
	// block's attribute is named by its path, repeated blocks numbered in order as Terraform
	// lists them: "retry_policy.0.maximum_retry_attempts".
	Attrs []Attr
}

// Address is the block's address: aws_sqs_queue.coder, data.aws_iam_policy_document.x,
// output.bus_arn.
func (b *Block) Address() string {
	switch b.Kind {
	case KindData:
		return "data." + b.Type + "." + b.Name
	case KindOutput:
		return "output." + b.Name
	}
	return b.Type + "." + b.Name
}

// Attr returns the attribute at path.
func (b *Block) Attr(path string) (*Attr, bool) {
	for i := range b.Attrs {
		if b.Attrs[i].Path == path {
			return &b.Attrs[i], true
		}
	}
	return nil, false
}

// Attr is one attribute: its expression as written, and what the expression refers to.
type Attr struct {
	Path string
	Src  string // the expression's source, byte for byte as in the file
	// Refs is every traversal in the expression (aws_sqs_queue.coder.arn,
	// data.aws_partition.current.partition, path.module), in source order.
	Refs []Span
	// Inputs are the generated files the expression reads with file() or templatefile().
	Inputs []Input
}

// Span is a piece of an attribute's source: Src[Start:End] == Text.
type Span struct {
	Text       string
	Start, End int
}

// Input is a generated file an expression reads: Func("${path.module}/../File", …). Span is
// the literal "/../File" in the expression's source.
type Input struct {
	Func string // file or templatefile
	File string // output-root path: runtime/coder.json, statemachines/flow.asl.json
	Span Span
}
