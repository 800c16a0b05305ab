package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
)

// sseBlock is one SSE block (the fields up to a blank line), raw.
type sseBlock struct {
	event, id, retry string
	data             []string
	comment          bool
}

// readBlock reads one SSE block.
func readBlock(r *bufio.Reader) (sseBlock, error) {
	var b sseBlock
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return b, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return b, nil
			}
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			b.comment = true
		case "event":
			b.event = value
		case "id":
			b.id = value
		case "retry":
			b.retry = value
		case "data":
			b.data = append(b.data, value)
		}
	}
}

// resumeServer is the MCP HTTP handler on a real 127.0.0.1 listener that
// reports each connection it has closed (after its handler returned).
type resumeServer struct {
	url    string
	closed chan net.Conn
	vault  string
	env    *ops.Env
	vh     *ops.VaultHandle
}

func newResumeServer(t *testing.T) *resumeServer {
	t.Helper()
	v := demoCopy(t, "vault")
	env := indexedEnv(t, v)
	vh := env.Vaults[0]
	srv := mcpserver.New(catalog.All(), env, mcpserver.Options{})
	rs := &resumeServer{closed: make(chan net.Conn, 64), vault: v, env: env, vh: vh}
	ts := httptest.NewUnstartedServer(srv.HTTPHandler())
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			rs.closed <- c
		}
	}
	ts.Start()
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
		env.Close()
	})
	rs.url = ts.URL
	return rs
}

// do sends one request on a connection of its own and returns the response
// with its body unread.
func (rs *resumeServer) do(t *testing.T, ctx context.Context, method, session, version, lastEventID, body string) *http.Response {
	resp, _ := rs.doConn(t, ctx, method, session, version, lastEventID, body)
	return resp
}

// doConn is do, also returning the client's address of the connection.
func (rs *resumeServer) doConn(t *testing.T, ctx context.Context, method, session, version, lastEventID, body string) (*http.Response, string) {
	t.Helper()
	var local string
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		local = ci.Conn.LocalAddr().String()
	}})
	req, err := http.NewRequestWithContext(ctx, method, rs.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, local
}

// awaitClosed waits until the server has closed the connection from local.
func (rs *resumeServer) awaitClosed(t *testing.T, local string) {
	t.Helper()
	for {
		if c := await(t, rs.closed, "the server to close the connection from "+local); c.RemoteAddr().String() == local {
			return
		}
	}
}

