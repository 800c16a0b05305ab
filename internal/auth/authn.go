package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"

	"github.com/loci-dev/loci/internal/errs"
)

// TokenVerifier verifies a bearer token of another kind (JWT) and returns
// its principal; (nil, nil) means "not mine" so the next kind is tried.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*Principal, error)
}

// Authenticator resolves a bearer token to a principal, the same way for
// every HTTP surface (MCP, REST, SSE events, the web UI's login).
type Authenticator struct {
	ownerHash [32]byte
	hasOwner  bool
	// Store holds the principals `loci token create` made (nil: none).
	Store *Store
	// JWT verifies JSON Web Tokens when configured (nil: none).
	JWT TokenVerifier
}

// NewAuthenticator returns an authenticator accepting ownerToken as the
// principal "owner" (empty: no owner token), tokens from store and, when
// jwt is set, JWTs.
func NewAuthenticator(ownerToken string, store *Store, jwt TokenVerifier) *Authenticator {
	a := &Authenticator{Store: store, JWT: jwt}
	if ownerToken != "" {
		a.ownerHash, a.hasOwner = sha256.Sum256([]byte(ownerToken)), true
	}
	return a
}

// Required reports whether requests must carry a token (false only for
// --no-auth, where every request is the owner).
func (a *Authenticator) Required() bool {
	return a != nil && (a.hasOwner || a.Store != nil || a.JWT != nil)
}

// Authenticate returns tok's principal, or unauthorized. The owner token
// is compared by digest in constant time; a principal's token is found by
// its hash.
func (a *Authenticator) Authenticate(ctx context.Context, tok string) (*Principal, error) {
	if a.hasOwner {
		got := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(got[:], a.ownerHash[:]) == 1 {
			return Owner(ViaOwnerToken), nil
		}
	}
	if a.Store != nil {
		p, err := a.Store.Lookup(tok)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return p, nil
		}
	}
	if a.JWT != nil {
		p, err := a.JWT.Verify(ctx, tok)
		if err != nil {
			return nil, err
		}
		if p != nil {
			p.Via = ViaJWT
			return p, nil
		}
	}
	return nil, errs.New(errs.CodeUnauthorized, "invalid bearer token (see `loci token`)")
}
