package ops

import (
	"encoding/base64"
	"encoding/json"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/loci-dev/loci/internal/errs"
)

// Cursors are opaque to callers: base64 of a small JSON object.
type cursor struct {
	Offset int `json:"o"`
}

// EncodeCursor returns the opaque cursor of a list position.
func EncodeCursor(offset int) string {
	b, _ := json.Marshal(cursor{Offset: offset})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor (EncodeCursor; "" is the start).
func DecodeCursor(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Offset < 0 {
		return 0, errs.New(errs.CodeInvalidInput, "invalid cursor %q", s)
	}
	return c.Offset, nil
}

// CheckLimit refuses a limit outside 0 (the default) to max.
func CheckLimit(limit, max int) error {
	if limit < 0 || limit > max {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and %d", max).With("limit", limit)
	}
	return nil
}

// Page cuts one page out of a list and returns the cursor of the next.
func Page[T any](all []T, off, limit int) ([]T, string) {
	if off > len(all) {
		off = len(all)
	}
	end := min(off+limit, len(all))
	next := ""
	if end < len(all) {
		next = EncodeCursor(end)
	}
	out := all[off:end]
	if out == nil {
		out = []T{}
	}
	return out, next
}

// OrDefault returns v, or def when v is 0 (not given).
func OrDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// CheckGlob refuses an invalid doublestar path glob.
func CheckGlob(g string) error {
	if g != "" && !doublestar.ValidatePattern(g) {
		return errs.New(errs.CodeInvalidInput, "invalid path glob %q", g).With("path_glob", g)
	}
	return nil
}

// GlobMatch reports whether vault-relative path p matches glob g (every
// path matches an empty glob).
func GlobMatch(g, p string) bool {
	if g == "" {
		return true
	}
	ok, _ := doublestar.Match(g, p)
	return ok
}
