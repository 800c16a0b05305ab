package web

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// expiringVerifier accepts "jwt-<name>" as a principal whose credential
// ends at the time the test sets.
type expiringVerifier struct{ expires map[string]time.Time }

func (v expiringVerifier) Verify(_ context.Context, tok string) (*auth.Principal, error) {
	name, ok := strings.CutPrefix(tok, "jwt-")
	if !ok {
		return nil, nil
	}
	return &auth.Principal{Name: name, Scopes: []auth.Scope{auth.ScopeRead}, Expires: v.expires[name]}, nil
}

// A web session started with a JWT ends when the JWT does: the cookie
// does not outlive the credential it was given for.
func TestSessionEndsWithTheJWT(t *testing.T) {
	root := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, testutil.DemoVault(), root)
	vh, err := ops.OpenVault(context.Background(), root, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	v := expiringVerifier{map[string]time.Time{"fresh": time.Now().Add(time.Hour), "stale": time.Now().Add(-time.Second)}}
	srv := httptest.NewServer(New(catalog.All(), env, Options{Auth: auth.NewAuthenticator(token, nil, v)}))
	t.Cleanup(srv.Close)

	fresh := client(t)
	if code, body := get(t, fresh, srv.URL+"/?token=jwt-fresh"); code != 200 || !strings.Contains(body, `id="q"`) {
		t.Fatalf("login with a live JWT: %d", code)
	}
	if code, _ := get(t, fresh, srv.URL+"/ui/status"); code != 200 {
		t.Errorf("session of a live JWT: %d", code)
	}
	stale := client(t)
	code, body := get(t, stale, srv.URL+"/?token=jwt-stale")
	if code != 401 || !strings.Contains(body, "Log in") {
		t.Errorf("session of an expired JWT: %d", code)
	}
	if code, _ := get(t, stale, srv.URL+"/ui/status"); code != 401 {
		t.Errorf("session of an expired JWT, next page: %d", code)
	}
}
