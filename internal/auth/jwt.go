package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"

	"github.com/loci-dev/loci/internal/errs"
)

// JWT defaults and bounds.
const (
	// JWTLeeway is the clock skew allowed for nbf and iat (a token that
	// becomes valid up to this far in the future is accepted). exp has no
	// leeway: an expired token is refused.
	JWTLeeway = 60 * time.Second
	// MinHS256SecretBytes is the shortest HS256 secret accepted (RFC 7518
	// §3.2: a key at least as long as the hash).
	MinHS256SecretBytes = 32
	// DefaultJWKSRefresh is how often the keys are read again.
	DefaultJWKSRefresh = 15 * time.Minute
	// DefaultJWKSMinInterval bounds reads of the keys: at most one per
	// interval, also when tokens name kids the set does not have.
	DefaultJWKSMinInterval = 30 * time.Second
	// DefaultJWKSFetchTimeout bounds one fetch of a JWKS URL.
	DefaultJWKSFetchTimeout = 10 * time.Second
	// maxJWKSBytes bounds a JWKS document.
	maxJWKSBytes = 1 << 20
	// maxJWTBytes bounds a token (headers are bounded anyway; this keeps
	// parsing cheap).
	maxJWTBytes = 16 << 10
)

// The claims a JWT's principal is read from when JWTConfig names none.
const (
	DefaultNameClaim   = "sub"
	DefaultScopesClaim = "scope"
	DefaultVaultsClaim = "loci_vaults"
)

// JWTConfig says which JSON Web Tokens are accepted and how their claims
// become a principal. The CLI fills it from the server.jwt section of the
// user's config (docs/security.md).
type JWTConfig struct {
	// HS256SecretFile holds the shared HMAC secret (at least 32 bytes; one
	// trailing newline is dropped). It is read once, at start.
	HS256SecretFile string
	// JWKSFile or JWKSURL hold the public keys for RS256, ES256 and EdDSA
	// tokens, which must name their key with kid. Both are read at start
	// and again every JWKSRefresh, and when a token names an unknown kid
	// (at most once per JWKSMinInterval). A URL must be https, or http on a
	// loopback host.
	JWKSFile string
	JWKSURL  string
	// Issuer and Audience, when set, must match the token's iss and aud.
	Issuer   string
	Audience string
	// NameClaim (default "sub") names the principal; ScopesClaim (default
	// "scope") holds its scopes, space-separated or a list; VaultsClaim
	// (default "loci_vaults") the vaults it may use, a name or a list
	// (absent: every vault).
	NameClaim   string
	ScopesClaim string
	VaultsClaim string
	// Confirm is the destructive-call policy of JWT principals
	// (PolicyConfirm, the default, or PolicyAllow).
	Confirm string

	JWKSRefresh     time.Duration
	JWKSMinInterval time.Duration
	FetchTimeout    time.Duration
	// HTTPClient fetches JWKSURL (default: a client with FetchTimeout that
	// follows redirects only to https or loopback http).
	HTTPClient *http.Client
	// Now is the clock (tests inject one; default time.Now).
	Now func() time.Time
}

// JWTVerifier accepts JWTs as principals: a TokenVerifier for the
// Authenticator.
type JWTVerifier struct {
	cfg    JWTConfig
	secret []byte  // HS256 (nil: HS256 tokens are refused)
	keys   *keySet // RS256, ES256, EdDSA (nil: they are refused)
	parser *jwt.Parser
}

// configErr is a bad JWT setting: config_invalid with the key (the
// setting's name under server.jwt) in details; the CLI names the file
// and line.
func configErr(key, format string, args ...any) *errs.Error {
	return errs.New(errs.CodeConfigInvalid, format, args...).With("key", key)
}

