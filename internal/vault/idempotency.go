package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/safefs"
)

// DefaultIdempotencyTTL is how long a key's first result is kept.
const DefaultIdempotencyTTL = 24 * time.Hour

// IdempotencyRecord is the stored outcome of the first applied call with a key.
type IdempotencyRecord struct {
	Key       string          `json:"key"`
	Operation string          `json:"operation"`
	InputHash string          `json:"input_sha256"`
	Time      time.Time       `json:"time"`
	Result    json.RawMessage `json:"result"`
}

type idemStore struct {
	root safefs.Root
	dir  string // root-relative
	ttl  time.Duration

	mu        sync.Mutex
	lastPrune time.Time
}

func (s *idemStore) file(key string) string {
	h := sha256.Sum256([]byte(key))
	return s.dir + "/" + hex.EncodeToString(h[:16]) + ".json"
}

// lookup returns the record of key, or nil when there is none (or it expired).
func (s *idemStore) lookup(key string, now time.Time) (*IdempotencyRecord, error) {
	b, err := s.root.ReadFile(s.file(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r IdempotencyRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Key != key || now.Sub(r.Time) > s.ttl {
		return nil, nil
	}
	return &r, nil
}

func (s *idemStore) store(r *IdempotencyRecord, now time.Time) error {
	if err := s.root.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.root, s.file(r.Key), b, false); err != nil {
		return err
	}
	s.prune(now)
	return nil
}

// prune drops expired records, at most once an hour.
func (s *idemStore) prune(now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastPrune) > time.Hour
	if due {
		s.lastPrune = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	des, err := s.root.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, d := range des {
		if !strings.HasSuffix(d.Name(), ".json") {
			continue
		}
		if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > s.ttl {
			s.root.Remove(s.dir + "/" + d.Name())
		}
	}
}
