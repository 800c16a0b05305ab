package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops/catalog"
)

// A malformed-input case from testdata/malformed.txt (the file documents the
// format).
type badCase struct {
	line    int
	phase   string // "preinit" or "session"
	name    string
	expect  string // stdio expectation
	httpExp string // HTTP expectation
	id      []byte // expected id as JSON; nil = not checked
	msg     []byte
}

func loadCorpus(t *testing.T) []badCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/malformed.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []badCase
	phase := ""
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			phase = strings.Trim(line, "[]")
			continue
		}
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 || phase == "" {
			t.Fatalf("malformed.txt:%d: want name, expect, id and message separated by tabs after a [section]", i+1)
		}
		c := badCase{line: i + 1, phase: phase, name: f[0], msg: expand(t, f[3])}
		c.expect, c.httpExp, _ = strings.Cut(f[1], ",http:")
		if c.httpExp == "" {
			c.httpExp = c.expect
		}
		if f[2] != "-" {
			c.id = expand(t, f[2])
			if !json.Valid(c.id) {
				t.Fatalf("malformed.txt:%d: id %q is not JSON", i+1, f[2])
			}
		}
		out = append(out, c)
	}
	return out
}

// expand applies the corpus macros «rep N TEXT» and «hex HH ...».
func expand(t *testing.T, s string) []byte {
	var b bytes.Buffer
	for {
		i := strings.Index(s, "«")
		if i < 0 {
			b.WriteString(s)
			return b.Bytes()
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i:], "»")
		if j < 0 {
			t.Fatalf("unterminated macro in %q", s)
		}
		macro := s[i+len("«") : i+j]
		s = s[i+j+len("»"):]
		op, arg, _ := strings.Cut(macro, " ")
		switch op {
		case "rep":
			n, text, _ := strings.Cut(arg, " ")
			count, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("bad macro %q", macro)
			}
			b.WriteString(strings.Repeat(text, count))
		case "hex":
			raw, err := hex.DecodeString(strings.ReplaceAll(arg, " ", ""))
			if err != nil {
				t.Fatalf("bad macro %q", macro)
			}
			b.Write(raw)
		default:
			t.Fatalf("unknown macro %q", macro)
		}
	}
}

// wireMsg is any JSON-RPC message as read back.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    *int64          `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

var kindCodes = map[string]int64{"parse": -32700, "invalid": -32600, "method": -32601, "params": -32602, "too_large": -32600}

// judge checks what came back for a case against its expectation. resps
// holds the responses only (server notifications already filtered out).
func judge(c badCase, expect string, resps []wireMsg) error {
	if expect == "none" {
		if len(resps) != 0 {
			return fmt.Errorf("want no answer, got %s", show(resps))
		}
		return nil
	}
	if len(resps) != 1 {
		return fmt.Errorf("want one answer (%s), got %d: %s", expect, len(resps), show(resps))
	}
	r := resps[0]
	if r.JSONRPC != "2.0" {
		return fmt.Errorf("answer without jsonrpc 2.0: %s", show(resps))
	}
	if c.id != nil {
		id := r.ID
		if id == nil {
			id = json.RawMessage("null")
		}
		if !jsonEqual(id, c.id) {
			return fmt.Errorf("answer id %s, want %s", abbrev(string(id)), abbrev(string(c.id)))
		}
	}
	switch expect {
	case "result", "tool_error":
		if r.Error != nil || r.Result == nil {
			return fmt.Errorf("want a result, got %s", show(resps))
		}
		var res struct {
			IsError bool `json:"isError"`
		}
		json.Unmarshal(r.Result, &res)
		if res.IsError != (expect == "tool_error") {
			return fmt.Errorf("want %s, got isError=%v: %s", expect, res.IsError, show(resps))
		}
		return nil
	}
	if r.Error == nil || r.Error.Code == nil || r.Error.Message == "" {
		return fmt.Errorf("want a JSON-RPC error (%s), got %s", expect, show(resps))
	}
	if want, ok := kindCodes[expect]; ok && *r.Error.Code != want {
		return fmt.Errorf("want error code %d, got %d: %s", want, *r.Error.Code, show(resps))
	}
	if *r.Error.Code == 0 {
		return fmt.Errorf("error code 0 is not a JSON-RPC error code: %s", show(resps))
	}
	return nil
}

func show(resps []wireMsg) string {
	b, _ := json.Marshal(resps)
	return abbrev(string(b))
}

