package render

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// wikilinkParser reads [[target#heading|display]], [[#heading]],
// [[target#^block]] and the embed form ![[...]].
type wikilinkParser struct{}

func (wikilinkParser) Trigger() []byte { return []byte{'[', '!'} }

func (wikilinkParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	embed := false
	if len(line) > 0 && line[0] == '!' {
		embed = true
		line = line[1:]
	}
	if !bytes.HasPrefix(line, []byte("[[")) {
		return nil
	}
	end := bytes.Index(line[2:], []byte("]]"))
	if end < 0 {
		return nil
	}
	inner := string(line[2 : 2+end])
	if strings.Contains(inner, "[[") || strings.TrimSpace(inner) == "" {
		return nil
	}
	ref, display, _ := strings.Cut(inner, "|")
	// Inside a table the pipe is written \|.
	ref = strings.TrimSuffix(ref, `\`)
	target, frag, _ := strings.Cut(ref, "#")
	n := &WikiLink{Target: strings.TrimSpace(target), Display: strings.TrimSpace(display), Embed: embed}
	frag = strings.TrimSpace(frag)
	if strings.HasPrefix(frag, "^") {
		n.Block = frag[1:]
	} else {
		n.Heading = frag
	}
	adv := 2 + end + 2
	if embed {
		adv++
	}
	block.Advance(adv)
	return n
}

// highlightParser reads ==text== (the delimiter pair of two '=').
type highlightParser struct{}

type highlightDelims struct{}

func (highlightDelims) IsDelimiter(b byte) bool { return b == '=' }
func (highlightDelims) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char && opener.OriginalLength == 2 && closer.OriginalLength == 2
}
func (highlightDelims) OnMatch(consumes int) ast.Node { return &Highlight{} }

func (highlightParser) Trigger() []byte { return []byte{'='} }

func (highlightParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	node := parser.ScanDelimiter(line, before, 2, highlightDelims{})
	if node == nil || node.OriginalLength != 2 || before == '=' {
		return nil
	}
	node.Segment = segment.WithStop(segment.Start + node.OriginalLength)
	block.Advance(node.OriginalLength)
	pc.PushDelimiter(node)
	return node
}

func (highlightParser) CloseBlock(parent ast.Node, pc parser.Context) {}

// tagParser reads #tag and Logseq's #[[tag with spaces]] after a space or
// at the start of a line, as Obsidian does (a # inside a word or an
// address is text).
type tagParser struct{}

func (tagParser) Trigger() []byte { return []byte{'#'} }

func (tagParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	if !(before == '\n' || unicode.IsSpace(before) || before == '(') {
		return nil
	}
	line, _ := block.PeekLine()
	rest := line[1:]
	if bytes.HasPrefix(rest, []byte("[[")) {
		end := bytes.Index(rest, []byte("]]"))
		if end < 0 {
			return nil
		}
		name := strings.TrimSpace(string(rest[2:end]))
		if name == "" || strings.ContainsAny(name, "[]") {
			return nil
		}
		block.Advance(1 + end + 2)
		return &Tag{Name: name}
	}
	n, digitsOnly := 0, true
	for n < len(rest) {
		r, size := utf8.DecodeRune(rest[n:])
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '/' || unicode.Is(unicode.So, r) || unicode.Is(unicode.Mn, r)) {
			break
		}
		if !unicode.IsDigit(r) {
			digitsOnly = false
		}
		n += size
	}
	name := strings.TrimRight(string(rest[:n]), "/")
	if name == "" || digitsOnly {
		return nil
	}
	block.Advance(1 + len(name))
	return &Tag{Name: name}
}

// mathParser reads inline $tex$ and $$tex$$ (shown as a display formula),
// as Obsidian does: the opening $ is followed and the closing $ preceded
// by a non-space, and the closing $ is not followed by a digit ($5 and $6
// stay text).
type mathParser struct{}

func (mathParser) Trigger() []byte { return []byte{'$'} }

func (mathParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	if block.PrecendingCharacter() == '\\' {
		return nil
	}
	line, _ := block.PeekLine()
	if bytes.HasPrefix(line, []byte("$$")) {
		end := bytes.Index(line[2:], []byte("$$"))
		if end <= 0 {
			return nil
		}
		tex := string(line[2 : 2+end])
		if strings.TrimSpace(tex) == "" {
			return nil
		}
		block.Advance(2 + end + 2)
		return &Math{TeX: strings.TrimSpace(tex), Display: true}
	}
	if len(line) < 3 || line[1] == ' ' || line[1] == '\t' || line[1] == '$' {
		return nil
	}
	for i := 2; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '$':
			if line[i-1] == ' ' || line[i-1] == '\t' || (i+1 < len(line) && line[i+1] >= '0' && line[i+1] <= '9') {
				continue
			}
			block.Advance(i + 1)
			return &Math{TeX: string(line[1:i])}
		case '\n', '\r':
			return nil
		}
	}
	return nil
}

// blockRefParser reads Logseq's ((uuid)).
type blockRefParser struct{}

func (blockRefParser) Trigger() []byte { return []byte{'('} }

func (blockRefParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if len(line) < 40 || line[1] != '(' || line[38] != ')' || line[39] != ')' || !isUUID(line[2:38]) {
		return nil
	}
	block.Advance(40)
	return &BlockRef{UUID: strings.ToLower(string(line[2:38]))}
}

func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// mathBlockParser reads a $$ ... $$ block (the $$ may share a line with
// the formula's first or last line).
type mathBlockParser struct{}

func (mathBlockParser) Trigger() []byte { return []byte{'$'} }

func (mathBlockParser) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	line, _ := reader.PeekLine()
	pos := pc.BlockOffset()
	if pos < 0 || pos+2 > len(line) || !bytes.HasPrefix(line[pos:], []byte("$$")) {
		return nil, parser.NoChildren
	}
	n := &MathBlock{}
	rest := bytes.TrimSpace(line[pos+2:])
	if len(rest) >= 2 && bytes.HasSuffix(rest, []byte("$$")) {
		// One line: $$ x $$.
		n.TeX = string(bytes.TrimSpace(rest[:len(rest)-2]))
		n.done = true
		reader.AdvanceToEOL()
		return n, parser.NoChildren
	}
	n.TeX = string(rest)
	reader.AdvanceToEOL()
	return n, parser.NoChildren
}

func (mathBlockParser) Continue(node ast.Node, reader text.Reader, pc parser.Context) parser.State {
	n := node.(*MathBlock)
	line, _ := reader.PeekLine()
	if line == nil || n.done {
		return parser.Close
	}
	t := bytes.TrimSpace(line)
	if bytes.HasSuffix(t, []byte("$$")) {
		n.TeX = joinTeX(n.TeX, string(t[:len(t)-2]))
		reader.AdvanceToEOL()
		return parser.Close
	}
	n.TeX = joinTeX(n.TeX, string(util.TrimRightSpace(line)))
	reader.AdvanceToEOL()
	return parser.Continue | parser.NoChildren
}

func joinTeX(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

func (mathBlockParser) Close(node ast.Node, reader text.Reader, pc parser.Context) {
	n := node.(*MathBlock)
	n.TeX = strings.TrimSpace(n.TeX)
}

func (mathBlockParser) CanInterruptParagraph() bool { return true }
func (mathBlockParser) CanAcceptIndentedLine() bool { return false }

// macroParser reads Logseq's embeds: {{embed [[page]]}} (as ![[page]])
// and {{embed ((uuid))}} (the block, rendered in place).
type macroParser struct{}

func (macroParser) Trigger() []byte { return []byte{'{'} }

func (macroParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if !bytes.HasPrefix(line, []byte("{{embed ")) {
		return nil
	}
	end := bytes.Index(line, []byte("}}"))
	if end < 0 {
		return nil
	}
	arg := bytes.TrimSpace(line[len("{{embed "):end])
	switch {
	case bytes.HasPrefix(arg, []byte("[[")) && bytes.HasSuffix(arg, []byte("]]")):
		name := strings.TrimSpace(string(arg[2 : len(arg)-2]))
		if name == "" || strings.ContainsAny(name, "[]") {
			return nil
		}
		block.Advance(end + 2)
		return &WikiLink{Target: name, Embed: true}
	case bytes.HasPrefix(arg, []byte("((")) && bytes.HasSuffix(arg, []byte("))")) && isUUID(arg[2:len(arg)-2]):
		block.Advance(end + 2)
		return &WikiLink{UUID: strings.ToLower(string(arg[2 : len(arg)-2])), Embed: true}
	}
	return nil
}

// commentParser hides Obsidian's inline comment %%text%% (the reading view
// does not show it).
type commentParser struct{}

func (commentParser) Trigger() []byte { return []byte{'%'} }

func (commentParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if !bytes.HasPrefix(line, []byte("%%")) {
		return nil
	}
	end := bytes.Index(line[2:], []byte("%%"))
	if end < 0 {
		return nil
	}
	block.Advance(2 + end + 2)
	return &Comment{}
}

// commentBlockParser hides a %% ... %% block comment.
type commentBlockParser struct{}

func (commentBlockParser) Trigger() []byte { return []byte{'%'} }

func (commentBlockParser) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	line, _ := reader.PeekLine()
	pos := pc.BlockOffset()
	if pos < 0 || !bytes.HasPrefix(line[pos:], []byte("%%")) {
		return nil, parser.NoChildren
	}
	n := &CommentBlock{}
	rest := bytes.TrimSpace(line[pos+2:])
	n.done = len(rest) >= 2 && bytes.HasSuffix(rest, []byte("%%"))
	reader.AdvanceToEOL()
	return n, parser.NoChildren
}

func (commentBlockParser) Continue(node ast.Node, reader text.Reader, pc parser.Context) parser.State {
	n := node.(*CommentBlock)
	line, _ := reader.PeekLine()
	if line == nil || n.done {
		return parser.Close
	}
	if bytes.HasSuffix(bytes.TrimSpace(line), []byte("%%")) {
		n.done = true
	}
	reader.AdvanceToEOL()
	return parser.Continue | parser.NoChildren
}

func (commentBlockParser) Close(node ast.Node, reader text.Reader, pc parser.Context) {}
func (commentBlockParser) CanInterruptParagraph() bool                                { return true }
func (commentBlockParser) CanAcceptIndentedLine() bool                                { return false }
