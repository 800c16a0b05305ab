package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// metrics guards /metrics (Prometheus text format): readable with the
// metrics-only token (Options.MetricsToken), or by a principal holding the
// admin scope. No token is 401, a principal without admin 403.
func (s *Server) metrics() http.Handler {
	if s.opt.Metrics == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api.WriteError(w, errs.New(errs.CodeRouteNotFound, "no such route: %s (metrics are off)", r.URL.Path))
		})
	}
	admin := s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.From(r.Context())
		if !p.Has(auth.ScopeAdmin) {
			api.WriteError(w, errs.New(errs.CodeForbidden, "/metrics needs the admin scope, which principal %q does not have (or use the metrics token)", p.Label()).
				With("principal", p.Label()).With("missing_scopes", []string{string(auth.ScopeAdmin)}))
			return
		}
		s.opt.Metrics.ServeHTTP(w, r)
	}))
	want := sha256.Sum256([]byte(s.opt.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			api.WriteError(w, errs.New(errs.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
			return
		}
		if s.opt.MetricsToken != "" {
			if given, ok := bearer(r.Header.Get("Authorization")); ok {
				got := sha256.Sum256([]byte(given))
				if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
					s.opt.Metrics.ServeHTTP(w, r)
					return
				}
			}
		}
		admin.ServeHTTP(w, r)
	})
}
