package chat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport choices for URL servers.
const (
	TransportAuto       = "auto"       // Streamable HTTP, then HTTP+SSE if that fails (the default)
	TransportStreamable = "streamable" // Streamable HTTP only
	TransportSSE        = "sse"        // the older HTTP+SSE transport only
)

// Kinds of session, as :mcp list shows them.
const (
	KindHTTP      = "http"       // Streamable HTTP
	KindSSE       = "sse"        // HTTP+SSE (2024-11-05 transport)
	KindStdio     = "stdio"      // a spawned command
	KindInProcess = "in-process" // the local vault, served in this process
)

// Session states.
const (
	StatusConnected = "connected"
	StatusFailed    = "failed"
	StatusClosed    = "closed"
)

// ServerSpec says how to reach one MCP server. Exactly one of URL, Command
// and InProcess is set.
type ServerSpec struct {
	Alias     string
	URL       string
	Headers   map[string]string // sent with every HTTP request (Authorization included)
	Transport string            // for URL: "", auto, streamable or sse
	Command   []string          // argv for stdio
	Env       []string          // extra KEY=VALUE for the command
	Dir       string            // working directory for the command
	// InProcess returns a transport to a server living in this process
	// (one end of mcp.NewInMemoryTransports) and a function releasing it.
	InProcess func(ctx context.Context) (mcp.Transport, func(), error)
	Label     string // what :mcp list shows for an in-process server
}

// Target is the URL, the command line or the label.
func (s ServerSpec) Target() string {
	switch {
	case s.URL != "":
		return redactURL(s.URL)
	case len(s.Command) > 0:
		return strings.Join(quoteWords(s.Command), " ")
	}
	return s.Label
}

// Session is one MCP client session (connected or not: a server that failed
// stays listed with its error, so it can be reconnected).
type Session struct {
	Spec ServerSpec
	Kind string

	mgr    *Manager
	stderr *tailBuffer
	cmd    *exec.Cmd

	mu           sync.Mutex
	cs           *mcp.ClientSession
	tools        []*mcp.Tool
	stale        bool
	status       string
	err          error
	closing      bool
	release      func()
	serverName   string
	instructions string
}

// Alias is the session's name, the prefix of its tools.
func (s *Session) Alias() string { return s.Spec.Alias }

// Status returns the state and, for a failed session, why.
func (s *Session) Status() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.err
}

// Connected reports whether calls can be made.
func (s *Session) Connected() bool {
	st, _ := s.Status()
	return st == StatusConnected
}

// ServerInfo is the server's self-reported name and its instructions.
func (s *Session) ServerInfo() (name, instructions string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serverName, s.instructions
}

// ToolCount is the number of cached tools.
func (s *Session) ToolCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tools)
}

// Stderr is the tail of a stdio server's stderr.
func (s *Session) Stderr() string {
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

func (s *Session) fail(err error) {
	s.mu.Lock()
	if s.closing || s.status != StatusConnected {
		s.mu.Unlock()
		return
	}
	s.status, s.err = StatusFailed, err
	cs, release := s.cs, s.release
	s.mu.Unlock()
	go func() { // stops reconnect loops and child processes
		if cs != nil {
			cs.Close()
		}
		if release != nil {
			release()
		}
	}()
	if h := s.mgr.OnServerGone; h != nil {
		h(s.Spec.Alias, err)
	}
}

// refresh re-reads the tool list if a list_changed notification marked it
// stale (or force).
func (s *Session) refresh(ctx context.Context, force bool) error {
	s.mu.Lock()
	cs, stale := s.cs, s.stale
	ok := s.status == StatusConnected
	s.mu.Unlock()
	if !ok || (!stale && !force) {
		return nil
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.tools, s.stale = tools, false
	s.mu.Unlock()
	if h := s.mgr.OnToolsRefreshed; h != nil && stale {
		h(s.Spec.Alias, len(tools))
	}
	return nil
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools == nil {
		return nil, nil // the server offers no tools
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// call runs one tools/call. After a failure (other than the caller's
// cancellation) the server is pinged; one that does not answer is marked
// failed and its tools are withdrawn.
func (s *Session) call(ctx context.Context, name string, args []byte) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	cs, ok := s.cs, s.status == StatusConnected
	st, serr := s.status, s.err
	s.mu.Unlock()
	if !ok {
		if serr != nil {
			return nil, fmt.Errorf("server %s is %s: %v", s.Spec.Alias, st, serr)
		}
		return nil, fmt.Errorf("server %s is %s", s.Spec.Alias, st)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: jsonRaw(args)})
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	// A JSON-RPC error answered by a live server leaves it alone; the SDK
	// also reports transport failures as JSON-RPC errors, so ask the
	// server whether it is still there.
	pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if perr := cs.Ping(pctx, nil); perr != nil {
		s.fail(err)
	}
	return nil, err
}

// Manager holds the sessions, in the order they were connected.
type Manager struct {
	// Client is what loci chat says it is in initialize.
	Client *mcp.Implementation
	// ConnectTimeout bounds one connection attempt (initialize + tools/list).
	ConnectTimeout time.Duration
	// OnToolsChanged is called (from a notification goroutine) when a
	// server says its tool list changed; the list is re-read before the
	// next model request.
	OnToolsChanged func(alias string)
	// OnServerGone is called when a connected server goes away unasked.
	OnServerGone func(alias string, err error)
	// OnToolsRefreshed is called after a changed tool list was re-read.
	OnToolsRefreshed func(alias string, n int)

	mu       sync.Mutex
	sessions []*Session
}

// NewManager returns an empty manager.
func NewManager(version string) *Manager {
	return &Manager{Client: &mcp.Implementation{Name: "loci-chat", Title: "loci chat", Version: version}, ConnectTimeout: DefaultConnectTimeout}
}

// Sessions returns every session, in connection order.
func (m *Manager) Sessions() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sessions)
}

