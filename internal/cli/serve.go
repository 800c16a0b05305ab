package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/web"
)

func init() { commandFactories = append(commandFactories, newServeCmd) }

// serveOptions are the flags of `loci serve`.
type serveOptions struct {
	addr         string
	maxSessions  int
	sessionIdle  time.Duration
	noAuth       bool
	allowHosts   []string
	allowOrigins []string
	resync       time.Duration
	noSync       bool
	logLevel     string
	fresh        freshOptions
	offer        offerOptions
}

func newServeCmd(g *globals) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [vault...]",
		Short: "Serve vaults over HTTP: MCP at /mcp, REST at /v1/",
		Long: "Serve one or more vaults over HTTP on a loopback address: the MCP Streamable HTTP endpoint at /mcp, " +
			"the REST API at /v1/ (POST /v1/ops/<name>, GET /v1/search, /v1/notes/<path>, ...) and its OpenAPI document at /openapi.json. " +
			"Every request needs the bearer token (see `loci token`; LOCI_TOKEN overrides it), the Host header must be a loopback name " +
			"and browser origins must be loopback ones (docs/security.md). The server answers at once while the index syncs in the background. " +
			"With no arguments the --vault folder is served (default: the working directory, if it is a vault: docs/cli.md#which-vault).",
		Example: "  loci serve ~/Notes\n  loci serve ~/Notes ~/Work --addr 127.0.0.1:9000\n  loci mcp-config claude-code --http",
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.startServe(cmd.Context(), args, o)
			if err != nil {
				return err
			}
			s.printBanner(g, o)
			return s.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "`address` to listen on (host:port); anything but loopback requires the token")
	f.IntVar(&o.maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "maximum concurrent MCP sessions")
	f.DurationVar(&o.sessionIdle, "session-idle", mcpserver.DefaultIdleTimeout, "close MCP sessions idle this long")
	f.BoolVar(&o.noAuth, "no-auth", false, "serve without a token (loopback addresses only; any local process can then read the vault)")
	f.StringSliceVar(&o.allowHosts, "allow-host", nil, "extra Host header value to accept (host or host:port, repeatable)")
	f.StringSliceVar(&o.allowOrigins, "allow-origin", nil, "extra browser origin to accept, e.g. https://app.example (repeatable)")
	f.DurationVar(&o.resync, "resync", time.Minute, "with --no-watch: re-sync the index this often to pick up edits (0 = only at startup)")
	f.BoolVar(&o.noSync, "no-sync", false, "serve the index as it is, without syncing or watching")
	o.fresh.flags(cmd)
	o.offer.flags(cmd)
	f.StringVar(&o.logLevel, "log-level", "info", "stderr log level: debug (logs every request), info, warn or error")
	return cmd
}

// serving is a started `loci serve`: vaults open, listener bound.
type serving struct {
	env         *ops.Env
	mcp         *mcpserver.Server
	srv         *server.Server
	log         *slog.Logger
	token       string
	tokenSource string // "env", the token file's path, or "" with --no-auth
	resync      time.Duration
	noSync      bool
	fresh       freshOptions
	closeLog    func()
	jwtAlgs     []string // the JWT algorithms accepted (none: JWT is off)
	facade      bool
}

// startServe opens the vaults, builds the MCP and REST handlers and the
// server, and binds the listener (so a caller learns the address before
// run). On error everything opened is closed.
func (g *globals) startServe(ctx context.Context, dirs []string, o serveOptions) (_ *serving, err error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "--log-level must be debug, info, warn or error, not %q", o.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "invalid --addr %q: %v", o.addr, err)
	}
	if o.noAuth && !server.IsLoopbackHost(host) {
		return nil, errs.New(errs.CodeInvalidInput, "--no-auth is only allowed on a loopback address (127.0.0.1, [::1], localhost), not %s", o.addr)
	}
	env, err := g.openServeEnv(ctx, dirs)
	if err != nil {
		return nil, err
	}
	s := &serving{env: env, log: logger}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	facade, err := o.offer.apply(g, env)
	if err != nil {
		return nil, err
	}
	serveLimits(env, g.serverCfg.Limits)
	if !o.noAuth {
		if s.token, s.tokenSource, _, err = server.ResolveToken(env.Vaults[0].Index.Loc); err != nil {
			return nil, err
		}
	}
	if s.closeLog, err = openEventsLog(env, o.fresh.eventsLog); err != nil {
		return nil, err
	}
	watched, err := observe(ctx, env, g.serverCfg, true, logger)
	if err != nil {
		return nil, err
	}
	env.Audit = func(r ops.AuditRecord) {
		logger.Debug("call", "surface", r.Surface, "session", r.Session, "op", r.Operation, "code", r.Code, "ms", r.DurationMs)
	}
	var authn *auth.Authenticator
	var resource *server.ProtectedResource // set when JWTs are accepted
	if !o.noAuth {
		var store *auth.Store
		if dir := config.UserConfigDir(os.Getenv); dir != "" {
			store = auth.NewStore(dir)
		}
		var jwtv auth.TokenVerifier
		if jwtv, resource, err = g.serveJWT(ctx, env.Vaults[0].Vault.Root); err != nil {
			return nil, err
		}
		if v, ok := jwtv.(*auth.JWTVerifier); ok {
			s.jwtAlgs = v.Algorithms()
		}
		authn = auth.NewAuthenticator(s.token, store, jwtv)
	}
	env.Principals = principalByName
	reg := catalog.All()
	s.mcp = mcpserver.New(reg, env, mcpserver.Options{
		Name: "loci", Version: Version, MaxSessions: o.maxSessions, IdleTimeout: o.sessionIdle, Logger: logger, Facade: facade,
	})
	s.facade = facade
	watched.obs.Metrics.GaugeFunc("loci_mcp_sessions", "MCP sessions open now.", func() float64 { return float64(s.mcp.SessionCount()) })
	s.srv, err = server.New(server.Options{
		Addr: o.addr, Token: s.token, Auth: authn, ProtectedResource: resource, AllowedHosts: o.allowHosts, AllowedOrigins: o.allowOrigins,
		MCP: s.mcp.HTTPHandler(), API: api.New(reg, env, api.Options{Version: Version, Logger: logger}), Logger: logger,
		Web:     web.New(reg, env, web.Options{Token: s.token, Auth: authn, Version: Version, Logger: logger}),
		Metrics: watched.obs.Metrics.Handler(), MetricsToken: watched.metricsToken,
	})
	if err != nil {
		return nil, err
	}
	if err = s.srv.Listen(); err != nil {
		return nil, err
	}
	s.resync, s.noSync, s.fresh = o.resync, o.noSync, o.fresh
	return s, nil
}

