package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/testutil"
)

const testToken = "test-token-0123456789abcdef"

// fakeMCP stands in for the MCP handler (internal/mcpserver tests the real
// one): it echoes what reached it, streams on GET until its context ends, and
// holds a POST to /mcp?hold until released.
type fakeMCP struct {
	entered chan struct{}
	release chan struct{}
}

func (m *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("late"):
		// An event stream that writes after the server's write timeout.
		<-time.After(200 * time.Millisecond)
		io.WriteString(w, "data: late\n\n")
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		m.entered <- struct{}{}
		<-r.Context().Done()
	case r.URL.Query().Has("slow"):
		// Outlive the read timeout; the request must not be cancelled.
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", 500)
		case <-time.After(300 * time.Millisecond):
			io.WriteString(w, `{"slow":true}`)
		}
	case r.URL.Query().Has("hold"):
		m.entered <- struct{}{}
		<-m.release
		io.WriteString(w, `{"held":true}`)
	default:
		b, _ := io.ReadAll(r.Body)
		json.NewEncoder(w).Encode(map[string]any{"subject": auth.From(r.Context()).Label(), "bytes": len(b)})
	}
}

type fixture struct {
	srv    *Server
	base   string
	mcp    *fakeMCP
	cancel context.CancelFunc
	done   chan error
}

// demoEnv opens and indexes a copy of the demo vault.
func demoEnv(t *testing.T) *ops.Env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, testutil.DemoVault(), dir)
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, dir, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	return env
}

// start serves a real listener on 127.0.0.1:0 with the REST API over a copy
// of the demo vault.
func start(t *testing.T, mod func(*Options)) *fixture {
	t.Helper()
	env := demoEnv(t)
	m := &fakeMCP{entered: make(chan struct{}, 1), release: make(chan struct{})}
	opt := Options{
		Addr: "127.0.0.1:0", Token: testToken, MaxBodyBytes: 64 << 10,
		MCP: m, API: api.New(catalog.All(), env, api.Options{Version: "test"}),
	}
	if mod != nil {
		mod(&opt)
	}
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	f := &fixture{srv: s, base: s.URL(), mcp: m, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- s.Serve(sctx) }()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

type resp struct {
	status int
	header http.Header
	body   []byte
	env    struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  *errs.Error     `json:"error"`
	}
}

func (f *fixture) req(t *testing.T, method, path string, body io.Reader, hdr map[string]string) resp {
	t.Helper()
	r, err := http.NewRequest(method, f.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out resp
	out.status, out.header = res.StatusCode, res.Header
	out.body, _ = io.ReadAll(res.Body)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		json.Unmarshal(out.body, &out.env)
	}
	return out
}

func authHdr() map[string]string { return map[string]string{"Authorization": "Bearer " + testToken} }

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (r resp) wantErr(t *testing.T, status int, code string) {
	t.Helper()
	if r.status != status || r.env.OK || r.env.Error == nil || r.env.Error.Code != code || r.env.Error.Message == "" {
		t.Errorf("want %d %s, got %d %s", status, code, r.status, r.body)
	}
}

