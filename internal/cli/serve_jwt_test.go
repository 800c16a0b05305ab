package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/server"
)

const serveJWTSecret = "cli-serve-test-hs256-secret-0123456789abcdef"

// jwtConfigDir makes a user config folder with config.yaml (yaml) and
// the HS256 secret beside it, and points loci at it.
func jwtConfigDir(t *testing.T, yaml, secret string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(config.EnvConfigDir, dir)
	t.Setenv(config.EnvConfig, "")
	t.Setenv(server.EnvToken, "")
	if err := os.WriteFile(filepath.Join(dir, "jwt.secret"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func serveJWT(t *testing.T, over map[string]any) string {
	t.Helper()
	c := jwt.MapClaims{"sub": "agent-7", "scope": "openid read", "iss": "https://idp.example", "aud": "loci-test",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range over {
		c[k] = v
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(serveJWTSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func restCall(t *testing.T, method, url, token, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestServeJWTEndToEnd runs `loci serve` with server.jwt in the user's
// config: a JWT with scope read searches over REST and MCP (SDK client)
// but may not edit; an expired one is 401 with the challenge; the
// metadata route answers.
func TestServeJWTEndToEnd(t *testing.T) {
	jwtConfigDir(t, `writes: {enabled: true}
server:
  jwt:
    hs256_secret_file: jwt.secret   # relative: beside this file
    issuer: https://idp.example
    audience: loci-test
    authorization_servers: [https://idp.example]
`, serveJWTSecret)
	v := demoCopy(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx := t.Context()
	s, synced := serveForTest(t, g, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"},
		func(s *serving) { s.printBanner(g, serveOptions{addr: "127.0.0.1:0"}) })
	base := s.srv.URL()
	if want := "  JWT      HS256 accepted (server.jwt); OAuth metadata: " + base + server.MetadataPath; !strings.Contains(stdout.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, stdout.String())
	}
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the background sync published nothing")
	}
	reader := serveJWT(t, nil)

	// REST: search works, an edit is forbidden naming the missing scope.
	code, _, body := restCall(t, "POST", base+"/v1/ops/search_notes", reader, `{"query":"spaced repetition","limit":1}`)
	if code != 200 || !strings.Contains(body, "Ideas/Spaced repetition.md") {
		t.Errorf("REST search with a read JWT: %d %s", code, body)
	}
	edit := `{"path":"Ideas/Zettelkasten.md","patches":[{"op":"add_tags","tags":["jwt"]}],"apply":true}`
	code, _, body = restCall(t, "POST", base+"/v1/ops/edit_note", reader, edit)
	if code != 403 || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, "write") {
		t.Errorf("REST edit with a read JWT: %d %s", code, body)
	}
	before, _ := os.ReadFile(filepath.Join(v, "Ideas", "Zettelkasten.md"))
	if strings.Contains(string(before), "jwt") {
		t.Error("the forbidden edit was applied")
	}
	// The same edit with write scope passes the scope check (control).
	code, _, body = restCall(t, "POST", base+"/v1/ops/edit_note", serveJWT(t, map[string]any{"scope": "read write"}), edit)
	if code == 403 || code == 401 {
		t.Errorf("REST edit with a read write JWT: %d %s", code, body)
	}

	// MCP with the SDK client.
	client := mcp.NewClient(&mcp.Implementation{Name: "jwt-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{reader}},
	}, nil)
	if err != nil {
		t.Fatalf("MCP connect with a JWT: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "spaced repetition", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("MCP search with a read JWT: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), "Ideas/Spaced repetition.md") {
		t.Errorf("MCP search: %s", b)
	}
	var args map[string]any
	json.Unmarshal([]byte(edit), &args)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "edit_note", Arguments: args})
	if err != nil || !res.IsError || len(res.Content) == 0 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "forbidden") {
		t.Errorf("MCP edit with a read JWT: %v %+v", err, res)
	}

	// Expired, or for another audience: 401 with the challenge.
	for _, c := range []struct {
		tok, reason string
	}{
		{serveJWT(t, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), "expired"},
		{serveJWT(t, map[string]any{"aud": "someone-else"}), "audience_mismatch"},
	} {
		code, hdr, body := restCall(t, "POST", base+"/v1/ops/search_notes", c.tok, `{"query":"x"}`)
		if code != 401 || !strings.Contains(body, `"reason":"`+c.reason+`"`) {
			t.Errorf("%s JWT: %d %s", c.reason, code, body)
		}
		cs, _ := oauthex.ParseWWWAuthenticate(hdr.Values("WWW-Authenticate"))
		if len(cs) != 1 || cs[0].Params["error"] != "invalid_token" || cs[0].Params["resource_metadata"] != base+server.MetadataPath {
			t.Errorf("%s JWT challenge: %q", c.reason, hdr.Get("WWW-Authenticate"))
		}
	}
	_, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{serveJWT(t, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})}}}, nil)
	if err == nil {
		t.Error("MCP connect with an expired JWT succeeded")
	}

	// The metadata, without a token, as the SDK's OAuth client reads it.
	md, err := oauthex.GetProtectedResourceMetadata(ctx, base+server.MetadataPathMCP, base+"/mcp", http.DefaultClient)
	if err != nil || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != "https://idp.example" || len(md.ScopesSupported) != 5 {
		t.Errorf("metadata: %+v %v", md, err)
	}
	// The owner token still works beside JWTs.
	if code, _, body := restCall(t, "GET", base+"/v1/status", s.token, ""); code != 200 {
		t.Errorf("owner token: %d %s", code, body)
	}
}

