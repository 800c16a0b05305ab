package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/mcpserver"
)

// routes builds the handler: recovery and logging, then the Host and Origin
// checks for every route, then authentication and the body limit for the
// protected ones.
//
// /mcp is not wrapped in limitBody: the MCP handler bounds each POSTed
// message itself (mcpserver.MaxMessageBytes) and answers an oversized one
// in JSON-RPC's shape, with the request's id when it can be read. It too
// is behind auth, so no body is read before authentication.
func (s *Server) routes() http.Handler {
	protected := func(h http.Handler) http.Handler {
		if h == nil {
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				api.WriteError(w, errs.New(errs.CodeRouteNotFound, "no such route: %s", r.URL.Path))
			})
		}
		return s.auth(s.limitBody(h))
	}
	mcp := s.auth(s.mcpPrincipal(s.mcpStreams(s.opt.MCP)))
	if s.opt.MCP == nil {
		mcp = protected(nil)
	}
	rest := protected(s.opt.API)
	events := protected(s.longLived(s.opt.API))
	metrics := s.metrics()
	var web, webEvents http.Handler
	if s.opt.Web != nil {
		web = s.limitBody(s.opt.Web)
		webEvents = s.longLived(web) // the UI's event stream (/ui/events)
	}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/mcp":
			mcp.ServeHTTP(w, r)
		case p == "/v1/events" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			events.ServeHTTP(w, r)
		case p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/openapi.json":
			rest.ServeHTTP(w, r)
		case s.opt.ProtectedResource != nil && (p == MetadataPath || p == MetadataPathMCP):
			s.serveMetadata(w, r)
		case p == "/metrics":
			metrics.ServeHTTP(w, r)
		case p == "/healthz":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				api.WriteError(w, errs.New(errs.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, p))
				return
			}
			api.WriteResult(w, nil)
		case s.opt.Web != nil && p == "/ui/events":
			webEvents.ServeHTTP(w, r)
		case s.opt.Web != nil && (p == "/" || strings.HasPrefix(p, "/ui/")):
			web.ServeHTTP(w, r)
		case p == "/":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				api.WriteError(w, errs.New(errs.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, p))
				return
			}
			serveLanding(w)
		default:
			api.WriteError(w, errs.New(errs.CodeRouteNotFound, "no such route: %s", p).
				With("hint", "MCP is at /mcp, REST at /v1/ops, OpenAPI at /openapi.json"))
		}
	})
	return s.recoverAndLog(s.checkHost(s.checkOrigin(mux)))
}