// run serves until ctx is done (SIGINT/SIGTERM in the CLI) with the index
// syncing in the background, then shuts down gracefully: drain requests,
// close MCP sessions, stop syncing, close the databases.
func (s *serving) run(ctx context.Context) error {
	syncCtx, stopSync := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if !s.noSync {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keepFresh(syncCtx, s.env, s.fresh, s.resync, s.log)
		}()
	}
	err := s.srv.Serve(ctx)
	s.log.Info("loci serve: stopping")
	stopSync()
	wg.Wait()
	s.close()
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "server stopped")
	}
	return nil
}

func (s *serving) close() {
	if s.mcp != nil {
		s.mcp.Close()
	}
	if s.closeLog != nil {
		s.closeLog()
	}
	s.env.Close()
}

// printBanner tells the user where everything is (stdout).
func (s *serving) printBanner(g *globals, o serveOptions) {
	base := s.srv.URL()
	names := make([]string, len(s.env.Vaults))
	for i, v := range s.env.Vaults {
		names[i] = fmt.Sprintf("%s (%s)", v.Name, v.Vault.Root)
	}
	w := g.stdout
	fmt.Fprintf(w, "loci %s serving %s\n", Version, strings.Join(names, ", "))
	fmt.Fprintf(w, "  MCP      %s/mcp\n", base)
	fmt.Fprintf(w, "  web UI   %s\n", web.LoginURL(base, s.token))
	fmt.Fprintf(w, "  REST     %s/v1/   (operations: %s/v1/ops, OpenAPI: %s/openapi.json, events: %s/v1/events)\n", base, base, base, base)
	switch s.tokenSource {
	case "":
		fmt.Fprintf(w, "  token    none (--no-auth: any local process can call loci)\n")
	case "env":
		fmt.Fprintf(w, "  token    %s   (from %s)\n", s.token, server.EnvToken)
	default:
		fmt.Fprintf(w, "  token    %s   (from %s)\n", s.token, s.tokenSource)
	}
	if len(s.jwtAlgs) > 0 {
		fmt.Fprintf(w, "  JWT      %s accepted (server.jwt); OAuth metadata: %s%s\n", strings.Join(s.jwtAlgs, ", "), base, server.MetadataPath)
	}
	hint := "loci mcp-config claude-code --http"
	if o.addr != server.DefaultAddr {
		hint += " --addr " + shellQuote(s.srv.Addr())
	}
	if len(s.env.Vaults) > 0 {
		hint += " --vault " + shellQuote(s.env.Vaults[0].Vault.Root)
	}
	// One line per vault: each follows its own config's write policy.
	for _, vh := range s.env.Vaults {
		state, detail := writePolicy(s.env.WritesFor(vh))
		line := map[string]string{
			"read-only": "off (read-only)",
			"on":        "on: clients may edit notes (previewed, etag-guarded, undoable; docs/writes.md)",
			"off":       "off (--enable-writes lets clients edit notes)",
		}[state]
		if len(detail) > 0 {
			line += "; " + strings.Join(detail, "; ")
		}
		fmt.Fprintf(w, "  writes   %s: %s\n", vh.Name, line)
		for _, n := range g.notices[vh] {
			fmt.Fprintf(w, "  note     %s: %s\n", vh.Name, noticeText(n))
		}
	}
	if len(s.env.Toolsets) > 0 {
		fmt.Fprintf(w, "  toolsets %s only (for every principal)\n", strings.Join(s.env.Toolsets, ", "))
	}
	if s.facade {
		fmt.Fprintf(w, "  facade   on: MCP lists find_capability, describe_capability and call_capability\n")
	}
	fmt.Fprintf(w, "  connect  %s\n", hint)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
}

// serveLimits applies server.limits of the user's config: a token bucket
// per HTTP principal and class, and a cap on its calls in flight
// (docs/security.md, "Limits").
func serveLimits(env *ops.Env, l config.Limits) {
	set := ops.LimitSettings{
		Read:        ops.Rate{PerMinute: l.Read.PerMinute, Burst: l.Read.Burst},
		Write:       ops.Rate{PerMinute: l.Write.PerMinute, Burst: l.Write.Burst},
		AI:          ops.Rate{PerMinute: l.AI.PerMinute, Burst: l.AI.Burst},
		Concurrency: l.Concurrency,
	}
	if set.Active() {
		env.Limits = ops.NewLimiter(set, nil)
	}
}
