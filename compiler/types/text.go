package types

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Spec text (descriptions, detail types, enum values, patterns, property names) reaches the
// generated files in exactly two forms: a comment cut by commentLines, and a string literal
// written by the language's literal function. An identifier is never spec text: it is
// mangled by ident and made unique by names. Nothing else in the templates comes from a spec.

// commentLines cuts s into lines that stay comments in all three languages: every character
// any of them (or an editor) takes as a line break starts a new line, and control and format
// characters (NUL, BOM, bidirectional overrides), which Go and Python refuse or which hide
// what a reviewer reads, become spaces. Invalid UTF-8 becomes U+FFFD.
func commentLines(s string) []string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var lines []string
	var cur strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0x1c || r == 0x1d || r == 0x1e ||
			unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			lines = append(lines, strings.TrimRight(cur.String(), " "))
			cur.Reset()
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			cur.WriteByte(' ')
		default:
			cur.WriteRune(r)
		}
	}
	return append(lines, strings.TrimRight(cur.String(), " "))
}

// oneLine is s as a single comment line (the file headers, where a line of their own could
// be read as a build constraint or an encoding declaration).
func oneLine(s string) string { return strings.Join(commentLines(s), " ") }

// tsComment keeps a line inside a /** */ block: its end marker is broken.
func tsComment(line string) string { return strings.ReplaceAll(line, "*/", `*\/`) }

// goLiteral is a Go interpreted string literal of s.
func goLiteral(s string) string { return strconv.Quote(s) }

// tsLiteral and pyLiteral are string literals of s in TypeScript and Python.
func tsLiteral(s string) string {
	return quote(s, func(r rune) string { return fmt.Sprintf(`\u{%X}`, r) })
}

func pyLiteral(s string) string {
	return quote(s, func(r rune) string { return fmt.Sprintf(`\U%08X`, r) })
}

// quote is a double-quoted literal of s in the escapes TypeScript and Python share; a
// character that is not printable (a control, a line separator, BOM, a bidirectional
// override) is escaped, so nothing in the literal ends a line or hides from a reviewer.
// astral writes a character beyond U+FFFF, where the two languages differ.
func quote(s string, astral func(rune) string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case strconv.IsPrint(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString(astral(r))
		default:
			fmt.Fprintf(&b, `\u%04X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ident turns a spec name (cdk-synth, invoice_id, jobId) into an identifier that is the same
// in Go, TypeScript and Python: ASCII letters and digits, each run of anything else a word
// break (Python folds non-ASCII identifiers by NFKC, so two names could become one), never
// starting with a digit and never empty.
func ident(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !isASCIILetter(r) && !('0' <= r && r <= '9') {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if out == "" || ('0' <= out[0] && out[0] <= '9') {
		out = "X" + out
	}
	return out
}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

// names hands out identifiers unique in one scope: a name already taken gets the smallest
// free numeric suffix, so the same spec always yields the same names.
type names map[string]bool

func (n names) unique(base string) string {
	name := base
	for i := 2; n[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	n[name] = true
	return name
}

// goTag is a Go struct tag that makes encoding/json read and write the property named
// name. encoding/json ignores a tag name holding anything but letters, digits and its
// allowed punctuation (and falls back to the field's name), so such a name is an error,
// not a silently different type.
func goTag(name string, required bool) (string, error) {
	if !goTagName(name) {
		return "", fmt.Errorf("property %q cannot be a Go JSON field name (encoding/json allows only letters, digits and %s): rename it or generate TypeScript or Python", name, goTagPunct)
	}
	opts := ",omitempty"
	if required {
		opts = ""
		if name == "-" {
			opts = "," // a bare "-" means "never encode"
		}
	}
	return "`json:" + strconv.Quote(name+opts) + "`", nil
}

// goTagPunct is the punctuation encoding/json accepts in a tag's name.
const goTagPunct = "!#$%&()*+-./:;<=>?@[]^_{|}~ "

func goTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(goTagPunct, r) && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
