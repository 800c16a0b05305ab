package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/loci-dev/loci/internal/errs"
)

// The test keys, made once (an RSA key takes a moment).
var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	rsaKey2  *rsa.PrivateKey
	ecKey    *ecdsa.PrivateKey
	edKey    ed25519.PrivateKey
	evilRSA  *rsa.PrivateKey
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		must := func(e error) {
			if e != nil && err == nil {
				err = e
			}
		}
		rsaKey, err = rsa.GenerateKey(rand.Reader, 2048)
		var e error
		rsaKey2, e = rsa.GenerateKey(rand.Reader, 2048)
		must(e)
		evilRSA, e = rsa.GenerateKey(rand.Reader, 2048)
		must(e)
		ecKey, e = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(e)
		_, edKey, e = ed25519.GenerateKey(rand.Reader)
		must(e)
		if err != nil {
			panic(err)
		}
	})
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// clock is an injectable time.
type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(t0.UnixNano()); return c }
func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

const testSecret = "0123456789abcdef0123456789abcdef-hs256-test-secret"

func writeFile(t testing.TB, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwkOf renders a public key as a JWK with kid.
func jwkOf(kid string, pub any) map[string]any {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, _ := k.Bytes()
		return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	case ed25519.PublicKey:
		return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(k)}
	}
	panic(fmt.Sprintf("jwkOf %T", pub))
}

func jwksJSON(keys ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return string(b)
}

