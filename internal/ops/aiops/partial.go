package aiops

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// partialSpec says which string fields of the model's JSON answer are the
// text a reader follows as it streams (ai.partial), and what goes before
// each: prefix gets the field's path (object keys joined by ".", array
// items as "*"), how many fields were shown before it and the path of the
// last one ("" for none).
type partialSpec struct {
	fields map[string]bool
	prefix func(path string, n int, prev string) string
}

// answerText is ai_ask's answer.
var answerText = &partialSpec{fields: map[string]bool{"answer": true}, prefix: func(string, int, string) string { return "" }}

// summaryText is a summary as the CLI prints it: the tldr, then the key
// points as a list.
var summaryText = &partialSpec{fields: map[string]bool{"tldr": true, "key_points.*.text": true}, prefix: func(path string, n int, prev string) string {
	switch {
	case n == 0 && path == "tldr":
		return ""
	case n == 0:
		return "- "
	case path == "tldr":
		return "\n\n"
	case prev == "tldr":
		return "\n\n- "
	}
	return "\n- "
}}

// tldrText is the merge step of a map-reduce summary (no key points).
var tldrText = &partialSpec{fields: map[string]bool{"tldr": true}, prefix: func(string, int, string) string { return "" }}

// partial reads a model's JSON answer as it streams, chunk by chunk, and
// hands on the decoded text of the spec's fields as it grows: what a
// reader wants to see of "answer", not `{"supported": true, "answer": "...`.
// Anything before the first "{" (a ```json fence, a sentence) and after
// the object closes is skipped. Text is handed on once per chunk, never
// splitting a character; what the model writes is provisional until the
// result (citations are checked after it).
type partial struct {
	spec *partialSpec
	emit func(string)

	started, done bool
	stack         []frame
	inString      bool
	isKey         bool
	show          bool // the string being read is one of the spec's fields
	esc           bool
	hex           []byte // the digits of a \u escape being read
	hi            rune   // a high surrogate waiting for its low half
	key           strings.Builder
	shown         int
	last          string
	out           []byte // text to hand on, possibly ending in part of a character
}

// frame is an object or array being read.
type frame struct {
	object    bool
	key       string // object: the key of the value being read
	expectKey bool
}

func newPartial(spec *partialSpec, emit func(string)) *partial {
	return &partial{spec: spec, emit: emit}
}

// path is the path of the value being read.
func (p *partial) path() string {
	parts := make([]string, 0, len(p.stack))
	for _, f := range p.stack {
		if f.object {
			parts = append(parts, f.key)
		} else {
			parts = append(parts, "*")
		}
	}
	return strings.Join(parts, ".")
}

// feed reads the next chunk of the answer.
func (p *partial) feed(chunk string) {
	for i := 0; i < len(chunk) && !p.done; i++ {
		p.byte(chunk[i])
	}
	// Hand on whole characters only: keep an incomplete one for later.
	n := len(p.out)
	for k := 1; k <= 3 && k <= len(p.out); k++ {
		b := p.out[len(p.out)-k]
		if b < 0x80 {
			break
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(p.out[len(p.out)-k:]) {
				n = len(p.out) - k
			}
			break
		}
	}
	if n > 0 {
		p.emit(string(p.out[:n]))
		p.out = append(p.out[:0], p.out[n:]...)
	}
}

func (p *partial) byte(b byte) {
	if !p.started {
		if b == '{' {
			p.started = true
			p.stack = append(p.stack, frame{object: true, expectKey: true})
		}
		return
	}
	if p.inString {
		p.stringByte(b)
		return
	}
	top := &p.stack[len(p.stack)-1]
	switch b {
	case '"':
		p.inString, p.isKey = true, top.object && top.expectKey
		p.key.Reset()
		if !p.isKey {
			if path := p.path(); p.spec.fields[path] {
				p.show = true
				p.out = append(p.out, p.spec.prefix(path, p.shown, p.last)...)
				p.shown++
				p.last = path
			}
		}
	case ':':
		top.expectKey = false
	case ',':
		if top.object {
			top.expectKey = true
		}
	case '{':
		p.stack = append(p.stack, frame{object: true, expectKey: true})
	case '[':
		p.stack = append(p.stack, frame{})
	case '}', ']':
		p.stack = p.stack[:len(p.stack)-1]
		if len(p.stack) == 0 {
			p.done = true
		}
	}
}

func (p *partial) stringByte(b byte) {
	switch {
	case p.hex != nil:
		p.hex = append(p.hex, b)
		if len(p.hex) < 4 {
			return
		}
		n, err := strconv.ParseUint(string(p.hex), 16, 32)
		p.hex = nil
		r := rune(n)
		switch {
		case err != nil:
			p.char(utf8.RuneError)
		case r >= 0xD800 && r < 0xDC00: // the high half of a pair
			p.flushHigh()
			p.hi = r
		case r >= 0xDC00 && r < 0xE000 && p.hi != 0:
			p.hi, r = 0, utf16.DecodeRune(p.hi, r)
			p.char(r)
		default:
			p.char(r)
		}
		return
	case p.esc:
		p.esc = false
		if b == 'u' {
			p.hex = []byte{}
			return
		}
		r, ok := map[byte]rune{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}[b]
		if !ok { // " \ /
			r = rune(b)
		}
		p.char(r)
	case b == '\\':
		p.esc = true
	case b == '"':
		p.flushHigh()
		p.inString, p.show = false, false
		if p.isKey {
			p.stack[len(p.stack)-1].key = p.key.String()
		}
	default:
		p.flushHigh()
		p.raw(b)
	}
}

// flushHigh gives up on a high surrogate whose low half did not follow.
func (p *partial) flushHigh() {
	if p.hi != 0 {
		p.hi = 0
		p.char(utf8.RuneError)
	}
}

// char is a decoded character of the string being read.
func (p *partial) char(r rune) {
	if p.hi != 0 && !(r >= 0xDC00 && r < 0xE000) {
		p.flushHigh()
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, b := range buf[:n] {
		p.raw(b)
	}
}

// raw is a byte of the string being read, as written.
func (p *partial) raw(b byte) {
	if p.isKey {
		p.key.WriteByte(b)
	} else if p.show {
		p.out = append(p.out, b)
	}
}