func abbrev(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// tally counts what the corpus did to a server.
type tally struct{ cases, killed, wedged, wrong int }

func (n tally) String() string {
	return fmt.Sprintf("%d cases: %d killed the server or session, %d wedged it, %d got a wrong answer", n.cases, n.killed, n.wedged, n.wrong)
}

// errWedged and errKilled tell a dead or stuck server from a wrong answer.
var (
	errWedged = errors.New("no answer to the ping that follows (wedged)")
	errKilled = errors.New("the server went away (killed)")
)

// stdioPeer drives a real `loci mcp` process over its stdin/stdout.
type stdioPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	writes chan []byte
	stderr *lockedBuffer
	pings  int
}

func startStdio(t *testing.T, bin, vault string) *stdioPeer {
	t.Helper()
	p := &stdioPeer{stderr: &lockedBuffer{}, lines: make(chan []byte, 64), writes: make(chan []byte)}
	p.cmd = exec.Command(bin, "mcp", vault, "--no-sync")
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // writes go through one goroutine: a wedged server must not block the test
		for b := range p.writes {
			if _, err := p.stdin.Write(b); err != nil {
				for range p.writes { // drain: the server is gone
				}
				return
			}
		}
	}()
	return p
}

func (p *stdioPeer) stop() {
	close(p.writes)
	p.stdin.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
	for range p.lines {
	}
}

// roundTrip sends one raw line and, after it, a ping; it returns the
// responses that came back for the line (notifications dropped).
func (p *stdioPeer) roundTrip(msg []byte, wantAnswer bool) ([]wireMsg, error) {
	p.pings++
	pingID := fmt.Sprintf(`"ping-%d"`, p.pings)
	p.writes <- append(append([]byte{}, msg...), '\n')
	p.writes <- []byte(`{"jsonrpc":"2.0","id":` + pingID + `,"method":"ping"}` + "\n")
	var resps []wireMsg
	pong := false
	deadline := time.After(waitFor) // a guard against a wedged server, not a timing assertion
	for !pong || (wantAnswer && len(resps) == 0) {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return resps, errKilled
			}
			var m wireMsg
			if err := json.Unmarshal(line, &m); err != nil {
				return resps, fmt.Errorf("the server wrote a line that is not JSON: %q", abbrev(string(line)))
			}
			switch {
			case m.Method != "":
				// a server notification or request: not an answer
			case string(m.ID) == pingID && m.Error == nil:
				pong = true
			default:
				resps = append(resps, m)
			}
		case <-deadline:
			if pong { // alive, but the line got no answer
				return resps, nil
			}
			return resps, errWedged
		}
	}
	return resps, nil
}

