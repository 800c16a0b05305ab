package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

const jwtSecret = "server-test-hs256-secret-0123456789abcdef"

func jwtAuth(t *testing.T) *auth.Authenticator {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(jwtSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWTVerifier(context.Background(), auth.JWTConfig{HS256SecretFile: p})
	if err != nil {
		t.Fatal(err)
	}
	return auth.NewAuthenticator(testToken, nil, v)
}

func hsToken(t *testing.T, exp time.Time, scope string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "agent-1", "scope": scope, "exp": exp.Unix()}).SignedString([]byte(jwtSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// challengeParams parses a WWW-Authenticate value as an OAuth client does.
func challengeParams(t *testing.T, h string) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate([]string{h})
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %v %v", h, cs, err)
	}
	return cs[0].Params
}

func TestProtectedResourceMetadata(t *testing.T) {
	f := start(t, func(o *Options) {
		o.Auth = jwtAuth(t)
		o.ProtectedResource = &ProtectedResource{AuthorizationServers: []string{"https://idp.example"}}
		o.AllowedHosts = []string{"notes.lan:8765"}
	})
	ctx := context.Background()

	// The SDK's client fetches and checks both documents (resource must be
	// the URL it was fetched for).
	md, err := oauthex.GetProtectedResourceMetadata(ctx, f.base+MetadataPath, f.base, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(md.AuthorizationServers, []string{"https://idp.example"}) ||
		!slices.Equal(md.ScopesSupported, []string{"read", "write", "destructive", "ai", "admin"}) ||
		!slices.Equal(md.BearerMethodsSupported, []string{"header"}) {
		t.Errorf("metadata: %+v", md)
	}
	if _, err := oauthex.GetProtectedResourceMetadata(ctx, f.base+MetadataPathMCP, f.base+"/mcp", http.DefaultClient); err != nil {
		t.Error(err)
	}
	// Without a token, and the resource follows the (admitted) Host.
	r := f.req(t, "GET", MetadataPath, nil, map[string]string{"Host": "notes.lan:8765"})
	var doc map[string]any
	if r.status != 200 || json.Unmarshal(r.body, &doc) != nil || doc["resource"] != "http://notes.lan:8765" {
		t.Errorf("metadata for notes.lan: %d %s", r.status, r.body)
	}
	f.req(t, "GET", MetadataPath, nil, map[string]string{"Host": "evil.example"}).wantErr(t, 403, errs.CodeForbidden)
	f.req(t, "POST", MetadataPath, nil, nil).wantErr(t, 405, errs.CodeMethodNotAllowed)
	if r := f.req(t, "HEAD", MetadataPath, nil, nil); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD: %d %q", r.status, r.body)
	}
	f.req(t, "GET", MetadataPath+"/other", nil, nil).wantErr(t, 404, errs.CodeRouteNotFound)

	// Every 401 names the metadata: the MCP document for /mcp.
	for _, c := range []struct{ path, doc string }{{"/v1/status", MetadataPath}, {"/openapi.json", MetadataPath}, {"/mcp", MetadataPathMCP}} {
		r := f.req(t, "GET", c.path, nil, nil)
		r.wantErr(t, 401, errs.CodeUnauthorized)
		p := challengeParams(t, r.header.Get("WWW-Authenticate"))
		if p["realm"] != "loci" || p["resource_metadata"] != f.base+c.doc || p["error"] != "" {
			t.Errorf("%s without a token: %v", c.path, p)
		}
	}
	// An expired JWT: 401, invalid_token, the reason, the metadata.
	expired := hsToken(t, time.Now().Add(-time.Minute), "read")
	r = f.req(t, "GET", "/v1/status", nil, map[string]string{"Authorization": "Bearer " + expired})
	r.wantErr(t, 401, errs.CodeUnauthorized)
	if r.env.Error.Details["reason"] != "expired" || strings.Contains(string(r.body), expired) {
		t.Errorf("expired JWT: %s", r.body)
	}
	if p := challengeParams(t, r.header.Get("WWW-Authenticate")); p["error"] != "invalid_token" || p["resource_metadata"] != f.base+MetadataPath {
		t.Errorf("expired JWT challenge: %v", p)
	}
	// A valid one with read gets in.
	r = f.req(t, "GET", "/v1/status", nil, map[string]string{"Authorization": "Bearer " + hsToken(t, time.Now().Add(time.Hour), "read")})
	if r.status != 200 {
		t.Errorf("valid JWT: %d %s", r.status, r.body)
	}
}

func TestProtectedResourceConfigured(t *testing.T) {
	f := start(t, func(o *Options) {
		o.Auth = jwtAuth(t)
		o.ProtectedResource = &ProtectedResource{Resource: "https://notes.example.com/", AuthorizationServers: []string{"https://idp.example"}}
	})
	r := f.req(t, "GET", MetadataPathMCP, nil, nil)
	var md oauthex.ProtectedResourceMetadata
	if r.status != 200 || json.Unmarshal(r.body, &md) != nil || md.Resource != "https://notes.example.com/mcp" {
		t.Errorf("configured resource: %d %s", r.status, r.body)
	}
	r = f.req(t, "POST", "/mcp", nil, nil)
	if p := challengeParams(t, r.header.Get("WWW-Authenticate")); p["resource_metadata"] != "https://notes.example.com"+MetadataPathMCP {
		t.Errorf("challenge: %v", p)
	}
}

// Without JWT the metadata route does not exist and 401s name none.
func TestNoProtectedResourceWithoutJWT(t *testing.T) {
	f := start(t, nil)
	f.req(t, "GET", MetadataPath, nil, nil).wantErr(t, 404, errs.CodeRouteNotFound)
	f.req(t, "GET", MetadataPathMCP, nil, nil).wantErr(t, 404, errs.CodeRouteNotFound)
	r := f.req(t, "GET", "/v1/status", nil, nil)
	if h := r.header.Get("WWW-Authenticate"); h != `Bearer realm="loci"` {
		t.Errorf("challenge without JWT: %q", h)
	}
}
