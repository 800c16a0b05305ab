package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// The OAuth protected-resource metadata (RFC 9728): one document for the
// whole server (resource: the base URL) and one for the MCP endpoint
// (resource: <base>/mcp), where MCP clients look first.
const (
	MetadataPath    = "/.well-known/oauth-protected-resource"
	MetadataPathMCP = MetadataPath + "/mcp"
)

// ProtectedResource describes the server as an OAuth protected resource,
// for clients that get their JWTs from an authorization server. Set when
// JWTs are accepted; nil serves no metadata (404).
type ProtectedResource struct {
	// Resource is the server's public base URL (scheme://host[:port]) as
	// clients reach it; empty takes it from each request (http, or https
	// behind TLS, and the Host header, which checkHost has admitted).
	Resource string
	// AuthorizationServers are the issuers clients get tokens from.
	AuthorizationServers []string
}

// baseURL is the server's base URL for r: the configured resource, else
// r's scheme and Host, else the listen address.
func (s *Server) baseURL(r *http.Request) string {
	if pr := s.opt.ProtectedResource; pr != nil && pr.Resource != "" {
		return strings.TrimRight(pr.Resource, "/")
	}
	if r != nil && plainHost(r.Host) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		return (&url.URL{Scheme: scheme, Host: r.Host}).String()
	}
	return s.URL()
}

// plainHost reports whether h has only the characters of a host[:port]
// (so it can go into a URL and a quoted header value as it is).
func plainHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_:[]", c) >= 0) {
			return false
		}
	}
	return true
}

// metadataURL is where the metadata for r's route is: the MCP document
// for /mcp, the server's for the rest.
func (s *Server) metadataURL(r *http.Request) string {
	p := MetadataPath
	if r != nil && r.URL.Path == "/mcp" {
		p = MetadataPathMCP
	}
	return s.baseURL(r) + p
}

// serveMetadata answers GET /.well-known/oauth-protected-resource[/mcp]
// without authentication: public facts (where tokens come from, which
// scopes exist, that the token goes in the Authorization header).
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		api.WriteError(w, errs.New(errs.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	resource := s.baseURL(r)
	if r.URL.Path == MetadataPathMCP {
		resource += "/mcp"
	}
	md := oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   s.opt.ProtectedResource.AuthorizationServers,
		ScopesSupported:        auth.ScopeNames(auth.AllScopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "loci",
	}
	b, err := json.Marshal(md)
	if err != nil {
		api.WriteError(w, errs.Wrap(err, errs.CodeInternal, "cannot encode the resource metadata"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(append(b, '\n'))
}