// Session finds a session by alias.
func (m *Manager) Session(alias string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		if s.Spec.Alias == alias {
			return s
		}
	}
	return nil
}

// Connect opens a session (initialize, then tools/list). A failed attempt is
// still recorded, with its error, so :mcp list shows it and :mcp reconnect
// can retry it. An alias already connected is refused.
func (m *Manager) Connect(ctx context.Context, spec ServerSpec) (*Session, error) {
	if err := ValidAlias(spec.Alias); err != nil {
		return nil, err
	}
	m.mu.Lock()
	idx := -1
	for i, s := range m.sessions {
		if s.Spec.Alias == spec.Alias {
			if s.Connected() {
				m.mu.Unlock()
				return nil, fmt.Errorf("%s is already connected (:mcp disconnect %s first)", spec.Alias, spec.Alias)
			}
			idx = i
		}
	}
	s := &Session{Spec: spec, mgr: m, status: StatusFailed}
	if idx >= 0 {
		m.sessions[idx] = s
	} else {
		m.sessions = append(m.sessions, s)
	}
	m.mu.Unlock()

	err := m.open(ctx, s)
	s.mu.Lock()
	if err != nil {
		s.status, s.err = StatusFailed, err
	}
	s.mu.Unlock()
	return s, err
}

// Reconnect connects a known alias again with its original spec.
func (m *Manager) Reconnect(ctx context.Context, alias string) (*Session, error) {
	s := m.Session(alias)
	if s == nil {
		return nil, fmt.Errorf("no server named %s", alias)
	}
	if s.Connected() {
		m.Disconnect(alias)
	}
	return m.Connect(ctx, s.Spec)
}

// Disconnect closes a session and forgets it.
func (m *Manager) Disconnect(alias string) error {
	m.mu.Lock()
	var s *Session
	for i, x := range m.sessions {
		if x.Spec.Alias == alias {
			s = x
			m.sessions = slices.Delete(m.sessions, i, i+1)
			break
		}
	}
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("no server named %s", alias)
	}
	s.close()
	return nil
}

// Close closes every session.
func (m *Manager) Close() {
	m.mu.Lock()
	ss := m.sessions
	m.sessions = nil
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(s.close)
	}
	wg.Wait()
}

func (s *Session) close() {
	s.mu.Lock()
	s.closing = true
	cs, release := s.cs, s.release
	if s.status == StatusConnected {
		s.status = StatusClosed
	}
	s.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	if release != nil {
		release()
	}
}

// open connects s according to its spec.
func (m *Manager) open(ctx context.Context, s *Session) error {
	timeout := m.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := mcp.NewClient(m.Client, &mcp.ClientOptions{
		// No roots, sampling or elicitation: loci chat only calls tools.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
			if h := m.OnToolsChanged; h != nil {
				h(s.Spec.Alias)
			}
		},
	})
	spec := s.Spec
	var cs *mcp.ClientSession
	var release func()
	var err error
	switch {
	case spec.InProcess != nil:
		s.Kind = KindInProcess
		var t mcp.Transport
		if t, release, err = spec.InProcess(cctx); err != nil {
			return err
		}
		if cs, err = client.Connect(cctx, t, nil); err != nil {
			release()
			return err
		}
	case spec.URL != "":
		cs, release, err = m.openHTTP(cctx, client, s)
		if err != nil {
			return err
		}
	case len(spec.Command) > 0:
		s.Kind = KindStdio
		if cs, err = m.openStdio(cctx, client, s); err != nil {
			return err
		}
	default:
		return errors.New("nothing to connect: no url or command")
	}
	if release == nil {
		release = func() {}
	}
	release = sync.OnceFunc(release)
	tools, err := listTools(cctx, cs)
	if err != nil {
		cs.Close()
		release()
		return fmt.Errorf("tools/list: %w", err)
	}
	s.mu.Lock()
	s.cs, s.release, s.tools, s.status, s.err = cs, release, tools, StatusConnected, nil
	if ir := cs.InitializeResult(); ir != nil {
		if ir.ServerInfo != nil {
			s.serverName = ir.ServerInfo.Name
		}
		s.instructions = ir.Instructions
	}
	s.mu.Unlock()
	go func() {
		err := cs.Wait()
		if err == nil {
			err = errors.New("the server closed the connection")
		}
		s.fail(err)
	}()
	return nil
}

