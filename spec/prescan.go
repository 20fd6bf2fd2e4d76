package spec

import "fmt"

// prescan bounds the nesting depth and the number of values of a document before either YAML
// parser sees it. Both parsers recurse once per level, and goccy/go-yaml (used only to
// position syntax errors) has no depth limit at all: 100,000 "[" took it to 6 GB before this
// check, past anything recover can catch. The scan is linear and allocates nothing.
//
// It is a cautious approximation of YAML's structure, never stricter than the converter that
// runs after parsing: it counts flow collections opened outside quotes and comments, block
// levels by indentation (and "- " entries on one line), skips block scalars and quoted
// scalars, and counts one value per content line and flow entry. A real spec is far below
// both limits; a hostile one is stopped at the first position that passes them.
func prescan(src []byte) (line, col int, msg string, ok bool) {
	s := scanner{scalarAt: -1}
	for start := 0; start < len(src); {
		end := start
		for end < len(src) && src[end] != '\n' {
			end++
		}
		s.line++
		if col, msg := s.scanLine(src[start:end]); msg != "" {
			return s.line, col, msg, false
		}
		start = end + 1
	}
	return 0, 0, "", true
}

// scanner is prescan's state between lines: a quoted scalar, a flow collection or a block
// scalar can span several.
type scanner struct {
	indents     []int // indentation of the open block levels
	flow        int   // open flow collections
	nodes       int
	quote       byte // the open quoted scalar's delimiter, or 0
	scalarAt    int  // indentation of the line that opened a block scalar, or -1
	line        int
	blockLevels int
}

// scanLine counts one line's levels and values; a limit passed returns its 1-based column
// and what was exceeded.
func (s *scanner) scanLine(text []byte) (col int, msg string) {
	indent := 0
	for indent < len(text) && text[indent] == ' ' {
		indent++
	}
	blank := indent == len(text) || text[indent] == '#' || text[indent] == '\r'
	if s.scalarAt >= 0 {
		if blank || indent > s.scalarAt {
			return 0, "" // a line of a block scalar's text
		}
		s.scalarAt = -1
	}
	if blank && s.quote == 0 {
		return 0, ""
	}
	s.nodes++
	i := 0
	if s.quote == 0 && s.flow == 0 {
		if i, msg = s.blockLine(text, indent); msg != "" {
			return i + 1, msg
		}
	}
	if col, msg := s.tokens(text, i, indent); msg != "" {
		return col, msg
	}
	if s.nodes > maxNodes {
		return 1, fmt.Sprintf("over %d values", maxNodes)
	}
	return 0, ""
}

// blockLine sets the block level of a line outside quotes and flow collections from its
// indentation and leading "- " entries, and returns where its content starts.
func (s *scanner) blockLine(text []byte, indent int) (i int, msg string) {
	for len(s.indents) > 0 && s.indents[len(s.indents)-1] > indent {
		s.indents = s.indents[:len(s.indents)-1]
	}
	if len(s.indents) == 0 || s.indents[len(s.indents)-1] < indent {
		s.indents = append(s.indents, indent)
	}
	// The converter counts the root as level 0: the values of a line at the first
	// indentation sit at level 1.
	s.blockLevels = len(s.indents) - 1
	i = indent
	// "- - - x" opens a level per dash on one line.
	for i+1 < len(text) && text[i] == '-' && (text[i+1] == ' ' || text[i+1] == '\r') {
		if s.blockLevels++; s.blockLevels > maxDepth {
			return i, fmt.Sprintf("block collections nested past %d levels", maxDepth)
		}
		i += 2
		for i < len(text) && text[i] == ' ' {
			i++
		}
	}
	if s.blockLevels > maxDepth {
		return i, fmt.Sprintf("block collections nested past %d levels", maxDepth)
	}
	return i, ""
}

// tokens scans text from i: quoted scalars, comments, flow collections and their entries,
// and the start of a block scalar (whose lines scanLine then skips).
func (s *scanner) tokens(text []byte, i, indent int) (col int, msg string) {
	tokenStart := true
	for ; i < len(text); i++ {
		c := text[i]
		if s.quote != 0 {
			switch {
			case s.quote == '"' && c == '\\':
				i++
			case c == s.quote && s.quote == '\'' && i+1 < len(text) && text[i+1] == '\'':
				i++ // '' is an escaped quote
			case c == s.quote:
				s.quote = 0
				tokenStart = false
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t':
			tokenStart = true
			continue
		case c == '#' && tokenStart:
			i = len(text) // a comment
			continue
		case (c == '"' || c == '\'') && tokenStart:
			s.quote = c
		case (c == '[' || c == '{') && (tokenStart || s.flow > 0):
			s.flow++
			s.nodes++
			if s.blockLevels+s.flow > maxDepth {
				return i + 1, fmt.Sprintf("flow collections nested past %d levels", maxDepth)
			}
			tokenStart = true
			continue
		case (c == ']' || c == '}') && s.flow > 0:
			s.flow--
		case c == ',' && s.flow > 0:
			s.nodes++
			tokenStart = true
			continue
		case (c == '|' || c == '>') && tokenStart && s.flow == 0:
			s.scalarAt = indent
			i = len(text)
			continue
		case c == ':' || c == '-' || c == '?':
			tokenStart = i+1 >= len(text) || text[i+1] == ' '
			continue
		}
		tokenStart = false
	}
	return 0, ""
}
