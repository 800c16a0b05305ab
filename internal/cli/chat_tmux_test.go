package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/chat/chattest"
	"github.com/loci-dev/loci/internal/testutil"
)

// tmuxSession runs a command in a detached tmux session on a private
// server socket and reads its screen.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane's whole scrollback, wrapped lines joined.
func (s *tmuxSession) screen() string {
	return s.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")
}

// send types text and presses Enter.
func (s *tmuxSession) send(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", "chat", "-l", text)
	s.tmux("send-keys", "-t", "chat", "Enter")
}

// waitFor polls the screen until it contains want (a deadline, not a
// timing assumption).
func (s *tmuxSession) waitFor(want string) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr := s.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %q on screen:\n%s", want, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChatREPLInTmux drives the real binary's REPL on a terminal: the vault
// in-process, a streamed tool call confirmed with y, meta-commands, :quit.
func TestChatREPLInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	// Build first: chatEnv moves HOME, and with it Go's build cache.
	bin := filepath.Join(t.TempDir(), "loci")
	build := exec.Command("go", "build", "-o", bin, "./cmd/loci")
	build.Dir = testutil.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := chatEnv(t)
	v := demoCopy(t)
	fm := chattest.New(t, func(n int, req *chattest.Request) chattest.Reply {
		switch last := req.Last(); {
		case last.Role == "tool":
			return chattest.Text("Spaced repetition means reviewing a fact just before you would forget it (Ideas/Spaced repetition.md:6).", 6)
		case strings.Contains(last.Content, "spaced repetition"):
			return chattest.ToolCalls("Let me search your notes.", chattest.Call{ID: "c1", Name: "loci__search_notes", Args: `{"query":"spaced repetition","limit":3}`})
		}
		return chattest.Text("Hello from the fake model.", 6)
	})

	s := &tmuxSession{t: t, socket: fmt.Sprintf("loci-chat-test-%d", os.Getpid())}
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	hist := filepath.Join(home, "hist")
	cmdline := strings.Join([]string{
		"env", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "LOCI_VAULT=",
		chat.EnvBaseURL + "=" + fm.BaseURL, chat.EnvModel + "=fake-model", chat.EnvHistoryDir + "=" + hist,
		bin, "chat", "--vault", v,
	}, " ")
	s.tmux("new-session", "-d", "-s", "chat", "-x", "160", "-y", "50", cmdline+"; echo CHAT-EXITED-$?; sleep 60")

	scr := s.waitFor("[loci] connected loci (in-process): ")
	m := regexp.MustCompile(`connected loci \(in-process\): (\d+) tools`).FindStringSubmatch(scr)
	if m == nil {
		t.Fatalf("no tool count:\n%s", scr)
	}
	s.waitFor("model fake-model at " + fm.BaseURL)
	s.waitFor("> ")

	s.send("what do my notes say about spaced repetition?")
	scr = s.waitFor("allow loci.search_notes? [y/N/a=always this session]")
	for _, want := range []string{"Let me search your notes.", "▸ loci.search_notes", `"query": "spaced repetition"`} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	s.send("y")
	scr = s.waitFor("Spaced repetition means reviewing a fact just before you would forget it")
	if !strings.Contains(scr, "✓ loci.search_notes") {
		t.Errorf("no result frame:\n%s", scr)
	}
	if res := fm.Requests()[1].ToolResults()["c1"]; !strings.Contains(res, "Ideas/Spaced repetition.md") {
		t.Errorf("tool result sent to the model: %s", res)
	}

	s.send(":mcp list")
	s.waitFor(fmt.Sprintf("loci   in-process  %-5s  connected  vault %s", m[1], v))
	s.send(":mcp tool loci.search_notes")
	s.waitFor("loci.search_notes (the model calls it loci__search_notes)")
	s.send("hello")
	s.waitFor("Hello from the fake model.")
	s.send(":quit")
	scr = s.waitFor("CHAT-EXITED-0")
	if !strings.Contains(scr, "session saved; continue it with: loci chat --resume") {
		t.Errorf("no resume hint on exit:\n%s", scr)
	}
	list, err := chat.ListSessions(hist, 0)
	if err != nil || len(list) != 1 || list[0].Messages != 6 {
		t.Errorf("logged sessions: %+v %v", list, err)
	}
}
