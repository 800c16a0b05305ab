package auth

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzJWTVerify: no input makes Verify panic or answer both a principal
// and an error, and nothing is accepted whose signature does not check
// out against the secret on its own.
func FuzzJWTVerify(f *testing.F) {
	valid, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil)).SignedString([]byte(testSecret))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{valid, unsigned("none", claims(nil)), "a.b.c", "..", "e30.e30.", valid + "x", strings.ToUpper(valid)} {
		f.Add(s)
	}
	secret := filepath.Join(f.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(testSecret), 0o600); err != nil {
		f.Fatal(err)
	}
	v, err := NewJWTVerifier(context.Background(), JWTConfig{HS256SecretFile: secret, Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Verify(context.Background(), tok)
		if p != nil && err != nil {
			t.Fatal("a principal and an error")
		}
		if p == nil {
			return
		}
		parts := strings.Split(tok, ".")
		sig, derr := base64.RawURLEncoding.DecodeString(parts[2])
		if derr != nil || jwt.SigningMethodHS256.Verify(parts[0]+"."+parts[1], sig, []byte(testSecret)) != nil {
			t.Fatalf("accepted a token whose signature does not verify: %q", tok)
		}
	})
}

// BenchmarkJWTVerify: what a JWT adds to each request, per algorithm.
func BenchmarkJWTVerify(b *testing.B) {
	testKeys(b)
	clk := newClock()
	jwks := writeFile(b, "jwks.json", jwksJSON(jwkOf("rsa1", &rsaKey.PublicKey), jwkOf("ec1", &ecKey.PublicKey), jwkOf("ed1", edKey.Public())))
	v := newVerifier(b, JWTConfig{HS256SecretFile: writeFile(b, "s", testSecret), JWKSFile: jwks}, clk)
	for _, c := range []struct {
		m   jwt.SigningMethod
		key any
		kid string
	}{{jwt.SigningMethodHS256, []byte(testSecret), ""}, {jwt.SigningMethodRS256, rsaKey, "rsa1"}, {jwt.SigningMethodES256, ecKey, "ec1"}, {jwt.SigningMethodEdDSA, edKey, "ed1"}} {
		hdr := map[string]any{}
		if c.kid != "" {
			hdr["kid"] = c.kid
		}
		tok := sign(b, c.m, c.key, claims(nil), hdr)
		b.Run(c.m.Alg(), func(b *testing.B) {
			for b.Loop() {
				if p, err := v.Verify(context.Background(), tok); p == nil || err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
