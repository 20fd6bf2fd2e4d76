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
	var (
		indents     []int // indentation of the open block levels
		flow        int   // open flow collections
		nodes       int
		quote       byte // the open quoted scalar's delimiter, or 0
		scalarAt    = -1 // indentation of the line that opened a block scalar, or -1
		lineNo      = 0
		blockLevels = 0
	)
	fail := func(l, c int, m string) (int, int, string, bool) { return l, c, m, false }
	for start := 0; start < len(src); {
		end := start
		for end < len(src) && src[end] != '\n' {
			end++
		}
		text := src[start:end]
		start = end + 1
		lineNo++

		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		blank := indent == len(text) || text[indent] == '#' || text[indent] == '\r'
		if scalarAt >= 0 {
			if blank || indent > scalarAt {
				continue // a line of a block scalar's text
			}
			scalarAt = -1
		}
		if blank && quote == 0 {
			continue
		}
		nodes++
		i := 0
		if quote == 0 && flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] > indent {
				indents = indents[:len(indents)-1]
			}
			if len(indents) == 0 || indents[len(indents)-1] < indent {
				indents = append(indents, indent)
			}
			// The converter counts the root as level 0: the values of a line at the first
			// indentation sit at level 1.
			blockLevels = len(indents) - 1
			i = indent
			// "- - - x" opens a level per dash on one line.
			for i+1 < len(text) && text[i] == '-' && (text[i+1] == ' ' || text[i+1] == '\r') {
				if blockLevels++; blockLevels > maxDepth {
					return fail(lineNo, i+1, fmt.Sprintf("block collections nested past %d levels", maxDepth))
				}
				i += 2
				for i < len(text) && text[i] == ' ' {
					i++
				}
			}
			if blockLevels > maxDepth {
				return fail(lineNo, i+1, fmt.Sprintf("block collections nested past %d levels", maxDepth))
			}
		}
		tokenStart := true
		for ; i < len(text); i++ {
			c := text[i]
			if quote != 0 {
				switch {
				case quote == '"' && c == '\\':
					i++
				case c == quote && quote == '\'' && i+1 < len(text) && text[i+1] == '\'':
					i++ // '' is an escaped quote
				case c == quote:
					quote = 0
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
				quote = c
			case (c == '[' || c == '{') && (tokenStart || flow > 0):
				flow++
				nodes++
				if blockLevels+flow > maxDepth {
					return fail(lineNo, i+1, fmt.Sprintf("flow collections nested past %d levels", maxDepth))
				}
				tokenStart = true
				continue
			case (c == ']' || c == '}') && flow > 0:
				flow--
			case c == ',' && flow > 0:
				nodes++
				tokenStart = true
				continue
			case (c == '|' || c == '>') && tokenStart && flow == 0:
				scalarAt = indent
				i = len(text)
				continue
			case c == ':' || c == '-' || c == '?':
				tokenStart = i+1 >= len(text) || text[i+1] == ' '
				continue
			}
			tokenStart = false
		}
		if nodes > maxNodes {
			return fail(lineNo, 1, fmt.Sprintf("over %d values", maxNodes))
		}
	}
	return 0, 0, "", true
}
