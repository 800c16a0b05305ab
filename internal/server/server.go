// Package server composes loci's HTTP service: the MCP Streamable HTTP
// endpoint (/mcp), the REST API (/v1/, /openapi.json), a health check and a
// landing page, behind the security middleware (bearer token, Host and Origin
// checks against DNS rebinding and cross-site requests, body limits) and an
// http.Server with timeouts and graceful shutdown. docs/security.md explains
// the rules.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// Defaults.
const (
	DefaultAddr              = "127.0.0.1:8765"
	DefaultMaxBodyBytes      = 4 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 5 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
)

// Options configure the server. Zero values take the defaults above.
type Options struct {
	// Addr is the listen address (default 127.0.0.1:8765; port 0 picks a free port).
	Addr string
	// Auth, when set, resolves each request's bearer token to a principal
	// (internal/auth: Token as the owner, the tokens `loci token create`
	// made, JWTs), which the operations check; nil accepts Token alone.
	Auth *auth.Authenticator
	// Token is the owner's bearer token (the vault's own, see `loci
	// token`), accepted on /mcp, /v1/ and /openapi.json as the principal
	// "owner" with every right.
	// Empty disables authentication, which New allows only on a loopback address.
	Token string
	// ProtectedResource, when set (JWTs are accepted), serves the OAuth
	// protected-resource metadata (RFC 9728) at MetadataPath and names it
	// in every 401's WWW-Authenticate.
	ProtectedResource *ProtectedResource
	// AllowedOrigins are extra browser origins (scheme://host[:port]) allowed
	// besides loopback ones.
	AllowedOrigins []string
	// AllowedHosts are extra Host header values (host or host:port) allowed
	// besides loopback names, e.g. a LAN name when binding beyond loopback.
	AllowedHosts []string
	// MaxBodyBytes bounds request bodies on the REST routes and the web UI
	// (default 4 MiB). /mcp is bounded by the MCP handler itself
	// (mcpserver.MaxMessageBytes).
	MaxBodyBytes int64

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration

	// MCP serves /mcp (the MCP Streamable HTTP endpoint); nil answers 404.
	MCP http.Handler
	// API serves /v1/ and /openapi.json; nil answers 404.
	API http.Handler
	// Web serves the browser UI at / and /ui/ (it authenticates by itself:
	// session cookie or bearer token); nil serves a static landing page.
	Web http.Handler
	// Metrics serves /metrics (Prometheus text format) to a principal with
	// the admin scope, or to a bearer of MetricsToken; nil answers 404.
	Metrics      http.Handler
	MetricsToken string

	Logger *slog.Logger
}

// Server is loci's HTTP server.
type Server struct {
	opt     Options
	authn   *auth.Authenticator
	log     *slog.Logger
	hs      *http.Server
	handler http.Handler

	mu       sync.Mutex
	ln       net.Listener
	stopping chan struct{} // closed when shutdown starts; ends long-lived streams
	stopOnce sync.Once
	// extraHosts is true when AllowedHosts names hosts beyond loopback.
	extraHosts bool
}

// New validates the options and builds the server; it does not listen yet.
// It refuses to serve without a token on anything but a loopback address.
func New(opt Options) (*Server, error) {
	if opt.Addr == "" {
		opt.Addr = DefaultAddr
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opt.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&opt.ReadTimeout, DefaultReadTimeout)
	def(&opt.WriteTimeout, DefaultWriteTimeout)
	def(&opt.IdleTimeout, DefaultIdleTimeout)
	def(&opt.ShutdownTimeout, DefaultShutdownTimeout)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	host, _, err := net.SplitHostPort(opt.Addr)
	if err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "invalid listen address %q: %v", opt.Addr, err).With("addr", opt.Addr)
	}
	if opt.Auth == nil {
		opt.Auth = auth.NewAuthenticator(opt.Token, nil, nil)
	}
	if !opt.Auth.Required() && !IsLoopbackHost(host) {
		return nil, errs.New(errs.CodeInvalidInput,
			"refusing to serve %s without authentication: only a loopback address (127.0.0.1, [::1], localhost) may run without a token", opt.Addr).
			With("addr", opt.Addr)
	}
	if opt.MetricsToken != "" && len(opt.MetricsToken) < MinTokenLen {
		return nil, errs.New(errs.CodeInvalidInput, "the metrics token is too short (%d characters; at least %d)", len(opt.MetricsToken), MinTokenLen)
	}
	if opt.Token != "" && len(opt.Token) < MinTokenLen {
		return nil, errs.New(errs.CodeInvalidInput, "the token is too short (%d characters; at least %d)", len(opt.Token), MinTokenLen)
	}
	for _, o := range opt.AllowedOrigins {
		if normOrigin(o) == "" {
			return nil, errs.New(errs.CodeInvalidInput, "invalid allowed origin %q: want scheme://host[:port]", o).With("origin", o)
		}
	}
	s := &Server{opt: opt, log: opt.Logger, stopping: make(chan struct{}), extraHosts: len(opt.AllowedHosts) > 0,
		authn: opt.Auth}
	// A specific bind IP is a Host value a client may legitimately use; an IP
	// literal cannot be rebound by DNS.
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && !ip.IsUnspecified() {
		s.opt.AllowedHosts = append(append([]string(nil), opt.AllowedHosts...), host)
	}
	s.handler = s.routes()
	s.hs = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: opt.ReadHeaderTimeout,
		ReadTimeout:       opt.ReadTimeout,
		WriteTimeout:      opt.WriteTimeout,
		IdleTimeout:       opt.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(opt.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// IsLoopbackHost reports whether host (a name or IP, brackets allowed) is
// "localhost" or a loopback IP.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Handler returns the full handler (routes and middleware), for tests with
// httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the listen address; Serve calls it when needed. Calling it
// first lets a caller learn the address (port 0) before serving.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.opt.Addr)
	if err != nil {
		return errs.Wrap(err, errs.CodeInvalidInput, "cannot listen on "+s.opt.Addr).With("addr", s.opt.Addr)
	}
	s.ln = ln
	return nil
}

// Addr returns the bound address once listening, else the configured one.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.opt.Addr
}

// URL returns the base URL clients use (http://host:port, with an
// unspecified bind address shown as 127.0.0.1).
func (s *Server) URL() string {
	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		return "http://" + s.Addr()
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Serve listens (if Listen was not called) and serves until ctx is done, then
// shuts down gracefully: it stops accepting, ends long-lived MCP streams,
// waits up to ShutdownTimeout for in-flight requests and returns. It returns
// nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(s.ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	s.stopOnce.Do(func() { close(s.stopping) })
	dctx, cancel := context.WithTimeout(context.Background(), s.opt.ShutdownTimeout)
	defer cancel()
	err := s.hs.Shutdown(dctx)
	if err != nil {
		s.hs.Close()
		err = fmt.Errorf("shutdown: requests still running after %s were cut off: %w", s.opt.ShutdownTimeout, err)
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