// sign makes a token with method and key; hdr entries are added to the
// header (kid, crit, jwk, ...).
func sign(t testing.TB, m jwt.SigningMethod, key any, claims jwt.MapClaims, hdr map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	for k, v := range hdr {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claims are valid claims at t0 for alice with scope read.
func claims(over map[string]any) jwt.MapClaims {
	c := jwt.MapClaims{"sub": "alice", "scope": "read", "exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix()}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// unsigned makes an alg-none style token by hand.
func unsigned(alg string, c jwt.MapClaims) string {
	h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "JWT"})
	p, _ := json.Marshal(c)
	return b64(h) + "." + b64(p) + "."
}

func newVerifier(t testing.TB, c JWTConfig, clk *clock) *JWTVerifier {
	t.Helper()
	c.Now = clk.Now
	v, err := NewJWTVerifier(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rejected asserts tok is refused as unauthorized with reason, and that
// the error shows neither the token nor the secret.
func rejected(t *testing.T, v *JWTVerifier, tok, reason string) {
	t.Helper()
	p, err := v.Verify(context.Background(), tok)
	if err == nil {
		t.Fatalf("accepted (%v); want %s", p, reason)
	}
	e := errs.As(err)
	if e.Code != errs.CodeUnauthorized || e.Details["reason"] != reason {
		t.Fatalf("got %s %v %v; want unauthorized %s", e.Code, e.Message, e.Details, reason)
	}
	b, _ := json.Marshal(e)
	for _, leak := range []string{tok, strings.Split(tok, ".")[2], testSecret} {
		if leak != "" && strings.Contains(string(b), leak) {
			t.Fatalf("the error shows a secret or the token: %s", b)
		}
	}
}

func accepted(t *testing.T, v *JWTVerifier, tok string) *Principal {
	t.Helper()
	p, err := v.Verify(context.Background(), tok)
	if err != nil || p == nil {
		t.Fatalf("refused: %v", err)
	}
	return p
}

func TestJWTForgeriesRejected(t *testing.T) {
	testKeys(t)
	clk := newClock()
	secret := writeFile(t, "secret", testSecret+"\n")
	jwks := writeFile(t, "jwks.json", jwksJSON(jwkOf("rsa1", &rsaKey.PublicKey), jwkOf("ec1", &ecKey.PublicKey), jwkOf("ed1", edKey.Public())))
	hsOnly := newVerifier(t, JWTConfig{HS256SecretFile: secret}, clk)
	jwksOnly := newVerifier(t, JWTConfig{JWKSFile: jwks}, clk)
	both := newVerifier(t, JWTConfig{HS256SecretFile: secret, JWKSFile: jwks, Issuer: "https://idp.example", Audience: "http://127.0.0.1:8765/mcp"}, clk)
	good := func(over map[string]any) jwt.MapClaims {
		return claims(mergeMaps(map[string]any{"iss": "https://idp.example", "aud": "http://127.0.0.1:8765/mcp"}, over))
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	evilJWK := jwkOf("rsa1", &evilRSA.PublicKey)

	// Sanity: the honest tokens pass, so each refusal below is the attack's.
	accepted(t, hsOnly, sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil), nil))
	accepted(t, jwksOnly, sign(t, jwt.SigningMethodRS256, rsaKey, claims(nil), map[string]any{"kid": "rsa1"}))
	accepted(t, both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(nil), nil))
	accepted(t, both, sign(t, jwt.SigningMethodES256, ecKey, good(nil), map[string]any{"kid": "ec1"}))

	validRS := sign(t, jwt.SigningMethodRS256, rsaKey, good(nil), map[string]any{"kid": "rsa1"})
	parts := strings.Split(validRS, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[10] == 'A' {
			b[10] = 'B'
		} else {
			b[10] = 'A'
		}
		return string(b)
	}
	adminPayload, _ := json.Marshal(good(map[string]any{"scope": "read write destructive admin"}))

	cases := []struct {
		name   string
		v      *JWTVerifier
		tok    string
		reason string
	}{
		{"alg none", both, unsigned("none", good(nil)), "alg_not_accepted"},
		{"alg None", both, unsigned("None", good(nil)), "alg_not_accepted"},
		{"alg none with a signature part", both, strings.TrimSuffix(unsigned("none", good(nil)), ".") + "." + parts[2], "alg_not_accepted"},
		{"HS256 signed with the RSA public key, JWKS only", jwksOnly, sign(t, jwt.SigningMethodHS256, pubPEM, claims(nil), map[string]any{"kid": "rsa1"}), "alg_not_accepted"},
		{"HS256 signed with the RSA public key, secret set too", both, sign(t, jwt.SigningMethodHS256, pubPEM, good(nil), map[string]any{"kid": "rsa1"}), "signature_invalid"},
		{"HS256 signed with the public key's DER", both, sign(t, jwt.SigningMethodHS256, pubDER, good(nil), map[string]any{"kid": "rsa1"}), "signature_invalid"},
		{"RS256 when only HS256 is set up", hsOnly, sign(t, jwt.SigningMethodRS256, rsaKey, claims(nil), map[string]any{"kid": "rsa1"}), "alg_not_accepted"},
		{"ES256 naming the RSA key", jwksOnly, sign(t, jwt.SigningMethodES256, ecKey, claims(nil), map[string]any{"kid": "rsa1"}), "alg_mismatch"},
		{"RS384 (not accepted)", jwksOnly, sign(t, jwt.SigningMethodRS384, rsaKey, claims(nil), map[string]any{"kid": "rsa1"}), "alg_not_accepted"},
		{"HS512", hsOnly, sign(t, jwt.SigningMethodHS512, []byte(testSecret), claims(nil), nil), "alg_not_accepted"},
		{"wrong HS256 secret", hsOnly, sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 40)), claims(nil), nil), "signature_invalid"},
		{"expired", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"exp": t0.Add(-time.Minute).Unix()}), nil), "expired"},
		{"expired 1 s ago (no leeway on exp)", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"exp": t0.Add(-time.Second).Unix()}), nil), "expired"},
		{"exp missing", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"exp": nil}), nil), "exp_missing"},
		{"exp of the wrong type", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"exp": "tomorrow"}), nil), "claims_invalid"},
		{"nbf beyond the leeway", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"nbf": t0.Add(61 * time.Second).Unix()}), nil), "not_yet_valid"},
		{"nbf far in the future", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"nbf": t0.Add(24 * time.Hour).Unix()}), nil), "not_yet_valid"},
		{"iat far in the future", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"iat": t0.Add(time.Hour).Unix()}), nil), "issued_in_future"},
		{"wrong audience", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"aud": "https://other.example/mcp"}), nil), "audience_mismatch"},
		{"audience missing", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"aud": nil}), nil), "audience_mismatch"},
		{"wrong issuer", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"iss": "https://evil.example"}), nil), "issuer_mismatch"},
		{"issuer missing", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"iss": nil}), nil), "issuer_mismatch"},
		{"unknown kid", both, sign(t, jwt.SigningMethodRS256, rsaKey, good(nil), map[string]any{"kid": "nope"}), "kid_unknown"},
		{"kid missing", both, sign(t, jwt.SigningMethodRS256, rsaKey, good(nil), nil), "kid_missing"},
		{"signed by another RSA key under our kid", both, sign(t, jwt.SigningMethodRS256, evilRSA, good(nil), map[string]any{"kid": "rsa1"}), "signature_invalid"},
		{"attacker's key embedded in the header (jwk)", both, sign(t, jwt.SigningMethodRS256, evilRSA, good(nil), map[string]any{"kid": "rsa1", "jwk": evilJWK}), "signature_invalid"},
		{"tampered signature", both, parts[0] + "." + parts[1] + "." + flip(parts[2]), "signature_invalid"},
		{"tampered payload (scopes raised)", both, parts[0] + "." + b64(adminPayload) + "." + parts[2], "signature_invalid"},
		{"tampered header (kid swapped)", both, b64([]byte(`{"alg":"RS256","kid":"ec1","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2], "alg_mismatch"},
		{"critical header extension", both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(nil), map[string]any{"crit": []string{"exp2"}, "exp2": 1}), "crit_unsupported"},
		{"garbage header", both, "eyJub3QganNvbg." + parts[1] + "." + parts[2], "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { rejected(t, c.v, c.tok, c.reason) })
	}

	// nbf within the 60 s leeway is accepted.
	accepted(t, both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"nbf": t0.Add(59 * time.Second).Unix()}), nil))
	// An aud list holding the configured audience is accepted.
	accepted(t, both, sign(t, jwt.SigningMethodHS256, []byte(testSecret), good(map[string]any{"aud": []string{"x", "http://127.0.0.1:8765/mcp"}}), nil))
	// The same token expires with the clock.
	tok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(map[string]any{"exp": t0.Add(10 * time.Minute).Unix()}), nil)
	accepted(t, hsOnly, tok)
	clk.Add(10 * time.Minute)
	rejected(t, hsOnly, tok, "expired")
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// A token that is not JWT-shaped is not the verifier's: (nil, nil), and
// the Authenticator answers "invalid bearer token".
func TestJWTNotMine(t *testing.T) {
	clk := newClock()
	v := newVerifier(t, JWTConfig{HS256SecretFile: writeFile(t, "s", testSecret)}, clk)
	for _, tok := range []string{"", "abc", "a.b", "a.b.c.d", "a+b.c.d", "..x", "Zm9v.YmFy.c2ln=", "loci_abcdefghijklmnopqrstuvwxyz0123456789AB"} {
		p, err := v.Verify(context.Background(), tok)
		if p != nil || err != nil {
			t.Errorf("%q: %v %v", tok, p, err)
		}
	}
	a := NewAuthenticator("", nil, v)
	_, err := a.Authenticate(context.Background(), "not-a-jwt")
	if e := errs.As(err); e == nil || e.Code != errs.CodeUnauthorized || !strings.Contains(e.Message, "invalid bearer token") {
		t.Errorf("authenticator: %v", err)
	}
	p, err := a.Authenticate(context.Background(), sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil), nil))
	if err != nil || p.Via != ViaJWT || p.Name != "alice" || p.IsOwner() {
		t.Errorf("authenticator with a JWT: %+v %v", p, err)
	}
}

func TestJWTPrincipalFromClaims(t *testing.T) {
	testKeys(t)
	clk := newClock()
	jwks := writeFile(t, "jwks.json", jwksJSON(jwkOf("rsa1", &rsaKey.PublicKey), jwkOf("ec1", &ecKey.PublicKey), jwkOf("ed1", edKey.Public())))
	v := newVerifier(t, JWTConfig{HS256SecretFile: writeFile(t, "s", testSecret), JWKSFile: jwks}, clk)
	hs := func(over map[string]any) string {
		return sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(over), nil)
	}

	p := accepted(t, v, hs(map[string]any{"scope": "openid read write profile"}))
	if p.Name != "alice" || p.Subject != "alice" || !slices.Equal(p.Scopes, []Scope{ScopeRead, ScopeWrite}) || p.Vaults != nil || p.Confirm != PolicyConfirm || !p.MustConfirm() {
		t.Errorf("space-separated scopes: %+v", p)
	}
	if !p.Expires.Equal(t0.Add(time.Hour)) || p.Expired(t0) || !p.Expired(t0.Add(time.Hour)) {
		t.Errorf("expires: %v", p.Expires)
	}
	p = accepted(t, v, hs(map[string]any{"scope": []string{"admin", "bogus", "read", "read"}}))
	if !slices.Equal(p.Scopes, []Scope{ScopeRead, ScopeAdmin}) {
		t.Errorf("scope list: %v", p.Scopes)
	}
	p = accepted(t, v, hs(map[string]any{"scope": nil}))
	if len(p.Scopes) != 0 || p.Has(ScopeRead) {
		t.Errorf("no scope claim: %v", p.Scopes)
	}
	p = accepted(t, v, hs(map[string]any{"scope": "all"}))
	if len(p.Scopes) != 0 {
		t.Errorf(`"all" is not a scope in a JWT: %v`, p.Scopes)
	}
	p = accepted(t, v, hs(map[string]any{"loci_vaults": "My Notes"}))
	if !slices.Equal(p.Vaults, []string{"My Notes"}) || !p.MayUse("My Notes") || p.MayUse("Work") {
		t.Errorf("one vault: %v", p.Vaults)
	}
	p = accepted(t, v, hs(map[string]any{"loci_vaults": []string{"Work", "Home"}}))
	if !slices.Equal(p.Vaults, []string{"Work", "Home"}) {
		t.Errorf("vault list: %v", p.Vaults)
	}
	rejected(t, v, hs(map[string]any{"loci_vaults": []string{}}), "vaults_invalid")
	rejected(t, v, hs(map[string]any{"loci_vaults": ""}), "vaults_invalid")
	rejected(t, v, hs(map[string]any{"loci_vaults": 7}), "vaults_invalid")
	rejected(t, v, hs(map[string]any{"scope": map[string]any{"read": true}}), "scope_invalid")
	rejected(t, v, hs(map[string]any{"scope": []any{"read", 1}}), "scope_invalid")
	rejected(t, v, hs(map[string]any{"sub": nil}), "name_missing")
	rejected(t, v, hs(map[string]any{"sub": "  "}), "name_missing")
	rejected(t, v, hs(map[string]any{"sub": "owner"}), "name_invalid")
	rejected(t, v, hs(map[string]any{"sub": "a\nb"}), "name_invalid")

	for _, c := range []struct {
		m   jwt.SigningMethod
		key crypto.Signer
		kid string
	}{{jwt.SigningMethodRS256, rsaKey, "rsa1"}, {jwt.SigningMethodES256, ecKey, "ec1"}, {jwt.SigningMethodEdDSA, edKey, "ed1"}} {
		p := accepted(t, v, sign(t, c.m, c.key, claims(map[string]any{"sub": "bot-" + c.kid, "scope": "read ai"}), map[string]any{"kid": c.kid}))
		if p.Name != "bot-"+c.kid || !slices.Equal(p.Scopes, []Scope{ScopeRead, ScopeAI}) {
			t.Errorf("%s: %+v", c.m.Alg(), p)
		}
	}

	// Other claim names and the allow policy.
	v2 := newVerifier(t, JWTConfig{HS256SecretFile: writeFile(t, "s", testSecret), NameClaim: "email", ScopesClaim: "scp",
		VaultsClaim: "vaults", Confirm: PolicyAllow}, clk)
	p = accepted(t, v2, hs(map[string]any{"email": "bob@example.com", "scp": []string{"write", "destructive"}, "vaults": "Work", "scope": "admin"}))
	if p.Name != "bob@example.com" || p.Subject != "alice" || !slices.Equal(p.Scopes, []Scope{ScopeWrite, ScopeDestructive}) ||
		!slices.Equal(p.Vaults, []string{"Work"}) || p.MustConfirm() {
		t.Errorf("custom claims: %+v", p)
	}
	rejected(t, v2, hs(nil), "name_missing")
}

func TestJWTConfigRefused(t *testing.T) {
	testKeys(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  JWTConfig
		key  string
		msg  string
	}{
		{"nothing", JWTConfig{}, "hs256_secret_file", "needs"},
		{"missing secret file", JWTConfig{HS256SecretFile: filepath.Join(t.TempDir(), "none")}, "hs256_secret_file", "cannot read"},
		{"empty secret", JWTConfig{HS256SecretFile: writeFile(t, "s", "")}, "hs256_secret_file", "0 bytes"},
		{"short secret", JWTConfig{HS256SecretFile: writeFile(t, "s", strings.Repeat("k", 31)+"\n")}, "hs256_secret_file", "31 bytes"},
		{"file and URL", JWTConfig{JWKSFile: "a", JWKSURL: "https://idp.example/jwks"}, "jwks_url", "not both"},
		{"plain http elsewhere", JWTConfig{JWKSURL: "http://idp.example/jwks"}, "jwks_url", "https"},
		{"relative URL", JWTConfig{JWKSURL: "/jwks"}, "jwks_url", "absolute"},
		{"not a JWKS", JWTConfig{JWKSFile: writeFile(t, "j", "[1,2]")}, "jwks_file", "not a JWK set"},
		{"only a symmetric key", JWTConfig{JWKSFile: writeFile(t, "j", `{"keys":[{"kty":"oct","kid":"k","k":"c2VjcmV0"}]}`)}, "jwks_file", "no usable"},
		{"RSA key too small", JWTConfig{JWKSFile: writeFile(t, "j", jwksJSON(jwkOf("k", &small.PublicKey)))}, "jwks_file", "no usable"},
		{"keys without kid", JWTConfig{JWKSFile: writeFile(t, "j", strings.ReplaceAll(jwksJSON(jwkOf("", &rsaKey.PublicKey)), `"kid":"",`, ""))}, "jwks_file", "no usable"},
		{"bad confirm", JWTConfig{HS256SecretFile: writeFile(t, "s", testSecret), Confirm: "never"}, "confirm", "confirm must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewJWTVerifier(context.Background(), c.cfg)
			e := errs.As(err)
			if e == nil || e.Code != errs.CodeConfigInvalid || e.Details["key"] != c.key || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v; want config_invalid on %s with %q", err, c.key, c.msg)
			}
			if strings.Contains(e.Message, testSecret) {
				t.Fatal("the message shows the secret")
			}
		})
	}
	// 32 bytes and a newline are fine (the newline is dropped).
	if _, err := NewJWTVerifier(context.Background(), JWTConfig{HS256SecretFile: writeFile(t, "s", strings.Repeat("k", 32)+"\r\n")}); err != nil {
		t.Error(err)
	}
}

// jwksServer serves a key set that the test changes, counting fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    string
	status  int
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, body string) *jwksServer {
	s := &jwksServer{body: body, status: 200}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		body, status := s.body, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(body string, status int) {
	s.mu.Lock()
	s.body, s.status = body, status
	s.mu.Unlock()
}

func TestJWKSURLCachedAndRefreshed(t *testing.T) {
	testKeys(t)
	clk := newClock()
	srv := newJWKSServer(t, jwksJSON(jwkOf("k1", &rsaKey.PublicKey)))
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s", srv.URL)
	}
	v := newVerifier(t, JWTConfig{JWKSURL: srv.URL + "/jwks"}, clk)
	fetches := func(want int64, when string) {
		t.Helper()
		if got := srv.fetches.Load(); got != want {
			t.Fatalf("%s: %d fetches, want %d", when, got, want)
		}
		if got := v.keys.Attempts.Load(); got != want {
			t.Fatalf("%s: %d attempts, want %d", when, got, want)
		}
	}
	fetches(1, "at start")
	k1 := func() string {
		return sign(t, jwt.SigningMethodRS256, rsaKey, claims(map[string]any{"exp": clk.Now().Add(time.Hour).Unix(), "iat": clk.Now().Unix()}), map[string]any{"kid": "k1"})
	}
	k2 := func() string {
		return sign(t, jwt.SigningMethodRS256, rsaKey2, claims(map[string]any{"exp": clk.Now().Add(time.Hour).Unix(), "iat": clk.Now().Unix()}), map[string]any{"kid": "k2"})
	}
	for range 5 {
		accepted(t, v, k1())
	}
	fetches(1, "cached")

	// An unknown kid reads the set again, once per interval however many
	// tokens name it (and not within the interval of the last read).
	rejected(t, v, k2(), "kid_unknown")
	fetches(1, "unknown kid right after a read")
	clk.Add(DefaultJWKSMinInterval)
	rejected(t, v, k2(), "kid_unknown")
	fetches(2, "unknown kid")
	for range 20 {
		rejected(t, v, k2(), "kid_unknown")
	}
	fetches(2, "unknown kid again within the interval")

	// The issuer rotates in k2; after the interval the unknown kid fetches
	// and is found.
	srv.set(jwksJSON(jwkOf("k1", &rsaKey.PublicKey), jwkOf("k2", &rsaKey2.PublicKey)), 200)
	clk.Add(DefaultJWKSMinInterval - time.Second)
	rejected(t, v, k2(), "kid_unknown")
	fetches(2, "still within the interval")
	clk.Add(time.Second)
	accepted(t, v, k2())
	fetches(3, "rotation picked up")
	accepted(t, v, k1())
	fetches(3, "cached again")

	// Periodic refresh: the issuer drops k1; it stays until the refresh.
	srv.set(jwksJSON(jwkOf("k2", &rsaKey2.PublicKey)), 200)
	clk.Add(DefaultJWKSRefresh - time.Minute)
	accepted(t, v, k1())
	fetches(3, "before the refresh")
	clk.Add(time.Minute)
	rejected(t, v, k1(), "kid_unknown")
	fetches(4, "after the refresh")

	// A failing issuer keeps the keys loci has.
	srv.set("oops", 500)
	clk.Add(DefaultJWKSRefresh)
	accepted(t, v, k2())
	fetches(5, "failed refresh")
	if v.keys.lastErr == nil || !strings.Contains(v.keys.lastErr.Error(), "HTTP 500") {
		t.Errorf("last error: %v", v.keys.lastErr)
	}
	// ... and does not get hammered: the failed read counts for the
	// interval.
	for range 10 {
		accepted(t, v, k2())
		rejected(t, v, k1(), "kid_unknown")
	}
	fetches(5, "after a failed refresh")
}

func TestJWKSURLAtStart(t *testing.T) {
	testKeys(t)
	down := newJWKSServer(t, "nope")
	down.set("nope", 404)
	_, err := NewJWTVerifier(context.Background(), JWTConfig{JWKSURL: down.URL})
	if e := errs.As(err); e == nil || e.Code != errs.CodeConfigInvalid || e.Details["key"] != "jwks_url" || !strings.Contains(e.Message, "HTTP 404") {
		t.Errorf("unreachable keys: %v", err)
	}
	// A URL that does not answer in time: the fetch is cut at the timeout.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	_, err = NewJWTVerifier(context.Background(), JWTConfig{JWKSURL: hang.URL, FetchTimeout: 50 * time.Millisecond})
	if e := errs.As(err); e == nil || e.Code != errs.CodeConfigInvalid || !strings.Contains(e.Message, "deadline") {
		t.Errorf("hanging keys: %v", err)
	}
	// A redirect to plain http elsewhere is not followed.
	redir := httptest.NewServer(http.RedirectHandler("http://idp.example/jwks", http.StatusFound))
	defer redir.Close()
	_, err = NewJWTVerifier(context.Background(), JWTConfig{JWKSURL: redir.URL})
	if e := errs.As(err); e == nil || e.Code != errs.CodeConfigInvalid || !strings.Contains(e.Message, "redirect refused") {
		t.Errorf("redirect: %v", err)
	}
}
