// Package web is loci's browser UI, served at / by `loci serve`: a search
// page (lexical, semantic or hybrid), a note view (rendered Markdown,
// frontmatter, outgoing links, backlinks, typed links), the index status and
// the recent activity (applied writes, with an undo button). Pages are
// rendered on the server with html/template; the CSS and the small
// keyboard script are embedded. Every page calls operations through the
// registry (reg.Call), like the CLI, MCP and REST surfaces: this package
// holds no business rules.
//
// Login: `loci serve` prints http://host:port/?token=<token>; opening it sets
// an HttpOnly, SameSite=Strict session cookie and redirects to /, so the
// token leaves the address bar. The cookie is accepted by the UI only; the
// API keeps the bearer token. Forms that change something (undo) carry a
// per-session CSRF token and must come from the same origin.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

//go:embed assets
var assets embed.FS

// CookieName is the session cookie of the UI.
const CookieName = "loci_session"

const maxSessions = 256

// Options configure the UI.
type Options struct {
	// Token is the server's owner token; empty with no Auth means no
	// authentication (--no-auth on loopback).
	Token string
	// Auth resolves a login token to a principal, as for the API (nil:
	// only Token, as the owner).
	Auth    *auth.Authenticator
	Version string
	Logger  *slog.Logger
}

// Handler serves the UI.
type Handler struct {
	reg   *ops.Registry
	env   *ops.Env
	opt   Options
	log   *slog.Logger
	tmpl  *template.Template
	files http.Handler

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	csrf      string
	created   time.Time
	principal *auth.Principal
	// token is the credential the session was started with; each request
	// authenticates it again, so a revoked token, a changed principal or
	// an expired JWT takes effect at once, as for the API ("" with
	// --no-auth).
	token string
}

// New returns the UI handler.
func New(reg *ops.Registry, env *ops.Env, opt Options) *Handler {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static, _ := fs.Sub(assets, "assets/static")
	if opt.Auth == nil {
		opt.Auth = auth.NewAuthenticator(opt.Token, nil, nil)
	}
	h := &Handler{reg: reg, env: env, opt: opt, log: log, sessions: map[string]*session{},
		files: http.StripPrefix("/ui/static/", http.FileServerFS(static))}
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))
	return h
}

// Routes reports whether path belongs to the UI.
func Routes(path string) bool { return path == "/" || strings.HasPrefix(path, "/ui/") }