const initializeMsg = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"corpus","version":"1"}}}`

func (p *stdioPeer) initialize(t *testing.T) {
	t.Helper()
	resps, err := p.roundTrip([]byte(initializeMsg), true)
	if err != nil || len(resps) != 1 || resps[0].Result == nil {
		t.Fatalf("initialize: %v %s\nstderr:\n%s", err, show(resps), p.stderr.String())
	}
	if _, err := p.roundTrip([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false); err != nil {
		t.Fatalf("notifications/initialized: %v", err)
	}
}

// TestMalformedStdio drives a real `loci mcp` process with every case of the
// corpus and checks, after each, the answer it deserves and that a ping
// still answers. A case that kills or wedges the server is reported and the
// server restarted, so that one run counts them all.
func TestMalformedStdio(t *testing.T) {
	bin := lociBinary(t)
	v := demoCopy(t, "vault")
	if out, err := exec.Command(bin, "index", v, "-q").CombinedOutput(); err != nil {
		t.Fatalf("loci index: %v\n%s", err, out)
	}
	cases := loadCorpus(t)
	var n tally
	var p *stdioPeer
	start := func(initialize bool) {
		p = startStdio(t, bin, v)
		if initialize {
			p.initialize(t)
		}
	}
	start(false)
	defer func() { p.stop() }()
	inited := false
	for _, c := range cases {
		if c.phase == "session" && !inited {
			// A fresh process for the session phase: whatever the
			// [preinit] cases did leaves no trace.
			p.stop()
			start(true)
			inited = true
		}
		n.cases++
		resps, err := p.roundTrip(c.msg, c.expect != "none")
		if err == nil {
			err = judge(c, c.expect, resps)
			if err != nil {
				n.wrong++
			}
		} else {
			if errors.Is(err, errKilled) {
				n.killed++
			} else if errors.Is(err, errWedged) {
				n.wedged++
			} else {
				n.wrong++
			}
			stderr := p.stderr.String()
			p.stop()
			start(c.phase == "session")
			err = fmt.Errorf("%w\nstderr tail: %s", err, tail(stderr, 400))
		}
		if err != nil {
			t.Errorf("malformed.txt:%d %s (stdio): %v", c.line, c.name, err)
		}
	}
	t.Logf("stdio: %s", n)
	if len(cases) < 60 {
		t.Errorf("the corpus has %d cases, want at least 60", len(cases))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// httpPeer is one MCP session over Streamable HTTP, spoken by hand.
type httpPeer struct {
	url, session, version string
	pings                 int
}

// post sends one body (with the session id unless sessionless) and returns
// the HTTP status and the JSON-RPC messages of the answer (JSON or SSE).
func (h *httpPeer) post(body []byte, sessionless bool) (int, []wireMsg, http.Header, error) {
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if !sessionless && h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
		req.Header.Set("Mcp-Protocol-Version", h.version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil, errWedged
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, nil, resp.Header, errWedged
		}
		return resp.StatusCode, nil, resp.Header, err
	}
	var msgs []wireMsg
	ct := resp.Header.Get("Content-Type")
	switch {
	case len(bytes.TrimSpace(raw)) == 0:
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, line := range strings.Split(string(raw), "\n") {
			data, ok := strings.CutPrefix(line, "data:")
			if !ok || strings.TrimSpace(data) == "" {
				continue
			}
			var m wireMsg
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				return resp.StatusCode, nil, resp.Header, fmt.Errorf("SSE data is not JSON: %q", abbrev(data))
			}
			msgs = append(msgs, m)
		}
	case strings.HasPrefix(ct, "application/json"):
		var m wireMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			return resp.StatusCode, nil, resp.Header, fmt.Errorf("answer is not JSON: %q", abbrev(string(raw)))
		}
		msgs = append(msgs, m)
	default:
		return resp.StatusCode, nil, resp.Header, fmt.Errorf("HTTP %d %s answer is not JSON-RPC: %q", resp.StatusCode, ct, abbrev(string(raw)))
	}
	var out []wireMsg
	for _, m := range msgs {
		if m.Method == "" {
			out = append(out, m)
		}
	}
	return resp.StatusCode, out, resp.Header, nil
}

func (h *httpPeer) open() error {
	h.session = ""
	status, msgs, hdr, err := h.post([]byte(initializeMsg), true)
	if err != nil || status != http.StatusOK || len(msgs) != 1 || msgs[0].Result == nil {
		return fmt.Errorf("initialize: HTTP %d %v %s", status, err, show(msgs))
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(msgs[0].Result, &res)
	h.session, h.version = hdr.Get("Mcp-Session-Id"), res.ProtocolVersion
	if status, _, _, err := h.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false); err != nil || status != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized: HTTP %d %v", status, err)
	}
	return nil
}

// ping checks that the session still answers.
func (h *httpPeer) ping() error {
	h.pings++
	id := fmt.Sprintf(`"ping-%d"`, h.pings)
	status, msgs, _, err := h.post([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`), false)
	if errors.Is(err, errWedged) {
		return err
	}
	if err != nil || status != http.StatusOK || len(msgs) != 1 || string(msgs[0].ID) != id || msgs[0].Result == nil {
		return fmt.Errorf("%w: ping got HTTP %d %v %s", errKilled, status, err, show(msgs))
	}
	return nil
}

