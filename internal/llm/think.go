package llm

import "strings"

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkSplitter routes a <think>…</think> block at the start of the
// content (Qwen3, DeepSeek-R1 and their distills on servers that do not
// split it into reasoning_content) to reasoning and the rest to text, as
// the content streams in: a tag may arrive split over deltas, so only what
// cannot be the start of a tag is passed on.
type thinkSplitter struct {
	text, reasoning func(string)
	state           int // 0: undecided, 1: in the block, 2: after it (leading blank dropped), 3: text
	buf             string
	// opened: the content began with <think>.
	opened bool
}

func (t *thinkSplitter) write(s string) {
	t.buf += s
	for t.buf != "" {
		switch t.state {
		case 0:
			rest := strings.TrimLeft(t.buf, " \t\r\n")
			switch {
			case rest == "" || (len(rest) < len(thinkOpen) && strings.HasPrefix(thinkOpen, rest)):
				return // wait for more
			case strings.HasPrefix(rest, thinkOpen):
				t.state, t.opened, t.buf = 1, true, rest[len(thinkOpen):]
			default:
				t.state = 3
			}
		case 1:
			if i := strings.Index(t.buf, thinkClose); i >= 0 {
				t.emit(t.reasoning, t.buf[:i])
				t.state, t.buf = 2, t.buf[i+len(thinkClose):]
				continue
			}
			keep := partialSuffix(t.buf, thinkClose)
			t.emit(t.reasoning, t.buf[:len(t.buf)-keep])
			t.buf = t.buf[len(t.buf)-keep:]
			return
		case 2:
			t.buf = strings.TrimLeft(t.buf, " \t\r\n")
			if t.buf != "" {
				t.state = 3
			}
		case 3:
			t.emit(t.text, t.buf)
			t.buf = ""
		}
	}
}

// flush passes on what is held back at the end of the answer.
func (t *thinkSplitter) flush() {
	switch t.state {
	case 0, 3:
		t.emit(t.text, t.buf)
	case 1:
		t.emit(t.reasoning, t.buf) // the model stopped while thinking
	}
	t.buf = ""
}

func (t *thinkSplitter) emit(f func(string), s string) {
	if s != "" && f != nil {
		f(s)
	}
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// StripThinking removes a model's thinking from its text: <think>…</think>
// blocks, and everything up to a closing </think> whose opening tag was
// in the prompt, then the blank around what is left. An unclosed <think>
// at the start leaves nothing. Text without either tag is returned as it is.
func StripThinking(s string) string {
	if !strings.Contains(s, thinkOpen) && !strings.Contains(s, thinkClose) {
		return s
	}
	for {
		i := strings.Index(s, thinkOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], thinkClose)
		if j < 0 {
			if strings.TrimSpace(s[:i]) == "" {
				return ""
			}
			break
		}
		s = s[:i] + s[i+j+len(thinkClose):]
	}
	if i := strings.LastIndex(s, thinkClose); i >= 0 {
		s = s[i+len(thinkClose):]
	}
	return strings.TrimSpace(s)
}