// open initializes a session asking for version and returns its id.
func (rs *resumeServer) open(t *testing.T, version string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp := rs.do(t, ctx, http.MethodPost, "", "", "",
		`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"resume","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize %s: HTTP %d, session %q", version, resp.StatusCode, sid)
	}
	resp = rs.do(t, ctx, http.MethodPost, sid, version, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return sid
}

const callIndexStatus = `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"index_status","arguments":{}}}`

// TestSSEResume: a POST's event stream starts with `retry:` and a priming
// event (an id, no data); a client that drops the connection right after it
// resumes with GET and Last-Event-ID and gets the answer it missed, with the
// next event id. A client of an older session version gets no priming
// event, and a bad Last-Event-ID is refused.
func TestSSEResume(t *testing.T) {
	rs := newResumeServer(t)
	// The session negotiated 2025-11-25; the header names 2025-03-26 (as the
	// conformance suite's server-sse-polling scenario sends): the negotiated
	// version decides, so the stream is primed.
	sid := rs.open(t, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	postCtx, drop := context.WithCancel(ctx)
	resp, local := rs.doConn(t, postCtx, http.MethodPost, sid, "2025-03-26", "", callIndexStatus)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("tools/call: HTTP %d %s", resp.StatusCode, ct)
	}
	r := bufio.NewReader(resp.Body)
	first, err := readBlock(r)
	if err != nil || first.retry != "1000" || first.id != "" || first.data != nil {
		t.Fatalf("first block %+v, %v; want only retry: 1000", first, err)
	}
	prime, err := readBlock(r)
	if err != nil || prime.id == "" || !strings.HasSuffix(prime.id, "_0") || len(prime.data) != 1 || prime.data[0] != "" {
		t.Fatalf("second block %+v, %v; want a priming event (id <stream>_0, empty data)", prime, err)
	}
	// The connection drops: whatever the server sends next is lost.
	drop()
	resp.Body.Close()
	rs.awaitClosed(t, local) // its handler has returned: the stream is free to resume

	resp = rs.do(t, ctx, http.MethodGet, sid, "2025-11-25", prime.id, "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET with Last-Event-ID %s: HTTP %d %s", prime.id, resp.StatusCode, b)
	}
	r = bufio.NewReader(resp.Body)
	if b, err := readBlock(r); err != nil || b.retry != "1000" {
		t.Fatalf("resumed stream starts with %+v, %v; want retry: 1000", b, err)
	}
	got, err := readBlock(r)
	stream, _, _ := strings.Cut(prime.id, "_")
	if err != nil || got.id != stream+"_1" || len(got.data) != 1 {
		t.Fatalf("resumed event %+v, %v; want id %s_1 with the answer", got, err, stream)
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Vaults []struct {
					Notes int `json:"notes"`
				} `json:"vaults"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got.data[0]), &answer); err != nil || answer.ID != 41 || answer.Result.IsError {
		t.Fatalf("resumed answer %s: %v", got.data[0], err)
	}

	// A session that negotiated 2025-06-18 gets the retry field, no priming
	// event: its answer comes first.
	old := rs.open(t, "2025-06-18")
	resp2 := rs.do(t, ctx, http.MethodPost, old, "2025-06-18", "", callIndexStatus)
	defer resp2.Body.Close()
	r = bufio.NewReader(resp2.Body)
	if b, err := readBlock(r); err != nil || b.retry != "1000" {
		t.Fatalf("2025-06-18 stream starts with %+v, %v", b, err)
	}
	if b, err := readBlock(r); err != nil || len(b.data) != 1 || !strings.Contains(b.data[0], `"id":41`) {
		t.Fatalf("2025-06-18 stream: %+v, %v; want the answer at once", b, err)
	}

	// A Last-Event-ID that is not <stream>_<n> is refused.
	resp3 := rs.do(t, ctx, http.MethodGet, sid, "2025-11-25", "nonsense", "")
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusBadRequest {
		t.Errorf("GET with Last-Event-ID nonsense: HTTP %d, want 400", resp3.StatusCode)
	}
}

// addNote writes a new note and syncs, which makes the server send
// notifications/resources/list_changed on the standalone GET stream.
func (rs *resumeServer) addNote(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(rs.vault, name), []byte("# "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.env.Sync(context.Background(), rs.vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readEvent reads blocks until one with data (skipping retry and comments).
func readEvent(t *testing.T, r *bufio.Reader, what string) sseBlock {
	t.Helper()
	for {
		b, err := readBlock(r)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(b.data) > 0 {
			return b
		}
	}
}

// TestSSEResumeGET: the standalone GET stream resumes too. The client sees
// the first list_changed (event _0), drops the stream, misses the second
// one, and gets it (event _1) by reconnecting with Last-Event-ID: _0.
func TestSSEResumeGET(t *testing.T) {
	rs := newResumeServer(t)
	sid := rs.open(t, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	getCtx, drop := context.WithCancel(ctx)
	resp, local := rs.doConn(t, getCtx, http.MethodGet, sid, "2025-11-25", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: HTTP %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	if b, err := readBlock(r); err != nil || b.retry != "1000" {
		t.Fatalf("GET stream starts with %+v, %v; want retry: 1000", b, err)
	}
	rs.addNote(t, "First new.md")
	first := readEvent(t, r, "the first list_changed")
	if first.id != "_0" || !strings.Contains(first.data[0], `"notifications/resources/list_changed"`) {
		t.Fatalf("first event %+v", first)
	}
	drop()
	resp.Body.Close()
	rs.awaitClosed(t, local)

	rs.addNote(t, "Second new.md") // sent while no stream is open: kept
	resp = rs.do(t, ctx, http.MethodGet, sid, "2025-11-25", first.id, "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID %s: HTTP %d", first.id, resp.StatusCode)
	}
	r = bufio.NewReader(resp.Body)
	if b, err := readBlock(r); err != nil || b.retry != "1000" {
		t.Fatalf("resumed GET stream starts with %+v, %v", b, err)
	}
	missed := readEvent(t, r, "the missed list_changed")
	if missed.id != "_1" || !strings.Contains(missed.data[0], `"notifications/resources/list_changed"`) {
		t.Fatalf("missed event %+v, want _1 list_changed", missed)
	}
}