// TestMalformedHTTP sends the corpus to the MCP HTTP handler behind a real
// 127.0.0.1 listener, within one session ([preinit] cases without one), and
// checks each answer and that the session still answers a ping.
func TestMalformedHTTP(t *testing.T) {
	v := demoCopy(t, "vault")
	env := indexedEnv(t, v)
	srv := mcpserver.New(catalog.All(), env, mcpserver.Options{MaxSessions: 200})
	ts := httptest.NewServer(srv.HTTPHandler())
	defer func() {
		srv.Close()
		ts.Close()
		env.Close()
	}()
	h := &httpPeer{url: ts.URL}
	if err := h.open(); err != nil {
		t.Fatal(err)
	}
	var n tally
	for _, c := range loadCorpus(t) {
		n.cases++
		status, resps, _, err := h.post(c.msg, c.phase == "preinit")
		if err == nil {
			switch {
			case c.httpExp == "none" && status != http.StatusAccepted:
				err = fmt.Errorf("want 202 Accepted, got HTTP %d %s", status, show(resps))
			case c.httpExp == "too_large" && status != http.StatusRequestEntityTooLarge:
				err = fmt.Errorf("want 413, got HTTP %d", status)
			case kindCodes[c.httpExp] != 0 && c.httpExp != "too_large" && status != http.StatusBadRequest && status != http.StatusOK:
				// 400 from loci's checks or the SDK's, 200 when the SDK
				// answers with an error in the stream
				err = fmt.Errorf("want HTTP 400 or 200, got %d", status)
			}
		}
		if err == nil {
			err = judge(c, c.httpExp, resps)
		}
		if err != nil && !errors.Is(err, errWedged) {
			n.wrong++
		}
		perr := h.ping()
		if perr != nil {
			if errors.Is(perr, errWedged) {
				n.wedged++
			} else {
				n.killed++
			}
			err = errors.Join(err, perr)
			if oerr := h.open(); oerr != nil {
				t.Fatalf("cannot open a new session after %s: %v", c.name, oerr)
			}
		}
		if err != nil {
			t.Errorf("malformed.txt:%d %s (HTTP): %v", c.line, c.name, err)
		}
	}
	t.Logf("HTTP: %s", n)
}

// TestSessionlessVersions: without a session id, only initialize, ping,
// server/discover and requests declaring the session-less protocol
// (2026-07-28 or later, a YYYY-MM-DD date compared as a date, in the
// Mcp-Protocol-Version header or in params._meta) reach the SDK; anything
// else is told to initialize first. A version that is not a date declares
// nothing, however it sorts as a string.
func TestSessionlessVersions(t *testing.T) {
	_, url := smallServer(t, map[string]string{"Home.md": "# Home\n"})
	postMethod := func(method, header, meta string) (int, wireMsg) {
		t.Helper()
		params := `{}`
		if meta != "" {
			params = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + meta + `"}}`
		}
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":"q","method":"`+method+`","params":`+params+`}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set("Mcp-Protocol-Version", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			_, data, _ := strings.Cut(string(raw), "\ndata:")
			raw, _, _ = bytes.Cut([]byte(data), []byte("\n"))
		}
		var m wireMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s, header %q, _meta %q: HTTP %d, not JSON-RPC: %q", method, header, meta, resp.StatusCode, raw)
		}
		return resp.StatusCode, m
	}
	post := func(header, meta string) (int, wireMsg) { return postMethod("tools/list", header, meta) }
	code := func(m wireMsg) int64 {
		if m.Error == nil || m.Error.Code == nil {
			return 0
		}
		return *m.Error.Code
	}
	toldToInitialize := func(status int, m wireMsg) bool {
		return status == http.StatusBadRequest && code(m) == -32600 &&
			string(m.ID) == `"q"` && strings.Contains(m.Error.Message, "needs a session: send initialize first")
	}
	for _, v := range []string{"", "9", "2026-13-01", "2026-07-32", "garbage", "2026-7-28", "2026-07-28x", "2025-06-18", "2026-07-27"} {
		if status, m := post(v, ""); !toldToInitialize(status, m) {
			t.Errorf("Mcp-Protocol-Version %q without a session: HTTP %d %s, want 400 and -32600 telling to initialize first", v, status, show([]wireMsg{m}))
		}
		if v == "" {
			continue
		}
		if status, m := post("", v); !toldToInitialize(status, m) {
			t.Errorf("_meta protocol version %q without a session: HTTP %d %s, want 400 and -32600 telling to initialize first", v, status, show([]wireMsg{m}))
		}
	}
	// ping is allowed before initialize.
	for _, v := range []string{"", "2025-06-18"} {
		if status, m := postMethod("ping", v, ""); status != http.StatusOK || m.Error != nil || m.Result == nil {
			t.Errorf("ping without a session, Mcp-Protocol-Version %q: HTTP %d %s", v, status, show([]wireMsg{m}))
		}
	}
	// The session-less protocol reaches the SDK, which answers it (loci's
	// sessions are stateful: it says which versions it speaks).
	for _, v := range []string{"2026-07-28", "2027-01-05"} {
		for _, hm := range [][2]string{{v, ""}, {"", v}, {v, v}} {
			status, m := post(hm[0], hm[1])
			if code(m) != mcp.CodeUnsupportedProtocolVersion || string(m.ID) != `"q"` {
				t.Errorf("header %q, _meta %q: HTTP %d %s, want the SDK's unsupported-version answer", hm[0], hm[1], status, show([]wireMsg{m}))
			}
		}
	}
}
