package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/server"
)

// serveJWT builds the JWT verifier and the protected-resource metadata
// from server.jwt of the user's config (read through vaultDir's layers;
// a vault's own file cannot set it). Both are nil when JWT is off. A bad
// setting is config_invalid naming the key, its file and line.
func (g *globals) serveJWT(ctx context.Context, vaultDir string) (auth.TokenVerifier, *server.ProtectedResource, error) {
	vc, err := g.loadConfig(vaultDir)
	if err != nil {
		return nil, nil, err
	}
	cfg := vc.cfg
	j := cfg.Server.JWT
	if !j.Set() {
		return nil, nil, nil
	}
	if !j.Enabled() {
		return nil, nil, jwtProblem(cfg, "hs256_secret_file", "server.jwt is set but names no keys: set hs256_secret_file, jwks_file or jwks_url")
	}
	for i, a := range j.AuthorizationServers {
		if u, err := url.Parse(a); err != nil || !secureURL(u) {
			return nil, nil, jwtProblem(cfg, "authorization_servers", "authorization_servers[%d] %q must be an https URL (plain http only on a loopback host)", i, a)
		}
	}
	if j.Resource != "" {
		if u, err := url.Parse(j.Resource); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, nil, jwtProblem(cfg, "resource", "resource %q must be the server's base URL, like https://notes.example.com", j.Resource)
		}
	}
	v, err := auth.NewJWTVerifier(ctx, auth.JWTConfig{
		HS256SecretFile: configPath(cfg, "server.jwt.hs256_secret_file", j.HS256SecretFile),
		JWKSFile:        configPath(cfg, "server.jwt.jwks_file", j.JWKSFile),
		JWKSURL:         j.JWKSURL,
		Issuer:          j.Issuer, Audience: j.Audience,
		NameClaim: j.NameClaim, ScopesClaim: j.ScopesClaim, VaultsClaim: j.VaultsClaim,
		Confirm: j.Confirm,
	})
	if err != nil {
		e := errs.As(err)
		if key, _ := e.Details["key"].(string); e.Code == errs.CodeConfigInvalid && key != "" {
			return nil, nil, jwtProblem(cfg, key, "%s", e.Message)
		}
		return nil, nil, err
	}
	return v, &server.ProtectedResource{Resource: j.Resource, AuthorizationServers: j.AuthorizationServers}, nil
}

// jwtProblem is config_invalid for server.jwt.<key>, naming where it was
// set, in the shape config's own errors have.
func jwtProblem(cfg *config.Config, key, format string, args ...any) error {
	full := "server.jwt." + key
	src := cfg.SourceOf(full)
	if src.Layer == config.LayerDefault {
		// Not set itself (a missing key source): name the section's file.
		for k, s := range cfg.Sources {
			if strings.HasPrefix(k, "server.jwt.") {
				src = config.Source{Layer: s.Layer, Path: s.Path, Name: s.Name}
				break
			}
		}
	}
	where := src.Path
	if where == "" {
		where = src.String()
	}
	p := config.Problem{Key: full, Line: src.Line, Message: fmt.Sprintf(format, args...), Config: where}
	return errs.New(errs.CodeConfigInvalid, "invalid config %s: %s", where, p.String()).
		With("config", where).With("problems", []config.Problem{p})
}

// configPath resolves a file named in the user's config: ~/ is the home
// folder, and a relative path is relative to the file that set it.
func configPath(cfg *config.Config, key, p string) string {
	if p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		if src := cfg.SourceOf(key); src.Path != "" {
			return filepath.Join(filepath.Dir(src.Path), p)
		}
	}
	return p
}

// secureURL reports whether u is https, or http on a loopback host.
func secureURL(u *url.URL) bool {
	if u.Host == "" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && server.IsLoopbackHost(u.Hostname())
}