// NewJWTVerifier checks c, reads the HS256 secret and the keys (a JWKS
// URL is fetched now) and returns the verifier. Every problem is
// config_invalid naming the setting (details "key").
func NewJWTVerifier(ctx context.Context, c JWTConfig) (*JWTVerifier, error) {
	if c.HS256SecretFile == "" && c.JWKSFile == "" && c.JWKSURL == "" {
		return nil, configErr("hs256_secret_file", "JWT needs hs256_secret_file, jwks_file or jwks_url")
	}
	if c.JWKSFile != "" && c.JWKSURL != "" {
		return nil, configErr("jwks_url", "set jwks_file or jwks_url, not both")
	}
	def := func(s *string, v string) {
		if *s = strings.TrimSpace(*s); *s == "" {
			*s = v
		}
	}
	def(&c.NameClaim, DefaultNameClaim)
	def(&c.ScopesClaim, DefaultScopesClaim)
	def(&c.VaultsClaim, DefaultVaultsClaim)
	def(&c.Confirm, PolicyConfirm)
	if c.Confirm != PolicyConfirm && c.Confirm != PolicyAllow {
		return nil, configErr("confirm", "confirm must be %q or %q, not %q", PolicyConfirm, PolicyAllow, c.Confirm)
	}
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{&c.JWKSRefresh, DefaultJWKSRefresh}, {&c.JWKSMinInterval, DefaultJWKSMinInterval}, {&c.FetchTimeout, DefaultJWKSFetchTimeout}} {
		if *d.p <= 0 {
			*d.p = d.v
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	v := &JWTVerifier{cfg: c}
	var methods []string
	if c.HS256SecretFile != "" {
		b, err := os.ReadFile(c.HS256SecretFile)
		if err != nil {
			return nil, configErr("hs256_secret_file", "cannot read the HS256 secret: %v", err)
		}
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if len(b) < MinHS256SecretBytes {
			return nil, configErr("hs256_secret_file", "the HS256 secret in %s has %d bytes; at least %d are required", c.HS256SecretFile, len(b), MinHS256SecretBytes).
				With("min_bytes", MinHS256SecretBytes)
		}
		v.secret = b
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if c.JWKSFile != "" || c.JWKSURL != "" {
		ks, err := newKeySet(ctx, c)
		if err != nil {
			return nil, err
		}
		v.keys = ks
		methods = append(methods, asymmetricAlgs...)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(JWTLeeway), jwt.WithTimeFunc(c.Now), jwt.WithStrictDecoding(),
	}
	if c.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(c.Issuer))
	}
	if c.Audience != "" {
		opts = append(opts, jwt.WithAudience(c.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Algorithms lists the algorithms the verifier accepts.
func (v *JWTVerifier) Algorithms() []string {
	var out []string
	if v.secret != nil {
		out = append(out, jwt.SigningMethodHS256.Alg())
	}
	if v.keys != nil {
		out = append(out, asymmetricAlgs...)
	}
	return out
}

// rejection is why a JWT was refused: a stable reason word for details
// and a short message. Neither ever holds the token or a key.
type rejection struct{ reason, msg string }

func (r *rejection) Error() string { return r.msg }

func reject(reason, msg string) *rejection { return &rejection{reason, msg} }

func (r *rejection) err() *errs.Error {
	return errs.New(errs.CodeUnauthorized, "invalid JWT: %s", r.msg).With("reason", r.reason)
}

// Verify returns the principal of a valid JWT, (nil, nil) for a token
// that is not JWT-shaped (three base64url parts), or unauthorized with a
// reason in details.
func (v *JWTVerifier) Verify(ctx context.Context, tok string) (*Principal, error) {
	if !jwtShaped(tok) {
		return nil, nil
	}
	if len(tok) > maxJWTBytes {
		return nil, reject("malformed", "the token is too long").err()
	}
	var why *rejection
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		k, r := v.key(ctx, t)
		if r != nil {
			why = r
			return nil, r
		}
		return k, nil
	})
	if err != nil {
		if why != nil {
			return nil, why.err()
		}
		return nil, classify(err, claims).err()
	}
	// exp has no leeway (the parser's applies to nbf and iat).
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, reject("exp_missing", "the token has no exp (expiry)").err()
	}
	if !v.cfg.Now().Before(exp.Time) {
		return nil, reject("expired", "the token has expired").err()
	}
	p, r := v.principal(claims)
	if r != nil {
		return nil, r.err()
	}
	p.Expires = exp.Time
	return p, nil
}

// key picks the verification key for t by its alg: HS256 only ever
// against the shared secret, the asymmetric algorithms only against the
// JWKS, by kid, with a key of the matching type. So a token signed with
// the public key's bytes as an HMAC secret, or one whose alg does not
// fit its key, cannot verify.
func (v *JWTVerifier) key(ctx context.Context, t *jwt.Token) (any, *rejection) {
	if _, ok := t.Header["crit"]; ok {
		return nil, reject("crit_unsupported", "the token has critical header extensions (crit), which loci does not support")
	}
	alg := t.Method.Alg()
	if alg == jwt.SigningMethodHS256.Alg() {
		if v.secret == nil {
			return nil, reject("alg_not_accepted", "HS256 tokens are not accepted here")
		}
		return v.secret, nil
	}
	if v.keys == nil || !slices.Contains(asymmetricAlgs, alg) {
		return nil, reject("alg_not_accepted", "tokens signed with "+alg+" are not accepted here")
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, reject("kid_missing", "the token names no key (kid)")
	}
	return v.keys.lookup(ctx, kid, alg)
}

// classify turns a parser error into a rejection. A claim the
// validator requires but the token lacks is told apart with the claims,
// which the parser fills before it verifies anything.
func classify(err error, claims jwt.MapClaims) *rejection {
	_, hasExp := claims["exp"]
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return reject("malformed", "the token is malformed")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && strings.Contains(err.Error(), "signing method"):
		return reject("alg_not_accepted", "the token's algorithm is not accepted here")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return reject("signature_invalid", "the signature does not verify")
	case !errors.Is(err, jwt.ErrTokenInvalidClaims):
		// ErrTokenUnverifiable outside the claims: an unknown alg.
		return reject("alg_not_accepted", "the token's algorithm is not supported")
	case !hasExp:
		return reject("exp_missing", "the token has no exp (expiry)")
	case errors.Is(err, jwt.ErrTokenExpired):
		return reject("expired", "the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return reject("not_yet_valid", "the token is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return reject("issued_in_future", "the token is issued in the future (iat)")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer) || claims["iss"] == nil && errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return reject("issuer_mismatch", "the token's issuer (iss) is not the configured one")
	case errors.Is(err, jwt.ErrTokenInvalidAudience) || claims["aud"] == nil && errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return reject("audience_mismatch", "the token's audience (aud) does not include the configured one")
	}
	// ErrTokenUnverifiable inside the claims: exp, nbf, iat, iss or aud of
	// the wrong type.
	return reject("claims_invalid", "a registered claim (exp, nbf, iat, iss, aud) has the wrong type")
}