func (m *Manager) openHTTP(ctx context.Context, client *mcp.Client, s *Session) (*mcp.ClientSession, func(), error) {
	spec := s.Spec
	hc := &http.Client{Transport: headerTransport{headers: spec.Headers}}
	streamable := func() (*mcp.ClientSession, func(), error) {
		s.Kind = KindHTTP
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: spec.URL, HTTPClient: hc}, nil)
		return cs, nil, err
	}
	sse := func() (*mcp.ClientSession, func(), error) {
		s.Kind = KindSSE
		// The SSE transport ties its event stream to the context given to
		// Connect, so that context must live as long as the session: it is
		// cancelled when the session closes, or if connecting fails or
		// outlasts ctx.
		life, end := context.WithCancel(context.WithoutCancel(ctx))
		stop := context.AfterFunc(ctx, end)
		cs, err := client.Connect(life, &mcp.SSEClientTransport{Endpoint: spec.URL, HTTPClient: hc}, nil)
		if !stop() || err != nil {
			end()
			if err == nil {
				cs.Close()
				err = ctx.Err()
			}
			return nil, nil, err
		}
		return cs, end, nil
	}
	switch spec.Transport {
	case TransportStreamable:
		return streamable()
	case TransportSSE:
		return sse()
	}
	cs, release, err := streamable()
	if err == nil || ctx.Err() != nil {
		return cs, release, err
	}
	// Servers from before Streamable HTTP (protocol 2024-11-05) answer the
	// POST with a 4xx and serve an SSE stream on GET instead.
	cs, release, err2 := sse()
	if err2 == nil {
		return cs, release, nil
	}
	s.Kind = KindHTTP
	return nil, nil, fmt.Errorf("%v (the HTTP+SSE fallback failed too: %v)", err, err2)
}

func (m *Manager) openStdio(ctx context.Context, client *mcp.Client, s *Session) (*mcp.ClientSession, error) {
	spec := s.Spec
	path, err := exec.LookPath(spec.Command[0])
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", spec.Command[0], err)
	}
	cmd := exec.Command(path, spec.Command[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	s.stderr = &tailBuffer{max: 8 << 10}
	cmd.Stderr = s.stderr
	detach(cmd) // Ctrl-C in the chat must not reach the server
	s.cmd = cmd
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		if tail := lastLines(s.stderr.String(), 5); tail != "" {
			return nil, fmt.Errorf("%w; its stderr ends with:\n%s", err, tail)
		}
		return nil, err
	}
	return cs, nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// redactURL hides userinfo and query values (tokens sometimes travel there).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	if u.User != nil {
		u.User = url.User("…")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q.Set(k, "…")
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func quoteWords(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		out[i] = w
	}
	return out
}

// DeriveAlias proposes an alias for a URL or command: the site name of a
// URL (mcp.notion.com → notion; loopback → local), the program of a command
// (for launchers such as npx or uvx, the package they run). taken reports
// aliases in use; a number is appended until it is free.
func DeriveAlias(target []string, taken func(string) bool) string {
	base := "mcp"
	if len(target) == 1 && isURL(target[0]) {
		if u, err := url.Parse(target[0]); err == nil {
			base = hostAlias(u.Hostname())
		}
	} else if len(target) > 0 {
		base = commandAlias(target)
	}
	base = sanitizeAlias(base)
	alias := base
	for i := 2; taken(alias); i++ {
		alias = fmt.Sprintf("%s%d", base, i)
	}
	return alias
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func hostAlias(h string) string {
	if h == "localhost" || net.ParseIP(h) != nil {
		return "local"
	}
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	if len(labels) >= 2 {
		labels = labels[:len(labels)-1] // drop the TLD
	}
	return labels[len(labels)-1]
}

var launchers = map[string]bool{"npx": true, "uvx": true, "bunx": true, "pnpx": true, "pipx": true, "node": true, "python": true, "python3": true, "deno": true, "uv": true, "docker": true, "podman": true, "bun": true, "npm": true, "go": true}

func commandAlias(argv []string) string {
	prog := filepath.Base(argv[0])
	if !launchers[prog] {
		return strings.TrimSuffix(prog, filepath.Ext(prog))
	}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || a == "run" || a == "exec" || a == "tool" {
			continue
		}
		a = filepath.Base(a)
		if i := strings.LastIndex(a, "@"); i > 0 {
			a = a[:i]
		}
		a = strings.TrimSuffix(a, filepath.Ext(a))
		a = strings.TrimPrefix(a, "mcp-server-")
		a = strings.TrimPrefix(a, "server-")
		a = strings.TrimSuffix(a, "-mcp")
		if a != "" {
			return a
		}
	}
	return prog
}

func sanitizeAlias(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	a := strings.Trim(b.String(), "-_")
	if len(a) > 24 {
		a = a[:24]
	}
	if a == "" {
		a = "mcp"
	}
	return a
}