func TestRoutesAndAuth(t *testing.T) {
	f := start(t, nil)

	// Open routes.
	r := f.req(t, "GET", "/healthz", nil, nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"ok":true}` {
		t.Errorf("/healthz: %d %s", r.status, r.body)
	}
	r = f.req(t, "GET", "/", nil, nil)
	if r.status != 200 || !strings.Contains(string(r.body), "/v1/ops") || !strings.Contains(string(r.body), "/mcp") ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("landing page: %d %s", r.status, r.body)
	}
	f.req(t, "POST", "/healthz", nil, nil).wantErr(t, 405, errs.CodeMethodNotAllowed)
	f.req(t, "GET", "/nope", nil, nil).wantErr(t, 404, errs.CodeRouteNotFound)

	// Protected routes: no token, a wrong token, a wrong scheme.
	for _, p := range []string{"/mcp", "/v1/ops", "/v1/status", "/openapi.json", "/v1/nope"} {
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + testToken},
			{"Authorization": "Bearer " + testToken + "x"}, {"Authorization": "Bearer"}} {
			r := f.req(t, "GET", p, nil, h)
			r.wantErr(t, 401, errs.CodeUnauthorized)
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: WWW-Authenticate %q", p, r.header.Get("WWW-Authenticate"))
			}
		}
	}
	// With the token (the scheme is case-insensitive).
	r = f.req(t, "GET", "/v1/status", nil, map[string]string{"Authorization": "bearer " + testToken})
	if r.status != 200 || !r.env.OK {
		t.Fatalf("/v1/status: %d %s", r.status, r.body)
	}
	var st struct {
		Notes int `json:"notes"`
	}
	json.Unmarshal(r.env.Result, &st)
	if st.Notes != 16 {
		t.Errorf("status: %s", r.env.Result)
	}
	r = f.req(t, "POST", "/v1/ops/search_notes", strings.NewReader(`{"query":"spaced repetition"}`), authHdr())
	if r.status != 200 || !strings.Contains(string(r.env.Result), "Ideas/Spaced repetition.md") {
		t.Errorf("search: %d %s", r.status, r.body)
	}
	r = f.req(t, "GET", "/openapi.json", nil, authHdr())
	var doc map[string]any
	if r.status != 200 || json.Unmarshal(r.body, &doc) != nil || doc["openapi"] != "3.1.0" {
		t.Errorf("/openapi.json: %d", r.status)
	}
	r = f.req(t, "POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`), authHdr())
	if r.status != 200 || !strings.Contains(string(r.body), `"subject":"owner"`) || !strings.Contains(string(r.body), `"bytes":17`) {
		t.Errorf("/mcp: %d %s", r.status, r.body)
	}
	f.req(t, "GET", "/v1/nope", nil, authHdr()).wantErr(t, 404, errs.CodeRouteNotFound)
}

