package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// PrincipalsFile is the name of the principals file in the user's config
// folder (config.UserConfigDir: $LOCI_CONFIG_DIR, else ~/.config/loci).
const PrincipalsFile = "principals.json"

// TokenPrefix starts every token `loci token create` makes, so secret
// scanners and people can tell a loci token from other strings.
const TokenPrefix = "loci_"

// Entry is one principal as the principals file stores it: never the
// token, only its SHA-256 (a token is 256 random bits, so a plain hash is
// enough: there is nothing to guess).
type Entry struct {
	Principal
	TokenSHA256 string    `json:"token_sha256"`
	Created     time.Time `json:"created"`
}

type fileBody struct {
	Version    int     `json:"version"`
	Principals []Entry `json:"principals"`
}

// Store is the principals file of one server: read when it changes (so a
// revoked token stops working on a running server at its next request),
// written atomically with mode 0600.
type Store struct {
	dir string

	mu     sync.Mutex
	stamp  string // size+mtime of the file last read
	racy   bool   // the file was read within racyWindow of its mtime
	byHash map[string]*Principal
	err    error
}

// racyWindow: a file read this soon after its modification time could be
// changed again within the same clock tick, leaving size and mtime as they
// were (a revoke and a create of a same-sized entry); until it is older,
// every lookup reads it again (git's "racy clean" rule).
const racyWindow = 2 * time.Second

// NewStore returns the store of the principals file in dir (the user's
// config folder). A missing file is an empty store.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Path is the file's path.
func (s *Store) Path() string { return safefs.Root(s.dir).Join(PrincipalsFile) }

func (s *Store) read() (fileBody, error) {
	var body fileBody
	f, err := safefs.Root(s.dir).OpenFile(PrincipalsFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fileBody{Version: 1}, nil
	}
	if err != nil {
		return body, err
	}
	defer f.Close()
	// Whoever may write the file may grant themselves every scope: refuse
	// one that the group or others may write (as ssh does its keys).
	if fi, err := f.Stat(); err != nil {
		return body, err
	} else if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return body, errs.New(errs.CodeConfigInvalid, "%s has mode %o: others may write it and so grant themselves any scope; run chmod 600 on it", s.Path(), fi.Mode().Perm()).
			With("file", s.Path())
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return body, err
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return body, errs.New(errs.CodeConfigInvalid, "%s is not a principals file: %v", s.Path(), err).With("file", s.Path())
	}
	if body.Version != 1 {
		return body, errs.New(errs.CodeConfigInvalid, "%s has version %d; this loci reads version 1", s.Path(), body.Version).With("file", s.Path())
	}
	return body, nil
}

func (s *Store) write(body fileBody) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return errs.New(errs.CodeInternal, "cannot create %s: %v", s.dir, err)
	}
	body.Version = 1
	b, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "cannot encode the principals file")
	}
	return safefs.Root(s.dir).WriteFileAtomic(PrincipalsFile, append(b, '\n'), 0o600)
}

// HashToken is the stored form of a token.
func HashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// NewToken returns a new random token: TokenPrefix and 32 random bytes,
// base64url.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", errs.Wrap(err, errs.CodeInternal, "no randomness for a token")
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// Create adds a principal and returns its new token (shown once; only its
// hash is kept). A name in use is validation_failed: revoke it first.
func (s *Store) Create(p Principal, now time.Time) (string, error) {
	if err := ValidName(p.Name); err != nil {
		return "", err
	}
	if len(p.Scopes) == 0 {
		return "", errs.New(errs.CodeInvalidInput, "a principal needs at least one scope (--scopes %s)", scopeList(AllScopes))
	}
	if p.Confirm == "" {
		p.Confirm = PolicyAllow
		if slices.Contains(p.Scopes, ScopeDestructive) {
			p.Confirm = PolicyConfirm
		}
	}
	if p.Confirm != PolicyAllow && p.Confirm != PolicyConfirm {
		return "", errs.New(errs.CodeInvalidInput, "confirmation policy %q: use %q or %q", p.Confirm, PolicyConfirm, PolicyAllow)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := s.read()
	if err != nil {
		return "", err
	}
	for _, e := range body.Principals {
		if e.Name == p.Name {
			return "", errs.New(errs.CodeInvalidInput, "principal %q exists; `loci token revoke %s` first to replace its token", p.Name, p.Name).With("name", p.Name)
		}
	}
	tok, err := NewToken()
	if err != nil {
		return "", err
	}
	p.Via, p.Subject = "", ""
	body.Principals = append(body.Principals, Entry{Principal: p, TokenSHA256: HashToken(tok), Created: now.UTC().Truncate(time.Second)})
	if err := s.write(body); err != nil {
		return "", err
	}
	s.stamp = ""
	return tok, nil
}

// List returns the stored principals by name (no hashes).
func (s *Store) List() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := s.read()
	if err != nil {
		return nil, err
	}
	out := body.Principals
	for i := range out {
		out[i].TokenSHA256 = ""
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Revoke removes a principal; its token stops working at the next request
// of a running server. An unknown name is validation_failed.
func (s *Store) Revoke(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := s.read()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(body.Principals, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return errs.New(errs.CodeInvalidInput, "no principal named %q (see `loci token list`)", name).With("name", name)
	}
	body.Principals = slices.Delete(body.Principals, i, i+1)
	s.stamp = ""
	return s.write(body)
}

// Lookup returns the principal whose token is tok, or nil. The file is
// re-read when its size or modification time changed.
func (s *Store) Lookup(tok string) (*Principal, error) {
	if !strings.HasPrefix(tok, TokenPrefix) {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	p := s.byHash[HashToken(tok)]
	if p == nil {
		return nil, nil
	}
	c := *p
	c.Via = ViaToken
	return &c, nil
}

func (s *Store) refresh() error {
	fi, err := safefs.Root(s.dir).Lstat(PrincipalsFile)
	stamp, racy := "missing", false
	if err == nil {
		stamp = fi.ModTime().Format(time.RFC3339Nano) + "/" + strconv.FormatInt(fi.Size(), 10) + "/" + fi.Mode().String()
		racy = time.Since(fi.ModTime()) < racyWindow
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if stamp == s.stamp && s.err == nil && !s.racy {
		return nil
	}
	body, err := s.read()
	if err != nil {
		s.err = err
		return err
	}
	m := make(map[string]*Principal, len(body.Principals))
	for i := range body.Principals {
		e := body.Principals[i]
		p := e.Principal
		m[e.TokenSHA256] = &p
	}
	s.byHash, s.stamp, s.racy, s.err = m, stamp, racy, nil
	return nil
}