const landing = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loci</title></head>
<body>
<h1>loci</h1>
<p>A local-first memory engine for Markdown vaults.</p>
<ul>
<li>MCP (Streamable HTTP): <code>/mcp</code></li>
<li>REST: <a href="/v1/ops"><code>/v1/ops</code></a> (operations; send <code>Authorization: Bearer &lt;token&gt;</code>)</li>
<li>OpenAPI: <a href="/openapi.json"><code>/openapi.json</code></a></li>
</ul>
<p>Get the token with <code>loci token</code>; connect a client with <code>loci mcp-config claude-code --http</code>.</p>
</body></html>
`

func serveLanding(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	io.WriteString(w, landing)
}

// auth resolves the request's bearer token to a principal (the owner
// token, a token from the principals file, or a JWT: auth.Authenticator)
// and passes it down to the operations, which check its rights. Without
// any credentials configured (--no-auth on loopback) every request is the
// owner.
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authn.Required() {
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Owner(auth.ViaAnonymous))))
			return
		}
		given, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", s.challengeFor(r, ""))
			api.WriteError(w, errs.New(errs.CodeUnauthorized, "missing bearer token: send Authorization: Bearer <token> (see `loci token`)"))
			return
		}
		p, err := s.authn.Authenticate(r.Context(), given)
		if err != nil {
			e := errs.As(err)
			if e.Code == errs.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", s.challengeFor(r, "invalid_token"))
			}
			api.WriteError(w, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// challengeFor is the WWW-Authenticate value of a 401 to r; when JWTs are
// accepted it names the protected-resource metadata (RFC 9728 §5.1), so
// an OAuth client can find where to get a token.
func (s *Server) challengeFor(r *http.Request, errCode string) string {
	v := `Bearer realm="loci"`
	if errCode != "" {
		v += `, error="` + errCode + `"`
	}
	if s.opt.ProtectedResource != nil {
		v += `, resource_metadata="` + s.metadataURL(r) + `"`
	}
	return v
}

// mcpPrincipal hands the principal auth resolved to the MCP SDK as token
// info, which the SDK attaches to every request of the session and binds
// the session to (a session started by one principal cannot be used by
// another).
func (s *Server) mcpPrincipal(next http.Handler) http.Handler {
	if next == nil || !s.authn.Required() {
		return next
	}
	verify := func(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		p := auth.From(r.Context())
		if p == nil {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: p.Via + ":" + p.Name, Scopes: auth.ScopeNames(p.Scopes),
			Extra: map[string]any{mcpserver.TokenInfoPrincipal: p}}, nil
	}
	return sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// checkHost is the DNS-rebinding guard: a page on evil.example whose name
// was rebound to 127.0.0.1 still sends Host: evil.example.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			api.WriteError(w, errs.New(errs.CodeForbidden, "Host %q is not allowed; loci answers loopback names only unless the host is listed with --allow-host", r.Host).
				With("host", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	hostport = strings.ToLower(strings.TrimSpace(hostport))
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if IsLoopbackHost(host) {
		return true
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, a := range s.opt.AllowedHosts {
		a = strings.ToLower(strings.TrimSpace(a))
		if _, _, err := net.SplitHostPort(a); err == nil {
			if a == hostport {
				return true
			}
			continue
		}
		if strings.TrimSuffix(strings.Trim(a, "[]"), ".") == host {
			return true
		}
	}
	return false
}

// checkOrigin rejects browser requests from foreign pages. Requests without an
// Origin header (curl, agents, same-origin GETs) pass; loopback origins and
// AllowedOrigins pass and get CORS headers; CORS preflights are answered here.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !s.originAllowed(origin) {
			api.WriteError(w, errs.New(errs.CodeForbidden, "Origin %q is not allowed; only loopback origins and those listed with --allow-origin may call loci", origin).
				With("origin", origin))
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) originAllowed(origin string) bool {
	n := normOrigin(origin)
	if n == "" {
		return false // "null", garbage
	}
	u, _ := url.Parse(n)
	if u.Scheme == "http" || u.Scheme == "https" {
		if IsLoopbackHost(u.Hostname()) {
			return true
		}
	}
	for _, a := range s.opt.AllowedOrigins {
		if normOrigin(a) == n {
			return true
		}
	}
	return false
}

// normOrigin returns scheme://host[:port] in lower case, or "" if o is not an
// origin.
func normOrigin(o string) string {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// limitBody bounds request bodies. The body is read here (up to the limit),
// so an oversized body gets the same 413 JSON error whether it announced its
// length or streamed it chunked, and whichever handler is behind.
func (s *Server) limitBody(next http.Handler) http.Handler {
	max := s.opt.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			api.WriteError(w, tooLarge(max))
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				api.WriteError(w, tooLarge(max))
				return
			}
			api.WriteError(w, errs.Wrap(err, errs.CodeInvalidInput, "cannot read the request body"))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}

func tooLarge(max int64) *errs.Error {
	return errs.New(errs.CodeTooLarge, "request body is over the %d-byte limit", max).With("limit", max)
}

// mcpStreams adapts /mcp: it lifts the read and write deadlines for the standalone MCP event
// stream (GET /mcp, server-sent events that last as long as the session) and
// ends it when shutdown starts, so a graceful shutdown is not held up by it.
// Other requests keep the server's timeouts.
func (s *Server) mcpStreams(next http.Handler) http.Handler {
	if next == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.extraHosts {
			// The MCP SDK refuses non-loopback Host headers on a loopback
			// listener by itself; checkHost already applied the same rule
			// plus --allow-host, so hide the local address from that check.
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, nil))
		}
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		s.serveStream(next, w, r)
	})
}

// longLived lifts the deadlines of a streaming route (GET /v1/events) and
// ends it at shutdown, like the MCP event stream.
func (s *Server) longLived(next http.Handler) http.Handler {
	if next == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveStream(next, w, r) })
}

func (s *Server) serveStream(next http.Handler, w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	next.ServeHTTP(w, r.WithContext(ctx))
}

// recoverAndLog turns a panic into a 500 JSON error and logs each request at
// debug level: method, path, status and duration; never query strings,
// bodies or headers (they may hold note text or the token).
func (s *Server) recoverAndLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if !rw.wrote {
					api.WriteError(rw, errs.New(errs.CodeInternal, "internal error"))
				}
			}
			s.log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", rw.status(), "ms", time.Since(start).Milliseconds())
		}()
		next.ServeHTTP(rw, r)
	})
}

// statusWriter records the status; Unwrap keeps http.ResponseController
// (flush, deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}