func TestHostAndOrigin(t *testing.T) {
	f := start(t, func(o *Options) {
		o.AllowedHosts = []string{"notes.lan", "box.lan:9000"}
		o.AllowedOrigins = []string{"https://app.example"}
	})
	// DNS rebinding: a foreign Host is refused before anything else, even
	// with the token and on open routes.
	for _, host := range []string{"evil.com", "evil.com:8765", "localhost.evil.com", "127.0.0.1.nip.io", "box.lan:9001", "notes.lan.evil.com"} {
		for _, p := range []string{"/v1/status", "/mcp", "/healthz", "/"} {
			f.req(t, "GET", p, nil, with(authHdr(), "Host", host)).wantErr(t, 403, errs.CodeForbidden)
		}
	}
	for _, host := range []string{"localhost", "localhost:8765", "LOCALHOST:1", "127.0.0.1:8765", "[::1]:8765", "[::1]", "127.0.0.2", "notes.lan", "notes.lan:80", "box.lan:9000"} {
		if r := f.req(t, "GET", "/v1/status", nil, with(authHdr(), "Host", host)); r.status != 200 {
			t.Errorf("Host %s: %d %s", host, r.status, r.body)
		}
	}
	// Cross-site requests.
	for _, o := range []string{"http://evil.com", "https://evil.com:8765", "null", "http://localhost.evil.com", "https://app.example.evil", "file://", "http://127.0.0.1.evil.com"} {
		f.req(t, "POST", "/v1/ops/index_status", strings.NewReader(`{}`), with(authHdr(), "Origin", o)).wantErr(t, 403, errs.CodeForbidden)
		f.req(t, "POST", "/mcp", strings.NewReader(`{}`), with(authHdr(), "Origin", o)).wantErr(t, 403, errs.CodeForbidden)
	}
	for _, o := range []string{"http://localhost:3000", "http://127.0.0.1:8765", "http://[::1]:5173", "https://app.example", "HTTPS://APP.EXAMPLE/"} {
		r := f.req(t, "POST", "/v1/ops/index_status", strings.NewReader(`{}`), with(authHdr(), "Origin", o))
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != o {
			t.Errorf("Origin %s: %d %q", o, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
	// A preflight from an allowed origin is answered without the token.
	r := f.req(t, "OPTIONS", "/mcp", nil, map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"})
	if r.status != 204 || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	f.req(t, "OPTIONS", "/mcp", nil, map[string]string{"Origin": "http://evil.com", "Access-Control-Request-Method": "POST"}).wantErr(t, 403, errs.CodeForbidden)
}

// endless is a request body that never ends (sent chunked).
type endless struct{ prefix io.Reader }

func (e *endless) Read(p []byte) (int, error) {
	if n, err := e.prefix.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	for i := range p {
		p[i] = 'b'
	}
	return len(p), nil
}

// TestBodyLimit: REST bodies are cut at MaxBodyBytes in REST's error shape;
// /mcp bodies are bounded by the real MCP handler itself
// (mcpserver.MaxMessageBytes, whatever MaxBodyBytes says), whose 413 is a
// JSON-RPC error with the request's id and data.limit. A body that never
// ends is cut at the limit on both, and nothing is read before
// authentication.
func TestBodyLimit(t *testing.T) {
	ms := mcpserver.New(catalog.All(), demoEnv(t), mcpserver.Options{})
	t.Cleanup(func() { ms.Close() })
	f := start(t, func(o *Options) { o.MCP = ms.HTTPHandler() })
	mcpHeaders := with(authHdr(), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")

	// REST: announced length, and a body that never ends.
	big := `{"query":"` + strings.Repeat("a", 100<<10) + `"}`
	f.req(t, "POST", "/v1/ops/search_notes", strings.NewReader(big), authHdr()).wantErr(t, 413, errs.CodeTooLarge)
	f.req(t, "POST", "/v1/ops/search_notes", &endless{strings.NewReader(`{"query":"`)}, authHdr()).wantErr(t, 413, errs.CodeTooLarge)

	// /mcp: the MCP handler's answer.
	type rpcAnswer struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code  string   `json:"code"`
				Limit int      `json:"limit"`
				Bytes *float64 `json:"bytes"`
			} `json:"data"`
		} `json:"error"`
	}
	wantTooLarge := func(what string, r resp, size int) {
		t.Helper()
		var m rpcAnswer
		if err := json.Unmarshal(r.body, &m); err != nil || r.status != 413 || m.JSONRPC != "2.0" || m.ID != "big" ||
			m.Error.Code != -32600 || !strings.HasPrefix(m.Error.Message, errs.CodeTooLarge+":") ||
			m.Error.Data.Code != errs.CodeTooLarge || m.Error.Data.Limit != mcpserver.MaxMessageBytes {
			t.Errorf("%s: %d %.300s, want 413 and the MCP handler's JSON-RPC error with id \"big\" and data.limit", what, r.status, r.body)
			return
		}
		switch {
		case size < 0 && m.Error.Data.Bytes != nil:
			t.Errorf("%s: data.bytes %v for a body of unknown length", what, *m.Error.Data.Bytes)
		case size >= 0 && (m.Error.Data.Bytes == nil || *m.Error.Data.Bytes != float64(size)):
			t.Errorf("%s: data.bytes %v, want %d", what, m.Error.Data.Bytes, size)
		}
	}
	prefix := `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"`
	huge := prefix + strings.Repeat("a", mcpserver.MaxMessageBytes) + `"}}`
	wantTooLarge("announced", f.req(t, "POST", "/mcp", strings.NewReader(huge), mcpHeaders), len(huge))
	wantTooLarge("never ending", f.req(t, "POST", "/mcp", &endless{strings.NewReader(prefix)}, mcpHeaders), -1)

	// A message over MaxBodyBytes (64 KiB here) but within the MCP limit
	// reaches the MCP handler: a ping, allowed before initialize.
	ping := prefix + strings.Repeat("a", 1<<20) + `"}}`
	if r := f.req(t, "POST", "/mcp", strings.NewReader(ping), mcpHeaders); r.status != 200 || !strings.Contains(string(r.body), `"id":"big","result":{}`) {
		t.Errorf("1 MiB ping: %d %.300s", r.status, r.body)
	}

	// An unauthenticated client cannot make the server read a body at all.
	f.req(t, "POST", "/v1/ops/search_notes", strings.NewReader(big), nil).wantErr(t, 401, errs.CodeUnauthorized)
	f.req(t, "POST", "/mcp", &endless{strings.NewReader(prefix)}, with(mcpHeaders, "Authorization", "Bearer wrong")).wantErr(t, 401, errs.CodeUnauthorized)
}

func TestBindRules(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8765", ":8765", "[::]:0", "192.168.1.10:0", "example.com:80"} {
		_, err := New(Options{Addr: addr})
		if err == nil || !strings.Contains(err.Error(), "without authentication") {
			t.Errorf("New(%s) without a token: %v", addr, err)
		}
		if _, err := New(Options{Addr: addr, Token: testToken}); err != nil {
			t.Errorf("New(%s) with a token: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.1:8765"} {
		if _, err := New(Options{Addr: addr}); err != nil {
			t.Errorf("New(%s) without a token on loopback: %v", addr, err)
		}
	}
	if _, err := New(Options{Addr: "127.0.0.1"}); err == nil {
		t.Error("an address without a port was accepted")
	}
	if _, err := New(Options{Token: "short"}); err == nil {
		t.Error("a short token was accepted")
	}
	if _, err := New(Options{AllowedOrigins: []string{"evil.com"}}); err == nil {
		t.Error("an origin without a scheme was accepted")
	}
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != DefaultAddr || s.opt.MaxBodyBytes != DefaultMaxBodyBytes {
		t.Errorf("defaults: %s %d", s.Addr(), s.opt.MaxBodyBytes)
	}
	if s.hs.ReadHeaderTimeout <= 0 || s.hs.ReadTimeout <= 0 || s.hs.WriteTimeout <= 0 || s.hs.IdleTimeout <= 0 {
		t.Errorf("timeouts not set: %+v", s.hs)
	}
	// Serving without a token: requests pass as the anonymous subject.
	f := start(t, func(o *Options) { o.Token = "" })
	r := f.req(t, "POST", "/mcp", strings.NewReader(`{}`), nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"subject":"owner"`) {
		t.Errorf("no-auth /mcp: %d %s", r.status, r.body)
	}
}

// TestGracefulShutdown: cancelling Serve's context lets an in-flight request
// finish, ends the long-lived MCP event stream, and returns nil.
func TestGracefulShutdown(t *testing.T) {
	f := start(t, nil)
	// A long-lived GET /mcp stream.
	streamDone := make(chan error, 1)
	go func() {
		r, _ := http.NewRequest("GET", f.base+"/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		res, err := http.DefaultClient.Do(r)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		streamDone <- err
	}()
	<-f.mcp.entered
	// An in-flight request held by the handler.
	held := make(chan resp, 1)
	go func() { held <- f.req(t, "POST", "/mcp?hold", strings.NewReader(`{}`), authHdr()) }()
	<-f.mcp.entered

	shutdown := make(chan struct{})
	f.srv.hs.RegisterOnShutdown(func() { close(shutdown) })
	f.cancel()
	<-shutdown // draining has begun; only now let the held request finish
	close(f.mcp.release)
	if r := <-held; r.status != 200 || string(r.body) != `{"held":true}` {
		t.Errorf("in-flight request: %d %s", r.status, r.body)
	}
	if err := <-streamDone; err != nil {
		t.Errorf("stream: %v", err)
	}
	select {
	case err := <-f.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		f.done <- nil // for the cleanup
	case <-time.After(DefaultShutdownTimeout + 5*time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := http.Get(f.base + "/healthz"); err == nil {
		t.Error("still accepting after shutdown")
	}
}

func TestToken(t *testing.T) {
	t.Setenv(EnvToken, "")
	vaultRoot := t.TempDir()
	dirPath := filepath.Join(vaultRoot, ".loci")
	dir := safefs.At(dirPath, vaultRoot)
	tok, src, created, err := ResolveToken(dir)
	if err != nil || !created || len(tok) != 43 || src != filepath.Join(dirPath, TokenFile) {
		t.Fatalf("first token: %q %q %v %v", tok, src, created, err)
	}
	st, err := os.Stat(filepath.Join(dirPath, TokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", st.Mode(), err)
	}
	again, _, created, err := ResolveToken(dir)
	if err != nil || created || again != tok {
		t.Errorf("second read: %q %v %v", again, created, err)
	}
	// The environment wins.
	t.Setenv(EnvToken, "from-the-environment-123")
	if env, src, _, _ := ResolveToken(dir); env != "from-the-environment-123" || src != "env" {
		t.Errorf("LOCI_TOKEN: %q %q", env, src)
	}
	t.Setenv(EnvToken, "short")
	if _, _, _, err := ResolveToken(dir); err == nil {
		t.Error("a short LOCI_TOKEN was accepted")
	}
	t.Setenv(EnvToken, "")

	// Rotation writes a new private token.
	rot, err := RotateToken(dir)
	if err != nil || rot == tok || len(rot) != 43 {
		t.Fatalf("rotate: %q %v", rot, err)
	}
	if st, _ := os.Stat(filepath.Join(dirPath, TokenFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("rotated mode %v", st.Mode())
	}
	if got, _, _ := LoadOrCreateToken(dir); got != rot {
		t.Errorf("after rotate: %q", got)
	}
	// A token readable by others is refused, with a way out.
	os.Chmod(filepath.Join(dirPath, TokenFile), 0o644)
	_, _, err = LoadOrCreateToken(dir)
	if err == nil || !strings.Contains(err.Error(), "--rotate") {
		t.Errorf("0644 token file: %v", err)
	}
	if _, err := RotateToken(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateToken(dir); err != nil {
		t.Errorf("after rotating a leaked token: %v", err)
	}
	// A symlinked token file is refused.
	other := filepath.Join(t.TempDir(), "x")
	os.WriteFile(other, []byte(strings.Repeat("a", 43)), 0o600)
	d2 := t.TempDir()
	if err := os.Symlink(other, filepath.Join(d2, TokenFile)); err == nil {
		if _, _, err := LoadOrCreateToken(safefs.At(d2)); err == nil {
			t.Error("a symlinked token file was accepted")
		}
	}
	// So is a token below a linked index folder (.loci → elsewhere): the
	// link would hand out whatever token file the other place holds, and
	// a new token would be written outside the vault.
	v3 := t.TempDir()
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, TokenFile), []byte(strings.Repeat("b", 43)+"\n"), 0o600)
	if err := os.Symlink(elsewhere, filepath.Join(v3, ".loci")); err == nil {
		if tok, _, err := LoadOrCreateToken(safefs.At(filepath.Join(v3, ".loci"), v3)); err == nil {
			t.Errorf("a token below a linked .loci was accepted: %q", tok)
		}
		if _, err := RotateToken(safefs.At(filepath.Join(v3, ".loci"), v3)); err == nil {
			t.Error("rotate wrote through a linked .loci")
		}
		if b, _ := os.ReadFile(filepath.Join(elsewhere, TokenFile)); string(b) != strings.Repeat("b", 43)+"\n" {
			t.Errorf("the outside token file changed: %q", b)
		}
	}
	// Tokens are random.
	a, _ := GenerateToken()
	b, _ := GenerateToken()
	if a == b {
		t.Error("two equal tokens")
	}
}

func TestServeReturnsListenError(t *testing.T) {
	f := start(t, nil)
	s, err := New(Options{Addr: f.srv.Addr(), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(context.Background()); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve on a taken port: %v", err)
	}
}

// TestAllowedHostReachesMCP: a host admitted with AllowedHosts also reaches
// the real MCP SDK handler, which on its own refuses non-loopback Host
// headers on a loopback listener.
func TestAllowedHostReachesMCP(t *testing.T) {
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	}, nil)
	f := start(t, func(o *Options) { o.AllowedHosts = []string{"notes.lan"}; o.MCP = sdk })
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	hdr := with(authHdr(), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	for _, host := range []string{"notes.lan:8765", "127.0.0.1"} {
		r := f.req(t, "POST", "/mcp", strings.NewReader(init), with(hdr, "Host", host))
		if r.status != 200 || !strings.Contains(string(r.body), `"probe"`) {
			t.Errorf("initialize with Host %s: %d %s", host, r.status, r.body)
		}
	}
	f.req(t, "POST", "/mcp", strings.NewReader(init), with(hdr, "Host", "evil.com")).wantErr(t, 403, errs.CodeForbidden)
}

// TestLongRequestOutlivesReadTimeout: ReadTimeout bounds reading the request,
// not the handler; net/http would otherwise cancel the context when it fires.
func TestLongRequestOutlivesReadTimeout(t *testing.T) {
	f := start(t, func(o *Options) { o.ReadTimeout = 50 * time.Millisecond })
	for _, body := range []io.Reader{nil, strings.NewReader(`{"x":1}`)} {
		r := f.req(t, "POST", "/mcp?slow", body, authHdr())
		if r.status != 200 || string(r.body) != `{"slow":true}` {
			t.Errorf("slow request: %d %s", r.status, r.body)
		}
	}
}

// TestEventStreamOutlivesWriteTimeout: the GET /mcp event stream is exempt
// from WriteTimeout (it lasts as long as the session); other routes are not.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	f := start(t, func(o *Options) { o.WriteTimeout = 50 * time.Millisecond })
	r := f.req(t, "GET", "/mcp?late", nil, authHdr())
	if r.status != 200 || string(r.body) != "data: late\n\n" {
		t.Errorf("late event: %d %q", r.status, r.body)
	}
	if f.srv.hs.WriteTimeout != 50*time.Millisecond {
		t.Errorf("WriteTimeout %s", f.srv.hs.WriteTimeout)
	}
}

// TestEventsStreamOutlivesWriteTimeout: GET /v1/events (SSE) is exempt from
// WriteTimeout like the MCP stream, needs the token, and gets keep-alives.
func TestEventsStreamOutlivesWriteTimeout(t *testing.T) {
	env := &ops.Env{}
	f := start(t, func(o *Options) {
		o.WriteTimeout = 50 * time.Millisecond
		o.API = api.New(catalog.All(), env, api.Options{KeepAlive: 150 * time.Millisecond})
	})
	if r := f.req(t, "GET", "/v1/events", nil, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
	req, _ := http.NewRequest("GET", f.base+"/v1/events?kinds=index", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got []string
	for len(got) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream cut after %q: %v", got, err)
		}
		if strings.HasPrefix(line, ": keep-alive") {
			got = append(got, line)
			// After the first keep-alive (past the write timeout), an event.
			env.Emit(ops.Event{Kind: ops.EventNoteCreated, Path: "filtered-out.md"})
			env.Emit(ops.Event{Kind: ops.EventSyncFinished, Vault: "v"})
		}
		if strings.HasPrefix(line, "event: ") {
			got = append(got, line)
			if line != "event: index.sync_finished\n" {
				t.Fatalf("unexpected %q (filter ?kinds=index)", line)
			}
		}
	}
}
