// Package refpath parses Step Functions reference paths: the JSONPath subset a Map state's
// ItemsPath accepts. A reference path names one node: `$`, then fields (`.name` or
// `['name']`) and array indexes (`[0]`). Wildcards, deep scan (`..`), filters, slices,
// unions, functions and the operators @ , : ? are refused, as Step Functions refuses them
// when the state machine is created; fleetc says so at validate time, with the offset.
package refpath

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLength bounds a path: a spec value longer than this is not a path anyone wrote.
const MaxLength = 1024

// Segment is one step of a path: a field name, or an array index when Field is false.
type Segment struct {
	Field bool
	Name  string
	Index int
}

// Error is a malformed path: Offset is the byte of the path where it goes wrong.
type Error struct {
	Offset int
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Reason) }

// refused are the characters a dot-notation name cannot hold: JSONPath syntax and the
// operators reference paths do not support.
const refused = ".[]'\"*@,:?()$\\"

// Parse parses a reference path rooted at the state input ($).
func Parse(p string) ([]Segment, error) {
	if len(p) > MaxLength {
		return nil, &Error{MaxLength, fmt.Sprintf("longer than %d bytes", MaxLength)}
	}
	if strings.HasPrefix(p, "$$") {
		return nil, &Error{0, "a context-object path ($$) is not the state input"}
	}
	if !strings.HasPrefix(p, "$") {
		return nil, &Error{0, "a reference path starts with $"}
	}
	var segs []Segment
	for i := 1; i < len(p); {
		switch p[i] {
		case '.':
			j := i + 1
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			name := p[i+1 : j]
			if name == "" {
				if j < len(p) && p[j] == '.' {
					return nil, &Error{i, "deep scan (..) is not a reference path"}
				}
				return nil, &Error{i, "empty field name after ."}
			}
			if k := strings.IndexFunc(name, badNameRune); k >= 0 {
				return nil, &Error{i + 1 + k, fmt.Sprintf("%q cannot appear in a field name (write ['name'] for names with special characters; wildcards, filters and functions are not reference paths)", firstRune(name[k:]))}
			}
			segs = append(segs, Segment{Field: true, Name: name})
			i = j
		case '[':
			seg, n, err := bracket(p, i)
			if err != nil {
				return nil, err
			}
			segs = append(segs, seg)
			i += n
		default:
			return nil, &Error{i, fmt.Sprintf("expected . or [ after %q", p[:i])}
		}
	}
	return segs, nil
}

// bracket parses ['name'] or [N] at p[i] and returns its length.
func bracket(p string, i int) (Segment, int, error) {
	end := strings.IndexByte(p[i:], ']')
	if i+1 < len(p) && p[i+1] == '\'' {
		var b strings.Builder
		for j := i + 2; j < len(p); j++ {
			switch c := p[j]; {
			case c == '\\' && j+1 < len(p):
				b.WriteByte(p[j+1])
				j++
			case c == '\'':
				if j+1 >= len(p) || p[j+1] != ']' {
					return Segment{}, 0, &Error{j + 1, "expected ] after the quoted name (unions are not reference paths)"}
				}
				if b.Len() == 0 {
					return Segment{}, 0, &Error{i, "empty field name in ['']"}
				}
				return Segment{Field: true, Name: b.String()}, j + 2 - i, nil
			default:
				b.WriteByte(c)
			}
		}
		return Segment{}, 0, &Error{i, "unterminated ['…']"}
	}
	if end < 0 {
		return Segment{}, 0, &Error{i, "unterminated ["}
	}
	inner := p[i+1 : i+end]
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 || inner != strconv.Itoa(n) {
		return Segment{}, 0, &Error{i + 1, fmt.Sprintf("[%s] is not an array index or a quoted name (wildcards, slices, unions and filters are not reference paths)", inner)}
	}
	return Segment{Index: n}, end + 1, nil
}

func badNameRune(r rune) bool {
	return strings.ContainsRune(refused, r) || unicode.IsSpace(r) || unicode.IsControl(r)
}

func firstRune(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	return string(r)
}
