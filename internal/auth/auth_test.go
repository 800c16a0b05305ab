package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

var now = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

func code(err error) string {
	if err == nil {
		return ""
	}
	return errs.As(err).Code
}

func TestParseScopes(t *testing.T) {
	cases := []struct {
		in   []string
		want []auth.Scope
		code string
	}{
		{[]string{"write,read"}, []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, ""},
		{[]string{" READ ", "read", ""}, []auth.Scope{auth.ScopeRead}, ""},
		{[]string{"all"}, auth.AllScopes, ""},
		{[]string{"admin", "destructive,ai"}, []auth.Scope{auth.ScopeDestructive, auth.ScopeAI, auth.ScopeAdmin}, ""},
		{nil, nil, ""},
		{[]string{"read,root"}, nil, errs.CodeInvalidInput},
		{[]string{"reads"}, nil, errs.CodeInvalidInput},
	}
	for _, c := range cases {
		got, err := auth.ParseScopes(c.in)
		if code(err) != c.code || !slices.Equal(got, c.want) {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v, %q", c.in, got, err, c.want, c.code)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "research-agent", "ci.bot_2", "alice@example.com", strings.Repeat("x", 64)} {
		if err := auth.ValidName(ok); err != nil {
			t.Errorf("ValidName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "owner", "two words", "a/b", "../x", "é", "x\n", "tab\t", strings.Repeat("x", 65), "semi;colon"} {
		if code(auth.ValidName(bad)) != errs.CodeInvalidInput {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
}

// TestStoreLifecycle: create returns a prefixed token shown once; the file
// (0600) holds only its hash; lookup finds it with Via token; list hides
// hashes; duplicate and bad names are refused; revoke removes it.
func TestStoreLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	st := auth.NewStore(dir)
	if p, err := st.Lookup(auth.TokenPrefix + "nothing-yet"); p != nil || err != nil {
		t.Fatalf("lookup in a missing file: %v %v", p, err)
	}
	tok, err := st.Create(auth.Principal{Name: "research", Scopes: []auth.Scope{auth.ScopeRead}, Vaults: []string{"Notes"}}, now)
	if err != nil || !strings.HasPrefix(tok, auth.TokenPrefix) || len(tok) < len(auth.TokenPrefix)+40 {
		t.Fatalf("create: %q %v", tok, err)
	}
	fi, err := os.Stat(st.Path())
	if err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("principals file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(st.Path())
	if strings.Contains(string(b), tok) || strings.Contains(string(b), strings.TrimPrefix(tok, auth.TokenPrefix)) || !strings.Contains(string(b), auth.HashToken(tok)) {
		t.Fatalf("the file holds the token or lacks its hash:\n%s", b)
	}
	p, err := st.Lookup(tok)
	if err != nil || p == nil || p.Name != "research" || p.Via != auth.ViaToken || p.IsOwner() || !p.Has(auth.ScopeRead) || p.Has(auth.ScopeWrite) ||
		!p.MayUse("Notes") || p.MayUse("Work") || p.Confirm != auth.PolicyAllow {
		t.Fatalf("lookup: %+v %v", p, err)
	}
	// The returned principal is a copy: changing it changes nothing stored.
	p.Scopes = append(p.Scopes, auth.ScopeAdmin)
	if again, _ := st.Lookup(tok); again.Has(auth.ScopeAdmin) {
		t.Fatal("a caller's change to a looked-up principal reached the store")
	}
	for _, bad := range []string{tok + "x", tok[:len(tok)-1], "", auth.TokenPrefix, strings.TrimPrefix(tok, auth.TokenPrefix), auth.HashToken(tok)} {
		if p, err := st.Lookup(bad); p != nil || err != nil {
			t.Errorf("lookup %q: %v %v", bad, p, err)
		}
	}

	// Destructive defaults to confirm; an explicit allow stays.
	tok2, err := st.Create(auth.Principal{Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := st.Lookup(tok2); !p.MustConfirm() {
		t.Errorf("editor with destructive: confirm %q", p.Confirm)
	}
	if _, err := st.Create(auth.Principal{Name: "bot", Scopes: []auth.Scope{auth.ScopeDestructive}, Confirm: auth.PolicyAllow}, now); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		p    auth.Principal
		want string
	}{
		{auth.Principal{Name: "research", Scopes: []auth.Scope{auth.ScopeRead}}, "exists"},
		{auth.Principal{Name: "owner", Scopes: []auth.Scope{auth.ScopeRead}}, "owner"},
		{auth.Principal{Name: "bad name", Scopes: []auth.Scope{auth.ScopeRead}}, "only letters"},
		{auth.Principal{Name: "noscopes"}, "at least one scope"},
		{auth.Principal{Name: "policy", Scopes: []auth.Scope{auth.ScopeRead}, Confirm: "sometimes"}, "confirmation policy"},
	} {
		if _, err := st.Create(c.p, now); code(err) != errs.CodeInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("create %q: %v, want validation_failed with %q", c.p.Name, err, c.want)
		}
	}

	list, err := st.List()
	if err != nil || len(list) != 3 || list[0].Name != "bot" || list[1].Name != "editor" || list[2].Name != "research" {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, e := range list {
		if e.TokenSHA256 != "" || !e.Created.Equal(now) {
			t.Errorf("list entry %s: hash %q created %v", e.Name, e.TokenSHA256, e.Created)
		}
	}

	if err := st.Revoke("research"); err != nil {
		t.Fatal(err)
	}
	if p, err := st.Lookup(tok); p != nil || err != nil {
		t.Fatalf("revoked token: %v %v", p, err)
	}
	if err := st.Revoke("research"); code(err) != errs.CodeInvalidInput {
		t.Errorf("revoke twice: %v", err)
	}
	if p, _ := st.Lookup(tok2); p == nil {
		t.Error("revoking one principal dropped another")
	}
}

// TestRevokeSeenByRunningServer: a server's store (one Store value, its
// cache warm) stops accepting a token at the next lookup after another
// process (another Store on the same file: `loci token revoke`) revokes
// it, even when the file's size and modification time come out the same
// as before (a coarse clock, a revoke and a create of a same-sized entry).
func TestRevokeSeenByRunningServer(t *testing.T) {
	dir := t.TempDir()
	cli := auth.NewStore(dir)
	alice, err := cli.Create(auth.Principal{Name: "alice", Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if err != nil {
		t.Fatal(err)
	}
	srv := auth.NewStore(dir)
	if p, err := srv.Lookup(alice); err != nil || p == nil {
		t.Fatalf("warm lookup: %v %v", p, err)
	}
	if err := cli.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	if p, err := srv.Lookup(alice); err != nil || p != nil {
		t.Fatalf("revoked token still accepted: %v %v", p, err)
	}

	// Same size and mtime: revoke alice again after re-creating her, then
	// create "alicf" (same length, same scopes), and put the old mtime back.
	alice, _ = cli.Create(auth.Principal{Name: "alice", Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if p, _ := srv.Lookup(alice); p == nil {
		t.Fatal("re-created alice not accepted")
	}
	fi, _ := os.Stat(srv.Path())
	if err := cli.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Create(auth.Principal{Name: "alicf", Scopes: []auth.Scope{auth.ScopeRead}}, now); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(srv.Path(), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(srv.Path()); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("setup: size %d→%d mtime %v→%v", fi.Size(), fi2.Size(), fi.ModTime(), fi2.ModTime())
	}
	if p, err := srv.Lookup(alice); err != nil || p != nil {
		t.Fatalf("revoked token accepted while the file's size and mtime are unchanged: %+v %v", p, err)
	}
}

// TestStoreRefusesUnsafeFiles: a principals file that is a symbolic link,
// or that others may write (they could grant themselves every scope), is
// refused: no token from it is accepted, and the error says why.
func TestStoreRefusesUnsafeFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes and links differ on Windows")
	}
	dir := t.TempDir()
	real := auth.NewStore(filepath.Join(dir, "real"))
	tok, err := real.Create(auth.Principal{Name: "bot", Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked")
	if err := os.MkdirAll(linked, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real.Path(), filepath.Join(linked, auth.PrincipalsFile)); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	st := auth.NewStore(linked)
	if p, err := st.Lookup(tok); p != nil || err == nil {
		t.Errorf("lookup through a symlinked principals file: %+v %v", p, err)
	}
	if _, err := st.Create(auth.Principal{Name: "x", Scopes: []auth.Scope{auth.ScopeRead}}, now); err == nil {
		t.Error("create wrote through a symlinked principals file")
	}
	if fi, err := os.Lstat(filepath.Join(linked, auth.PrincipalsFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}

	if err := os.Chmod(real.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	fresh := auth.NewStore(filepath.Join(dir, "real"))
	p, err := fresh.Lookup(tok)
	if p != nil || code(err) != errs.CodeConfigInvalid || !strings.Contains(err.Error(), "others may write") {
		t.Errorf("lookup in a world-writable principals file: %+v %v", p, err)
	}
	if err := os.Chmod(real.Path(), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := fresh.Lookup(tok); p == nil || err != nil {
		t.Errorf("after chmod 600: %+v %v", p, err)
	}
}

func TestStoreRefusesBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"not json":    "principals: []\n",
		"version 2":   `{"version":2,"principals":[]}`,
		"truncated":   `{"version":1,"principals":[{"name":"a"`,
		"wrong types": `{"version":1,"principals":{"name":"a"}}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, auth.PrincipalsFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		st := auth.NewStore(dir)
		if p, err := st.Lookup(auth.TokenPrefix + "x"); p != nil || code(err) != errs.CodeConfigInvalid {
			t.Errorf("%s: lookup %v %v, want config_invalid", name, p, err)
		}
		if _, err := st.Create(auth.Principal{Name: "a", Scopes: []auth.Scope{auth.ScopeRead}}, now); code(err) != errs.CodeConfigInvalid {
			t.Errorf("%s: create over a bad file: %v", name, err)
		}
	}
}

// stubJWT is a TokenVerifier that accepts tokens starting with "jwt." and
// records what it was asked.
type stubJWT struct {
	seen []string
	p    *auth.Principal
	err  error
}

func (s *stubJWT) Verify(_ context.Context, tok string) (*auth.Principal, error) {
	s.seen = append(s.seen, tok)
	if s.err != nil {
		return nil, s.err
	}
	if !strings.HasPrefix(tok, "jwt.") {
		return nil, nil
	}
	c := *s.p
	return &c, nil
}

// TestAuthenticatorOrder: the owner token first, then the principals
// file, then JWTs; a token answered by one is never shown to the next; a
// JWT can never come out as the owner, whatever its verifier says.
func TestAuthenticatorOrder(t *testing.T) {
	dir := t.TempDir()
	st := auth.NewStore(dir)
	tok, err := st.Create(auth.Principal{Name: "bot", Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if err != nil {
		t.Fatal(err)
	}
	const owner = "owner-token-0123456789abcdefghijklmnop"
	// A verifier that claims the owner's name and way in.
	jwt := &stubJWT{p: &auth.Principal{Name: "owner", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaOwnerToken}}
	a := auth.NewAuthenticator(owner, st, jwt)
	ctx := context.Background()
	if !a.Required() {
		t.Fatal("Required() is false with credentials configured")
	}

	p, err := a.Authenticate(ctx, owner)
	if err != nil || !p.IsOwner() || p.Via != auth.ViaOwnerToken || !slices.Equal(p.Scopes, auth.AllScopes) || len(jwt.seen) != 0 {
		t.Fatalf("owner: %+v %v (jwt saw %v)", p, err, jwt.seen)
	}
	p, err = a.Authenticate(ctx, tok)
	if err != nil || p.Name != "bot" || p.IsOwner() || len(jwt.seen) != 0 {
		t.Fatalf("file token: %+v %v (jwt saw %v)", p, err, jwt.seen)
	}
	p, err = a.Authenticate(ctx, "jwt.payload.sig")
	if err != nil || p.Via != auth.ViaJWT || p.IsOwner() || p.Has(auth.ScopeWrite) {
		t.Fatalf("jwt: %+v %v", p, err)
	}
	// Near misses of the owner token: the digest comparison refuses them
	// (a prefix, one changed byte, the token with a suffix, empty).
	for _, bad := range []string{owner[:len(owner)-1], owner[:len(owner)-1] + "Q", owner + "x", "", " " + owner, strings.ToUpper(owner)} {
		p, err := a.Authenticate(ctx, bad)
		if p != nil || code(err) != errs.CodeUnauthorized {
			t.Errorf("near miss %q: %+v %v", bad, p, err)
		}
	}
	// The verifier's own error is the answer (no fall-through to "invalid").
	jwt.err = errs.New(errs.CodeUnauthorized, "token expired")
	if _, err := a.Authenticate(ctx, "jwt.expired"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("jwt error: %v", err)
	}
	// An owner-less authenticator does not take the empty token as the owner.
	b := auth.NewAuthenticator("", st, nil)
	if p, err := b.Authenticate(ctx, ""); p != nil || code(err) != errs.CodeUnauthorized {
		t.Errorf("empty token with no owner token: %+v %v", p, err)
	}
	if auth.NewAuthenticator("", nil, nil).Required() {
		t.Error("no credentials at all: Required() is true (that is --no-auth)")
	}
	var nilA *auth.Authenticator
	if nilA.Required() {
		t.Error("nil authenticator requires credentials")
	}
}

// TestPrincipalRights: the nil principal and the owner have every right;
// a principal has exactly its scopes and vaults.
func TestPrincipalRights(t *testing.T) {
	var none *auth.Principal
	if !none.Has(auth.ScopeAdmin) || !none.MayUse("any") || !none.IsOwner() || none.Label() != "owner" || none.MustConfirm() {
		t.Error("nil principal is not the owner")
	}
	for _, via := range []string{auth.ViaOwnerToken, auth.ViaLocal, auth.ViaAnonymous} {
		if !auth.Owner(via).IsOwner() {
			t.Errorf("Owner(%s) is not the owner", via)
		}
	}
	p := &auth.Principal{Name: "ci", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Vaults: []string{"Work"}, Confirm: auth.PolicyConfirm, Via: auth.ViaToken}
	if p.IsOwner() || p.Has(auth.ScopeDestructive) || !p.MayUse("Work") || p.MayUse("Notes") || !p.MustConfirm() || p.Label() != "ci" {
		t.Errorf("principal rights: %+v", p)
	}
	if m := p.Missing(auth.ScopeWrite, auth.ScopeDestructive, auth.ScopeAdmin, auth.ScopeAdmin); !slices.Equal(m, []auth.Scope{auth.ScopeDestructive, auth.ScopeAdmin}) {
		t.Errorf("Missing: %v", m)
	}
	// A principal from the file named like the owner is not the owner.
	fake := &auth.Principal{Name: "owner", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}
	if fake.IsOwner() || fake.Has(auth.ScopeWrite) {
		t.Error("a principal named owner got the owner's rights")
	}
	ctx := auth.WithPrincipal(context.Background(), p)
	if auth.From(ctx) != p || auth.From(context.Background()) != nil {
		t.Error("WithPrincipal/From")
	}
}
