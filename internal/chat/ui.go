package chat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ANSI styles (used only when the output is a terminal and NO_COLOR is unset).
const (
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// Renderer draws the conversation: streamed answer text, tool-call frames
// (indented, dim), notices and errors. Without color it prints the same
// frames as plain text, so a pipe gets a readable transcript.
type Renderer struct {
	Out io.Writer // answers and meta-command output
	// Info receives tool-call frames and notices (default: Out). The CLI
	// points it at stderr when stdout is not a terminal, so that
	// `loci chat "question" > answer.md` keeps only the answer.
	Info  io.Writer
	Err   io.Writer // errors
	Color bool

	mu          sync.Mutex
	midLine     io.Writer // where the last text written did not end its line (nil: at a line start)
	inReasoning bool
}

func (r *Renderer) info() io.Writer {
	if r.Info != nil {
		return r.Info
	}
	return r.Out
}

func (r *Renderer) style(s, code string) string {
	if !r.Color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// Text streams answer text.
func (r *Renderer) Text(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inReasoning {
		r.endLineLocked()
		r.inReasoning = false
	}
	io.WriteString(r.Out, s)
	r.setMid(r.Out, s)
}

func (r *Renderer) setMid(w io.Writer, s string) {
	if s == "" {
		return
	}
	r.midLine = nil
	if !strings.HasSuffix(s, "\n") {
		r.midLine = w
	}
}

// Reasoning streams a reasoning model's thinking, dim.
func (r *Renderer) Reasoning(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inReasoning {
		r.endLineLocked()
		r.inReasoning = true
	}
	io.WriteString(r.info(), r.style(s, ansiDim))
	r.setMid(r.info(), s)
}

// EndText finishes a streamed answer with a newline if needed.
func (r *Renderer) EndText() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	r.inReasoning = false
}

func (r *Renderer) endLineLocked() {
	if r.midLine != nil {
		io.WriteString(r.midLine, "\n")
		r.midLine = nil
	}
}

// frame writes lines indented and dim.
func (r *Renderer) frame(indent string, lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	for _, l := range lines {
		for _, sub := range strings.Split(l, "\n") {
			io.WriteString(r.info(), r.style(indent+sub, ansiDim)+"\n")
		}
	}
}

// ToolCall shows a call about to be decided: name and pretty-printed
// arguments (in full when the user must approve it, else cut to a few
// lines).
func (r *Renderer) ToolCall(display, prettyArgs string, full bool) {
	lines := strings.Split(prettyArgs, "\n")
	if !full && len(lines) > 12 {
		lines = append(lines[:12], fmt.Sprintf("… (%d more lines)", len(lines)-12))
	}
	r.frame("  ", "▸ "+display)
	if prettyArgs != "" && prettyArgs != "{}" {
		r.frame("      ", strings.Join(lines, "\n"))
	}
}

// ToolResult shows how a call ended, with the first line of its result.
func (r *Renderer) ToolResult(display string, ok bool, text string, d time.Duration) {
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	head := fmt.Sprintf("%s %s · %s · %s", mark, display, plural(len([]rune(text)), "char"), d.Round(time.Millisecond))
	first := strings.TrimSpace(text)
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i] + " …"
	}
	first = clip(first, 160)
	if ok {
		r.frame("  ", head)
		if first != "" {
			r.frame("      ", first)
		}
		return
	}
	r.mu.Lock()
	r.endLineLocked()
	fmt.Fprintln(r.info(), r.style("  "+head, ansiDim))
	fmt.Fprintln(r.info(), "      "+r.style(first, ansiRed))
	r.mu.Unlock()
}

// ToolRefused shows a call that was not run (declined, denied, limit).
func (r *Renderer) ToolRefused(display, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	fmt.Fprintln(r.info(), r.style("  ⊘ "+display+": "+why, ansiYellow))
}

// Output shows command output, indented and dim, cut to maxLines.
func (r *Renderer) Output(text string, maxLines int) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("… (%d more lines)", len(lines)-maxLines))
	}
	r.frame("    │ ", lines...)
}

// Notice is a status line from loci chat itself.
func (r *Renderer) Notice(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	fmt.Fprintln(r.info(), r.style("[loci] "+fmt.Sprintf(format, a...), ansiDim))
}

