package chat

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// History is a session log: one JSON object per line. The first line is a
// header ({"type":"session",...}); every other line is a message as sent to
// the model (user, assistant with its tool_calls, tool results with their
// tool_call_id) plus a timestamp. The system prompt is not logged: it is
// rebuilt from the servers connected when a session resumes.
type History struct {
	ID   string
	Path string

	mu  sync.Mutex
	f   *os.File
	err error
}

type historyRecord struct {
	TS    string `json:"ts"`
	Type  string `json:"type,omitempty"`
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
	*Message
}

// NewHistory starts a session log in dir (created private: 0700, files
// 0600, since it holds note contents).
func NewHistory(dir, model string) (*History, error) {
	if dir == "" {
		return nil, errors.New("no history directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for range 5 {
		var rnd [3]byte
		rand.Read(rnd[:])
		id := time.Now().Format("20060102-150405") + "-" + hex.EncodeToString(rnd[:])
		p := filepath.Join(dir, id+".jsonl")
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		h := &History{ID: id, Path: p, f: f}
		h.write(historyRecord{Type: "session", ID: id, Model: model})
		return h, h.err
	}
	return nil, errors.New("cannot create a unique session file")
}

// ResumeHistory opens an existing session for appending and returns its
// messages. ref is "" or "latest" (the most recently written session), a
// session id, or a path to a .jsonl file.
func ResumeHistory(dir, ref string) (*History, []Message, error) {
	p, err := findSession(dir, ref)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := ReadHistory(p)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return &History{ID: strings.TrimSuffix(filepath.Base(p), ".jsonl"), Path: p, f: f}, msgs, nil
}

var sessionIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{6}$`) })

// IsSessionRef reports whether s names a logged session: an id of an
// existing session in dir, or an existing .jsonl file.
func IsSessionRef(dir, s string) bool {
	if sessionIDRE().MatchString(s) {
		_, err := os.Stat(filepath.Join(dir, s+".jsonl"))
		return err == nil
	}
	if strings.HasSuffix(s, ".jsonl") {
		_, err := os.Stat(ExpandHome(s))
		return err == nil
	}
	return false
}

func findSession(dir, ref string) (string, error) {
	if ref != "" && ref != "latest" {
		if strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".jsonl") {
			p := ExpandHome(ref)
			if _, err := os.Stat(p); err != nil {
				return "", errs.New(errs.CodeNotFound, "no chat session at %s", ref)
			}
			return p, nil
		}
		p := filepath.Join(dir, ref+".jsonl")
		if _, err := os.Stat(p); err != nil {
			return "", errs.New(errs.CodeNotFound, "no chat session %q in %s (loci chat --sessions lists them)", ref, dir)
		}
		return p, nil
	}
	list, err := ListSessions(dir, 1)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", errs.New(errs.CodeNotFound, "no chat session to resume in %s", dir)
	}
	return list[0].Path, nil
}

// ReadHistory reads a session's messages. A final assistant message whose
// tool calls never got results (the session ended while they ran) is
// completed with "not run" results, so the conversation stays valid for
// the model. Unparseable lines are skipped.
func ReadHistory(path string) ([]Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var msgs []Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r historyRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Message == nil || r.Role == "" {
			continue
		}
		msgs = append(msgs, *r.Message)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return repairToolTurns(msgs), nil
}

// repairToolTurns adds a result for every tool call that has none.
func repairToolTurns(msgs []Message) []Message {
	var out []Message
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		out = append(out, m)
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		have := map[string]bool{}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			have[msgs[j].ToolCallID] = true
			out = append(out, msgs[j])
		}
		for _, c := range m.ToolCalls {
			if !have[c.ID] {
				out = append(out, Message{Role: "tool", ToolCallID: c.ID, Content: "error: not run: the session ended before this call ran"})
			}
		}
		i = j - 1
	}
	return out
}

// Append logs messages. Errors are remembered (Err) rather than returned:
// a full disk must not end the conversation.
func (h *History) Append(msgs ...Message) {
	if h == nil {
		return
	}
	for i := range msgs {
		h.write(historyRecord{Message: &msgs[i]})
	}
}

func (h *History) write(r historyRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil || h.err != nil {
		return
	}
	r.TS = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(r)
	if err == nil {
		_, err = h.f.Write(append(b, '\n'))
	}
	h.err = err
}

// Err is the first write error, if any.
func (h *History) Err() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Close closes the log file.
func (h *History) Close() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// SessionInfo describes a logged session.
type SessionInfo struct {
	ID       string
	Path     string
	Modified time.Time
	Messages int
	First    string // the first user message
}

// ListSessions returns up to n sessions (n <= 0: all), most recent first.
func ListSessions(dir string, n int) ([]SessionInfo, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SessionInfo
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, SessionInfo{ID: strings.TrimSuffix(e.Name(), ".jsonl"), Path: filepath.Join(dir, e.Name()), Modified: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	for i := range out {
		msgs, err := ReadHistory(out[i].Path)
		if err != nil {
			continue
		}
		out[i].Messages = len(msgs)
		for _, m := range msgs {
			if m.Role == "user" {
				out[i].First = m.Content
				break
			}
		}
	}
	return out, nil
}

// String is one line for --sessions.
func (s SessionInfo) String() string {
	first := strings.Join(strings.Fields(s.First), " ")
	return fmt.Sprintf("%s  %s  %3d messages  %s", s.ID, s.Modified.Local().Format("2006-01-02 15:04"), s.Messages, clip(first, 60))
}
