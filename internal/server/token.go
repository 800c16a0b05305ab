package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// Token storage: <index dir of the first vault>/token, mode 0600.
const (
	// TokenFile is the token's file name inside the index directory.
	TokenFile = "token"
	// EnvToken overrides the stored token.
	EnvToken = "LOCI_TOKEN"
	// MinTokenLen is the shortest token accepted (from the file or the environment).
	MinTokenLen = 16
)

// GenerateToken returns 32 random bytes, base64url without padding (43 characters).
func GenerateToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", errs.Wrap(err, errs.CodeInternal, "cannot generate a token")
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// TokenPath is where the token of an index directory is stored.
func TokenPath(dir safefs.Loc) string { return dir.Root.Join(dir.Name(TokenFile)) }

// ResolveToken returns the token to use: $LOCI_TOKEN when set (source "env"),
// else the stored token, created on first use (source = its path). dir is
// the index directory, reached without following links (safefs.At).
func ResolveToken(dir safefs.Loc) (token, source string, created bool, err error) {
	if t := strings.TrimSpace(os.Getenv(EnvToken)); t != "" {
		if len(t) < MinTokenLen {
			return "", "", false, errs.New(errs.CodeInvalidInput, "%s is too short (%d characters; at least %d)", EnvToken, len(t), MinTokenLen)
		}
		return t, "env", false, nil
	}
	token, created, err = LoadOrCreateToken(dir)
	return token, TokenPath(dir), created, err
}

// LoadOrCreateToken reads the stored token, creating it (exclusively, mode
// 0600) when absent. A token file that is a symlink (or sits below one),
// not a regular file, or readable or writable by group or others is refused
// rather than trusted or silently fixed: the secret may already have
// leaked, so the error says to rotate it.
func LoadOrCreateToken(dir safefs.Loc) (string, bool, error) {
	name := dir.Name(TokenFile)
	if t, err := readToken(dir); err == nil {
		return t, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if err := dir.MkdirAll(0o755); err != nil {
		return "", false, dirErr(err, dir)
	}
	t, err := GenerateToken()
	if err != nil {
		return "", false, err
	}
	f, err := dir.Root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process won the race: use its token
			t, err := readToken(dir)
			return t, false, err
		}
		if safefs.IsDenied(err) {
			return "", false, err
		}
		return "", false, errs.Wrap(err, errs.CodeInternal, "cannot create the token file").With("path", TokenPath(dir))
	}
	if err := writeClose(f, t); err != nil {
		dir.Root.Remove(name)
		return "", false, errs.Wrap(err, errs.CodeInternal, "cannot write the token file").With("path", TokenPath(dir))
	}
	return t, true, nil
}

func dirErr(err error, dir safefs.Loc) error {
	if safefs.IsDenied(err) {
		return err
	}
	return errs.Wrap(err, errs.CodeInternal, "cannot create the index directory").With("dir", dir.Path())
}

// RotateToken replaces the stored token with a new one and returns it. The
// new token is written to a private temporary file, fsynced, renamed over
// the old one and the folder fsynced (safefs.Root.WriteFileAtomic), so
// after a crash the old token, leaked or not, does not come back. A link
// at the token path (or on the way to it) is refused, not replaced.
func RotateToken(dir safefs.Loc) (string, error) {
	if err := dir.MkdirAll(0o755); err != nil {
		return "", dirErr(err, dir)
	}
	t, err := GenerateToken()
	if err != nil {
		return "", err
	}
	if err := dir.Root.WriteFileAtomic(dir.Name(TokenFile), []byte(t+"\n"), 0o600); err != nil {
		if safefs.IsDenied(err) {
			return "", err
		}
		return "", errs.Wrap(err, errs.CodeInternal, "cannot replace the token file").With("path", TokenPath(dir))
	}
	return t, nil
}

func writeClose(f *os.File, token string) error {
	_, err := f.WriteString(token + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tokenChecked, set by tests only, runs between checking the token file
// and reading it.
var tokenChecked func()

// readToken opens the token file once, without following a link, and
// checks and reads that open file: the mode checked is the mode of the
// bytes read.
func readToken(dir safefs.Loc) (string, error) {
	p := TokenPath(dir)
	f, err := dir.Root.OpenFile(dir.Name(TokenFile), os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if safefs.IsDenied(err) { // a link on the way, or not a regular file
			return "", errs.New(errs.CodeForbidden, "the token file %s is not safe to read (%s); remove it and run `loci token --rotate`", p, errs.As(err).Message).With("path", p)
		}
		return "", errs.Wrap(err, errs.CodeInternal, "cannot read the token file").With("path", p)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", errs.Wrap(err, errs.CodeInternal, "cannot read the token file").With("path", p)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return "", errs.New(errs.CodeForbidden,
			"the token file %s is accessible to other users (mode %04o); treat the token as leaked: run `loci token --rotate` (it writes a new one with mode 0600)",
			p, st.Mode().Perm()).With("path", p).With("mode", st.Mode().Perm().String())
	}
	if tokenChecked != nil {
		tokenChecked()
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", errs.Wrap(err, errs.CodeInternal, "cannot read the token file").With("path", p)
	}
	t := strings.TrimSpace(string(b))
	if len(t) < MinTokenLen {
		return "", errs.New(errs.CodeInvalidInput, "the token in %s is too short (%d characters; at least %d); run `loci token --rotate`", p, len(t), MinTokenLen).With("path", p)
	}
	return t, nil
}