// LoginURL is the URL `loci serve` prints: base/?token=<token>.
func LoginURL(base, token string) string {
	if token == "" {
		return base + "/"
	}
	return base + "/?token=" + url.QueryEscape(token)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	p := r.URL.Path
	if strings.HasPrefix(p, "/ui/static/") {
		hd.Set("Cache-Control", "no-cache")
		if h.serveCompressed(w, r) {
			return
		}
		h.files.ServeHTTP(w, r)
		return
	}
	// Login by URL: ?token= sets the cookie, then a redirect drops the token.
	if tok := r.URL.Query().Get("token"); tok != "" && p == "/" && h.opt.Auth.Required() {
		pr := h.login(r.Context(), tok)
		if pr == nil {
			h.loginPage(w, r, "That token is not valid (see `loci token`).")
			return
		}
		h.startSession(w, pr, tok)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if p == "/ui/login" && r.Method == http.MethodPost {
		var pr *auth.Principal
		tok := r.PostFormValue("token")
		if h.sameOrigin(r) {
			pr = h.login(r.Context(), tok)
		}
		if pr == nil {
			h.loginPage(w, r, "That token is not valid (see `loci token`).")
			return
		}
		h.startSession(w, pr, tok)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if p == "/ui/logout" && r.Method == http.MethodPost {
		if s, id := h.session(r); s != nil && h.sameOrigin(r) && h.csrfOK(s, r) {
			h.mu.Lock()
			delete(h.sessions, id)
			h.mu.Unlock()
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s, _ := h.session(r)
	if s == nil {
		var pr *auth.Principal
		if tok, ok := bearer(r.Header.Get("Authorization")); ok {
			pr = h.login(r.Context(), tok)
		}
		if !h.opt.Auth.Required() {
			s = h.startSession(w, auth.Owner(auth.ViaAnonymous), "") // --no-auth: a session only for the CSRF token
		} else if pr != nil {
			s = &session{principal: pr} // a scripted client with a bearer token (no forms)
		} else {
			h.loginPage(w, r, "")
			return
		}
	}
	ctx := auth.WithPrincipal(r.Context(), s.principal)
	if h.serveView(ctx, w, r, s) { // views.go, live.go
		return
	}
	switch {
	case p == "/ui/note" && isGet(r):
		h.notePage(ctx, w, r, s)
	case p == "/ui/media" && isGet(r):
		h.media(ctx, w, r, s)
	case p == "/ui/status" && isGet(r):
		h.statusPage(ctx, w, r, s)
	case p == "/ui/activity" && isGet(r):
		h.activityPage(ctx, w, r, s)
	case p == "/ui/undo" && r.Method == http.MethodPost:
		h.undo(ctx, w, r, s)
	case p == "/ui/pending" && isGet(r):
		h.pendingPage(ctx, w, r, s)
	case p == "/ui/pending.json" && isGet(r):
		h.pendingJSON(w, r, s)
	case p == "/ui/confirm" && r.Method == http.MethodPost:
		h.decide(w, r, s)
	default:
		w.WriteHeader(http.StatusNotFound)
		h.render(w, "error", page{Title: "Not found", Session: s, Error: "No such page: " + p})
	}
}

func isGet(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// login resolves a token to its principal as the API does, or nil (also
// when the principal's credential, a JWT, has expired).
func (h *Handler) login(ctx context.Context, tok string) *auth.Principal {
	if tok == "" {
		return nil
	}
	p, err := h.opt.Auth.Authenticate(ctx, tok)
	if err != nil || p.Expired(time.Now()) {
		return nil
	}
	return p
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (h *Handler) startSession(w http.ResponseWriter, p *auth.Principal, tok string) *session {
	id := randomHex(32)
	s := &session{csrf: randomHex(32), created: time.Now(), principal: p, token: tok}
	h.mu.Lock()
	if len(h.sessions) >= maxSessions {
		var oldest string
		for k, v := range h.sessions {
			if oldest == "" || v.created.Before(h.sessions[oldest].created) {
				oldest = k
			}
		}
		delete(h.sessions, oldest)
	}
	h.sessions[id] = s
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return s
}

func (h *Handler) session(r *http.Request) (*session, string) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil, ""
	}
	h.mu.Lock()
	s := h.sessions[c.Value]
	h.mu.Unlock()
	if s == nil || s.token == "" {
		return s, c.Value
	}
	p := h.login(r.Context(), s.token)
	if p == nil {
		// Its token was revoked, or its JWT expired.
		h.mu.Lock()
		delete(h.sessions, c.Value)
		h.mu.Unlock()
		return nil, ""
	}
	cp := *s
	cp.principal = p
	return &cp, c.Value
}

// sameOrigin requires the Origin (or, without it, the Referer) of a form
// post to be this very server.
func (h *Handler) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		ref, err := url.Parse(r.Header.Get("Referer"))
		if err != nil || ref.Host == "" {
			// Referrer-Policy: no-referrer hides it from our own pages, and
			// every browser that posts a form sends Origin; a request with
			// neither is not from a browser page.
			return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
		}
		return strings.EqualFold(ref.Host, r.Host)
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

func (h *Handler) csrfOK(s *session, r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return s.csrf != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// call runs an operation through the registry and decodes its output.
func call[T any](ctx context.Context, h *Handler, name string, in any) (*T, *errs.Error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot encode input")
	}
	res := h.reg.Call(ctx, h.env, ops.Caller{Surface: "web", Principal: auth.From(ctx)}, name, raw)
	if res.Err != nil {
		return nil, res.Err
	}
	b, err := json.Marshal(res.Output)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot encode output")
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot decode output")
	}
	return &out, nil
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	Session *session
	Query   string
	Mode    string
	Error   string
	Notice  string
	Data    any

	can func(op string) bool
}

// Can reports whether the session's principal may call operation op
// (ops.Env.Permits): pages show only what it may use (no undo button
// without write, no activity page without its operation). A call made
// anyway is still refused by the pipeline.
func (p page) Can(op string) bool { return p.can != nil && p.can(op) }

// Admin reports whether the session's principal may decide confirmations
// (the Pending page).
func (p page) Admin() bool {
	return p.Session != nil && (p.Session.principal.IsOwner() || p.Session.principal.Has(auth.ScopeAdmin))
}

func (p page) CSRF() string {
	if p.Session == nil {
		return ""
	}
	return p.Session.csrf
}

func (h *Handler) render(w http.ResponseWriter, name string, p page) {
	if s := p.Session; s != nil {
		p.can = func(name string) bool {
			op, ok := h.reg.Get(name)
			return ok && h.env.Permits(s.principal, op) == nil
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.tmpl.ExecuteTemplate(w, name, p); err != nil {
		h.log.Error("web: template", "template", name, "error", err)
	}
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request, msg string) {
	w.WriteHeader(http.StatusUnauthorized)
	h.render(w, "login", page{Title: "Log in", Error: msg})
}