func TestServeJWTConfigRefused(t *testing.T) {
	v := demoCopy(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + closed.Addr().String() + "/jwks"
	closed.Close()
	cases := []struct {
		name, yaml, secret, key, msg string
	}{
		{"short secret", "server:\n  jwt:\n    hs256_secret_file: jwt.secret\n", "too-short", "server.jwt.hs256_secret_file", "at least 32"},
		{"missing secret file", "server:\n  jwt:\n    hs256_secret_file: nope.secret\n", serveJWTSecret, "server.jwt.hs256_secret_file", "cannot read"},
		{"issuer without keys", "server:\n  jwt:\n    issuer: https://idp.example\n", serveJWTSecret, "server.jwt.hs256_secret_file", "names no keys"},
		{"plain http authorization server", "server:\n  jwt:\n    hs256_secret_file: jwt.secret\n    authorization_servers: [http://idp.example]\n", serveJWTSecret, "server.jwt.authorization_servers", "https"},
		{"unreachable JWKS", "server:\n  jwt:\n    jwks_url: " + deadURL + "\n", serveJWTSecret, "server.jwt.jwks_url", "cannot load the keys"},
		{"bad confirm", "server:\n  jwt:\n    hs256_secret_file: jwt.secret\n    confirm: never\n", serveJWTSecret, "server.jwt.confirm", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := jwtConfigDir(t, c.yaml, c.secret)
			g := &globals{vault: ".", format: "text", stdout: io.Discard, stderr: io.Discard}
			s, err := g.startServe(context.Background(), []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"})
			if err == nil {
				s.close()
				t.Fatal("started")
			}
			e := errs.As(err)
			probs := config.Problems(err)
			if e.Code != errs.CodeConfigInvalid || len(probs) == 0 || probs[0].Key != c.key || !strings.Contains(e.Message, c.msg) ||
				!strings.Contains(e.Message, filepath.Join(dir, "config.yaml")) {
				t.Fatalf("got %v %+v", err, probs)
			}
			if strings.Contains(e.Message, serveJWTSecret) {
				t.Error("the message shows the secret")
			}
		})
	}
	// --no-auth does not read server.jwt at all.
	jwtConfigDir(t, "server:\n  jwt:\n    hs256_secret_file: jwt.secret\n", "short")
	g := &globals{vault: ".", format: "text", stdout: io.Discard, stderr: io.Discard}
	s, err := g.startServe(context.Background(), []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn", noAuth: true})
	if err != nil {
		t.Fatalf("--no-auth: %v", err)
	}
	s.close()
}
