package openai

import "bytes"

// eachMember calls visit with each member of the JSON object in body, in document order:
// its key and its raw value. body must already be known to be a valid JSON object (it
// decoded into a struct); ok is false when the scan cannot vouch for a key (one written
// with escapes) and the caller should decode the slow way. It saves decoding the whole
// body a second time into a map only to learn its keys.
func eachMember(body []byte, visit func(key string, value []byte)) (ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	for i < len(body) && body[i] == '"' {
		end := bytes.IndexByte(body[i+1:], '"')
		if end < 0 {
			return false
		}
		key := body[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(body, i+2+end)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		vEnd := skipValue(body, i)
		if vEnd < 0 {
			return false
		}
		visit(string(key), body[i:vEnd])
		i = skipSpace(body, vEnd)
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(body, i+1)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the index just past the JSON value starting at i (-1 when unterminated).
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 { // the enclosing object's end: a scalar ended just before
				return i
			}
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
