package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// asymmetricAlgs are the algorithms verified against a JWKS.
var asymmetricAlgs = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg()}

// minRSABits is the smallest RSA key used.
const minRSABits = 2048

// jwk is one usable public key of a JWKS.
type jwk struct {
	alg string // the one algorithm it verifies
	key any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
}

// keySet is a JWKS from a file or a URL, read at start and again every
// refresh interval, or sooner when a token names a kid it lacks; never
// more than once per minInterval, whatever asks. A failed read keeps the
// keys it had.
type keySet struct {
	what  string // the file or the URL, for messages
	read  func(ctx context.Context) ([]byte, error)
	now   func() time.Time
	every time.Duration
	min   time.Duration

	mu   sync.RWMutex
	keys map[string][]jwk // by kid

	fetchMu  sync.Mutex // one read at a time; guards the times below
	attempt  time.Time  // the last read, successful or not
	loaded   time.Time  // the last successful read
	lastErr  error
	Attempts atomic.Int64 // reads so far (tests count them)
}

func newKeySet(ctx context.Context, c JWTConfig) (*keySet, error) {
	ks := &keySet{now: c.Now, every: c.JWKSRefresh, min: c.JWKSMinInterval}
	key := "jwks_file"
	if c.JWKSFile != "" {
		ks.what = c.JWKSFile
		ks.read = func(context.Context) ([]byte, error) { return readLimited(c.JWKSFile) }
	} else {
		key = "jwks_url"
		u, err := url.Parse(c.JWKSURL)
		if err != nil || u.Host == "" {
			return nil, configErr(key, "jwks_url %q is not an absolute URL", c.JWKSURL)
		}
		if !httpsOrLoopback(u) {
			return nil, configErr(key, "jwks_url must use https (plain http only to a loopback host): anyone on the path could otherwise swap the keys")
		}
		client := c.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: c.FetchTimeout, CheckRedirect: func(r *http.Request, via []*http.Request) error {
				if len(via) >= 5 || !httpsOrLoopback(r.URL) {
					return errors.New("redirect refused")
				}
				return nil
			}}
		}
		ks.what = u.Redacted()
		ks.read = func(ctx context.Context) ([]byte, error) { return fetch(ctx, client, c.JWKSURL, c.FetchTimeout) }
	}
	ks.refresh(ctx, true)
	if ks.lastErr != nil {
		return nil, configErr(key, "cannot load the keys from %s: %v", ks.what, ks.lastErr)
	}
	return ks, nil
}

// lookup returns the key kid names for alg, reading the set again when it
// is due or (bounded) when kid is unknown.
func (ks *keySet) lookup(ctx context.Context, kid, alg string) (any, *rejection) {
	ks.refresh(ctx, false)
	k, r := ks.find(kid, alg)
	if r != nil && r.reason == "kid_unknown" {
		ks.refresh(ctx, true)
		k, r = ks.find(kid, alg)
	}
	return k, r
}

func (ks *keySet) find(kid, alg string) (any, *rejection) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	cands, ok := ks.keys[kid]
	if !ok {
		return nil, reject("kid_unknown", "the token's key (kid) is not among the configured keys")
	}
	for _, k := range cands {
		if k.alg == alg {
			return k.key, nil
		}
	}
	return nil, reject("alg_mismatch", "the token's algorithm does not fit its key (kid)")
}

// refresh reads the set when it is due (every), or when force is set (an
// unknown kid, the first read), but never twice within min. A periodic
// refresh that finds a read under way goes on with the keys it has.
func (ks *keySet) refresh(ctx context.Context, force bool) {
	if force {
		ks.fetchMu.Lock()
	} else if !ks.fetchMu.TryLock() {
		return
	}
	defer ks.fetchMu.Unlock()
	now := ks.now()
	first := ks.attempt.IsZero()
	if !first && now.Sub(ks.attempt) < ks.min {
		return
	}
	if !first && !force && now.Sub(ks.loaded) < ks.every {
		return
	}
	ks.attempt = now
	ks.Attempts.Add(1)
	data, err := ks.read(ctx)
	var keys map[string][]jwk
	if err == nil {
		keys, err = parseJWKS(data)
	}
	ks.lastErr = err
	if err != nil {
		return
	}
	ks.loaded = now
	ks.mu.Lock()
	ks.keys = keys
	ks.mu.Unlock()
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return limitRead(f)
}

func limitRead(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("the key set is larger than %d bytes", maxJWKSBytes)
	}
	return b, nil
}

func fetch(ctx context.Context, client *http.Client, u string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the message already
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return limitRead(resp.Body)
}

// httpsOrLoopback reports whether keys may be fetched from u: https, or
// http to a loopback host.
func httpsOrLoopback(u *url.URL) bool {
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(h)
		return err == nil && ip.IsLoopback()
	}
	return false
}

// rawJWK is a JSON Web Key's public members (RFC 7517, 7518, 8037).
type rawJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads a JWK set and keeps the keys loci can verify with:
// RSA (RS256, at least 2048 bits), EC P-256 (ES256) and OKP Ed25519
// (EdDSA), each with a kid, for signatures. Others (symmetric "oct" keys,
// encryption keys, other curves) are skipped; a set with no usable key is
// an error.
func parseJWKS(data []byte) (map[string][]jwk, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %v", err)
	}
	out := map[string][]jwk{}
	n := 0
	for _, raw := range set.Keys {
		var r rawJWK
		if json.Unmarshal(raw, &r) != nil || r.Kid == "" || (r.Use != "" && r.Use != "sig") {
			continue
		}
		k, ok := parseJWK(r)
		if !ok {
			continue
		}
		out[r.Kid] = append(out[r.Kid], k)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no usable signing key (RSA of %d bits or more, EC P-256 or Ed25519, each with a kid)", minRSABits)
	}
	return out, nil
}

func parseJWK(r rawJWK) (jwk, bool) {
	b64 := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			return nil
		}
		return b
	}
	fits := func(alg string) bool { return r.Alg == "" || r.Alg == alg }
	switch r.Kty {
	case "RSA":
		n, e := b64(r.N), b64(r.E)
		if !fits("RS256") || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return jwk{}, false
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
			return jwk{}, false
		}
		return jwk{"RS256", pub}, true
	case "EC":
		x, y := b64(r.X), b64(r.Y)
		if !fits("ES256") || r.Crv != "P-256" || len(x) != 32 || len(y) != 32 {
			return jwk{}, false
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil { // not on the curve
			return jwk{}, false
		}
		return jwk{"ES256", pub}, true
	case "OKP":
		x := b64(r.X)
		if !fits("EdDSA") && !fits("Ed25519") || r.Crv != "Ed25519" || len(x) != ed25519.PublicKeySize {
			return jwk{}, false
		}
		return jwk{"EdDSA", ed25519.PublicKey(x)}, true
	}
	return jwk{}, false
}
