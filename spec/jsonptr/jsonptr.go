// Package jsonptr escapes and unescapes JSON pointer reference tokens (RFC 6901), the one
// place fleetc does so: diagnostics, schema paths, contract comparisons and review findings
// all point into specs and schemas with JSON pointers.
package jsonptr

import "strings"

// Built once: a Replacer compiles itself on first use.
var (
	escaper   = strings.NewReplacer("~", "~0", "/", "~1")
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// Escape encodes one reference token: "~" as "~0", then "/" as "~1".
func Escape(token string) string { return escaper.Replace(token) }

// Unescape decodes one reference token ("~1" to "/", then "~0" to "~", so "~01" is "~1").
func Unescape(token string) string { return unescaper.Replace(token) }

// Join builds a pointer from unescaped tokens: "" for none, else "/" + each escaped token.
func Join(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escaper.Replace(t))
	}
	return b.String()
}

// Last is the unescaped final token of pointer p ("" for the root).
func Last(p string) string {
	return unescaper.Replace(p[strings.LastIndexByte(p, '/')+1:])
}
