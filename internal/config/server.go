package config

// Server is the server section: how `loci serve` admits and limits
// several principals (docs/security.md). Only the user's own file (and
// flags) may set it; a vault's file cannot.
type Server struct {
	// JWT lets JSON Web Tokens in as principals, besides the vault token
	// and the tokens of `loci token create`.
	JWT JWT `yaml:"jwt"`
	// Limits are the rate limits and the concurrency cap per principal.
	Limits Limits `yaml:"limits"`
	// Toolsets, when set, are the only toolsets the server offers and
	// runs (read, write, logseq, ai, admin).
	Toolsets []string `yaml:"toolsets" check:"enum=read|write|logseq|ai|admin"`
	// Facade makes MCP list three tools (find_capability,
	// describe_capability, call_capability) that reach every operation
	// the principal may call, for clients with a small tool limit.
	Facade bool `yaml:"facade"`
	// CallsLogMaxBytes rotates <index dir>/calls.log past this size
	// (default 16 MiB; one older file is kept).
	CallsLogMaxBytes int64 `yaml:"calls_log_max_bytes" check:"nonneg"`
	// MetricsTokenEnv names a variable holding a token that may read
	// /metrics only (besides principals with the admin scope).
	MetricsTokenEnv string `yaml:"metrics_token_env"`
}

// JWT configures JSON Web Token authentication. One of HS256SecretFile,
// JWKSFile or JWKSURL turns it on.
type JWT struct {
	// HS256SecretFile holds the shared HMAC secret (HS256 only).
	HS256SecretFile string `yaml:"hs256_secret_file"`
	// JWKSFile or JWKSURL hold the public keys (RS256, ES256, EdDSA); a
	// token must name its key with kid. A URL is cached and refreshed.
	JWKSFile string `yaml:"jwks_file"`
	JWKSURL  string `yaml:"jwks_url" check:"url"`
	// Issuer and Audience, when set, must match iss and aud.
	Issuer   string `yaml:"issuer"`
	Audience string `yaml:"audience"`
	// NameClaim names the principal (default sub); ScopesClaim holds its
	// scopes, space-separated or a list (default scope); VaultsClaim its
	// vaults (default loci_vaults; absent: every vault).
	NameClaim   string `yaml:"name_claim"`
	ScopesClaim string `yaml:"scopes_claim"`
	VaultsClaim string `yaml:"vaults_claim"`
	// Confirm is the destructive-call policy of JWT principals: confirm
	// (default) or allow.
	Confirm string `yaml:"confirm" check:"enum=confirm|allow"`
	// AuthorizationServers are advertised in the OAuth protected-resource
	// metadata (RFC 9728) at /.well-known/oauth-protected-resource.
	AuthorizationServers []string `yaml:"authorization_servers" check:"url"`
	// Resource is the server's public base URL as clients reach it
	// (https://notes.example.com), named in that metadata; default: the
	// scheme and Host of each request.
	Resource string `yaml:"resource" check:"url"`
}

// Set reports whether any JWT setting is given (an issuer without a key
// source is a mistake, not "off").
func (j JWT) Set() bool {
	return j.Enabled() || j.Issuer != "" || j.Audience != "" || j.NameClaim != "" || j.ScopesClaim != "" ||
		j.VaultsClaim != "" || j.Confirm != "" || len(j.AuthorizationServers) > 0 || j.Resource != ""
}

// Enabled reports whether JWTs are accepted.
func (j JWT) Enabled() bool {
	return j.HS256SecretFile != "" || j.JWKSFile != "" || j.JWKSURL != ""
}

// Limits are per-principal rate limits by class of operation, and a cap
// on each principal's calls in flight. Zero values mean no limit.
type Limits struct {
	Read  Rate `yaml:"read"`
	Write Rate `yaml:"write"`
	AI    Rate `yaml:"ai"`
	// Concurrency caps one principal's calls in flight (0: no cap).
	Concurrency int `yaml:"concurrency" check:"nonneg"`
}

// Rate is a token bucket: PerMinute calls refill it, Burst is its size
// (default: PerMinute/6, at least 1).
type Rate struct {
	PerMinute float64 `yaml:"per_minute" check:"nonneg"`
	Burst     int     `yaml:"burst" check:"nonneg"`
}