// Warn is a notice that matters (depth limit, a server gone).
func (r *Renderer) Warn(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	fmt.Fprintln(r.info(), r.style("[loci] "+fmt.Sprintf(format, a...), ansiYellow))
}

// Error reports a failure on the error stream.
func (r *Renderer) Error(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	fmt.Fprintln(r.Err, r.style("error: "+fmt.Sprintf(format, a...), ansiRed))
}

// Print writes meta-command output as it is.
func (r *Renderer) Print(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLineLocked()
	io.WriteString(r.Out, s)
	if !strings.HasSuffix(s, "\n") {
		io.WriteString(r.Out, "\n")
	}
}

func plural(n int, word string) string {
	s := fmt.Sprintf("%d %s", n, word)
	if n != 1 {
		s += "s"
	}
	return s
}

// ErrInterrupted is returned by a LineReader when the user pressed Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// LineReader reads the user's lines. ReadLine returns io.EOF at the end of
// input and ErrInterrupted on Ctrl-C (when the terminal delivers it as a
// key). keep says whether the line belongs in the input history (answers
// to confirmation prompts do not).
type LineReader interface {
	ReadLine(prompt string, keep bool) (string, error)
}

// PipeReader reads lines from a non-terminal (no prompts are printed).
type PipeReader struct{ br *bufio.Reader }

// NewPipeReader reads lines from r.
func NewPipeReader(r io.Reader) *PipeReader { return &PipeReader{br: bufio.NewReader(r)} }

// ReadLine returns the next line without its newline.
func (p *PipeReader) ReadLine(string, bool) (string, error) {
	line, err := p.br.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// TermReader edits lines on a terminal (golang.org/x/term: arrow keys,
// history, Ctrl-A/E/K/U/W), switching it to raw mode only while a line is
// read, so that Ctrl-C while the model answers still raises SIGINT.
type TermReader struct {
	fd  int
	in  *ctrlCReader
	out io.Writer

	mu    sync.Mutex
	t     *term.Terminal
	hist  term.History
	state *term.State
}

// NewTermReader reads from the terminal fd (with in its reader) and echoes
// to out.
func NewTermReader(fd int, in io.Reader, out io.Writer) *TermReader {
	return &TermReader{fd: fd, in: &ctrlCReader{r: in}, out: out}
}

// ReadLine reads one edited line.
func (t *TermReader) ReadLine(prompt string, keep bool) (string, error) {
	t.mu.Lock()
	st, err := term.MakeRaw(t.fd)
	if err != nil {
		t.mu.Unlock()
		return "", err
	}
	t.state = st
	if t.t == nil {
		t.t = term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{t.in, t.out}, "")
		if t.hist != nil {
			t.t.History = t.hist
		} else {
			t.hist = t.t.History
		}
	}
	tt := t.t
	if w, h, err := term.GetSize(t.fd); err == nil {
		tt.SetSize(w, h)
	}
	tt.SetPrompt(prompt)
	if !keep {
		tt.History = discardHistory{}
	}
	t.in.saw = false
	t.mu.Unlock()

	line, err := tt.ReadLine()

	t.mu.Lock()
	defer t.mu.Unlock()
	tt.History = t.hist
	t.restoreLocked()
	if errors.Is(err, io.EOF) && t.in.saw {
		// Ctrl-C: x/term leaves its line state behind; start afresh.
		t.t = nil
		fmt.Fprintln(t.out, "^C")
		return "", ErrInterrupted
	}
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil
	}
	return line, err
}

func (t *TermReader) restoreLocked() {
	if t.state != nil {
		term.Restore(t.fd, t.state)
		t.state = nil
	}
}

// Restore puts the terminal back in its normal mode (on exit while a line
// is being read).
func (t *TermReader) Restore() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.restoreLocked()
}

type ctrlCReader struct {
	r   io.Reader
	saw bool
}

func (c *ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		c.saw = true
	}
	return n, err
}

type discardHistory struct{}

func (discardHistory) Add(string)    {}
func (discardHistory) Len() int      { return 0 }
func (discardHistory) At(int) string { return "" }