// principal builds the principal from verified claims.
func (v *JWTVerifier) principal(claims jwt.MapClaims) (*Principal, *rejection) {
	c := v.cfg
	name, _ := claims[c.NameClaim].(string)
	switch {
	case strings.TrimSpace(name) == "":
		return nil, reject("name_missing", "the token has no "+c.NameClaim+" claim to name the principal")
	case len(name) > 256 || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return nil, reject("name_invalid", "the "+c.NameClaim+" claim is not a usable name (at most 256 printable characters)")
	case name == OwnerName:
		return nil, reject("name_invalid", "the name "+OwnerName+" is reserved for the vault's own token")
	}
	words, ok := stringsClaim(claims, c.ScopesClaim, true)
	if !ok {
		return nil, reject("scope_invalid", "the "+c.ScopesClaim+" claim must be a string or a list of strings")
	}
	var scopes []Scope
	for _, s := range AllScopes {
		if slices.Contains(words, string(s)) {
			scopes = append(scopes, s)
		}
	}
	vaults, ok := stringsClaim(claims, c.VaultsClaim, false)
	if !ok {
		return nil, reject("vaults_invalid", "the "+c.VaultsClaim+" claim must be a vault name or a list of them")
	}
	if _, present := claims[c.VaultsClaim]; present && len(vaults) == 0 {
		return nil, reject("vaults_invalid", "the "+c.VaultsClaim+" claim names no vault")
	}
	sub, _ := claims["sub"].(string)
	return &Principal{Name: name, Scopes: scopes, Vaults: vaults, Confirm: c.Confirm, Subject: sub}, nil
}

// stringsClaim reads a claim that is a string or a list of strings
// (split: a string is space-separated words, else one value). Absent is
// (nil, true); another type is (nil, false).
func stringsClaim(claims jwt.MapClaims, name string, split bool) ([]string, bool) {
	raw, present := claims[name]
	if !present || raw == nil {
		return nil, true
	}
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	switch x := raw.(type) {
	case string:
		if split {
			for _, w := range strings.Fields(x) {
				add(w)
			}
		} else {
			add(x)
		}
	case []any:
		for _, it := range x {
			s, ok := it.(string)
			if !ok {
				return nil, false
			}
			add(s)
		}
	default:
		return nil, false
	}
	return out, true
}

// jwtShaped reports whether tok looks like a JWS in compact form: three
// base64url parts separated by dots (the last may be empty, as in an
// unsigned token, which is then refused as a JWT rather than ignored).
func jwtShaped(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
