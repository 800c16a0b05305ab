package ops

import (
	"math"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// Limit classes: every operation counts against one bucket of its
// principal. Destructive calls count as write, admin calls as read.
const (
	ClassRead  = "read"
	ClassWrite = "write"
	ClassAI    = "ai"
)

// Rate is one token bucket: PerMinute calls refill it (0: no limit) and
// Burst is its size (0: PerMinute/6, at least 1).
type Rate struct {
	PerMinute float64
	Burst     int
}

// burst is the bucket's size, with the default applied.
func (r Rate) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return max(1, int(r.PerMinute/6))
}

// LimitSettings are the limits of `loci serve` (server.limits in the
// user's config): a bucket per principal and class, and a cap on each
// principal's calls in flight (0: no cap).
type LimitSettings struct {
	Read, Write, AI Rate
	Concurrency     int
}

// Active reports whether any limit is set.
func (s LimitSettings) Active() bool {
	return s.Read.PerMinute > 0 || s.Write.PerMinute > 0 || s.AI.PerMinute > 0 || s.Concurrency > 0
}

func (s LimitSettings) rate(class string) Rate {
	switch class {
	case ClassWrite:
		return s.Write
	case ClassAI:
		return s.AI
	}
	return s.Read
}

// maxBuckets bounds the limiter's memory: past it, buckets that are full
// again (the same as new ones) are dropped first, then the least recently
// used.
const maxBuckets = 4096

// Limiter holds the token buckets and the calls in flight of every
// principal that reached the server over HTTP. In-process callers (the
// CLI, stdio: a nil principal) are never limited. Buckets are keyed by the
// principal's name and how it authenticated, so the owner token and a
// principal named like a JWT subject do not share one.
type Limiter struct {
	set LimitSettings
	now func() time.Time

	mu       sync.Mutex
	buckets  map[bucketKey]*bucket
	inflight map[string]int
	rejected map[rejectKey]int64
}

type bucketKey struct{ principal, class string }

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

type rejectKey struct{ principal, class, reason string }

// NewLimiter returns a limiter for s; now is its clock (nil: time.Now),
// so tests move time instead of sleeping.
func NewLimiter(s LimitSettings, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{set: s, now: now, buckets: map[bucketKey]*bucket{}, inflight: map[string]int{}, rejected: map[rejectKey]int64{}}
}

// Settings returns the limits in effect.
func (l *Limiter) Settings() LimitSettings { return l.set }

// LimitClass is the bucket an operation counts against: ai for the AI
// operations, write for writes (destructive included), read for the rest
// (admin included).
func LimitClass(op *Op) string {
	switch op.Scope {
	case auth.ScopeAI:
		return ClassAI
	case auth.ScopeWrite, auth.ScopeDestructive:
		return ClassWrite
	case auth.ScopeRead, auth.ScopeAdmin:
		return ClassRead
	}
	if op.IsWrite() {
		return ClassWrite
	}
	return ClassRead
}

// limitKey names a principal's buckets: its name and how it authenticated.
func limitKey(p *auth.Principal) string { return p.Name + "|" + p.Via }

// Admit takes one call of class for p: a slot of its concurrency cap and
// a token of its bucket. Over either it is rate_limited (nothing waits)
// and nothing is taken; else the returned function gives the slot back.
func (l *Limiter) Admit(p *auth.Principal, class string) (func(), *errs.Error) {
	if l == nil || p == nil {
		return func() {}, nil
	}
	key := limitKey(p)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.set.Concurrency; c > 0 && l.inflight[key] >= c {
		l.rejected[rejectKey{p.Name, class, "concurrency"}]++
		return nil, errs.New(errs.CodeRateLimited, "principal %q has %d calls in flight, its limit; retry when one has finished", p.Name, l.inflight[key]).
			With("principal", p.Name).With("class", class).With("reason", "concurrency").
			With("concurrency", c).With("retry_after_seconds", 1)
	}
	if r := l.set.rate(class); r.PerMinute > 0 {
		b := l.bucket(key, class, r, now)
		if !b.lim.AllowN(now, 1) {
			// The wait until one whole token is back.
			wait := (1 - b.lim.TokensAt(now)) / (r.PerMinute / 60)
			secs := max(1, int(math.Ceil(wait)))
			l.rejected[rejectKey{p.Name, class, "rate"}]++
			return nil, errs.New(errs.CodeRateLimited, "principal %q is over its %s limit (%g calls a minute, bursts of %d); retry in %d s", p.Name, class, r.PerMinute, r.burst(), secs).
				With("principal", p.Name).With("class", class).With("reason", "rate").
				With("limit_per_minute", r.PerMinute).With("burst", r.burst()).With("retry_after_seconds", secs)
		}
	}
	if l.set.Concurrency <= 0 {
		return func() {}, nil
	}
	l.inflight[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			if l.inflight[key]--; l.inflight[key] <= 0 {
				delete(l.inflight, key)
			}
			l.mu.Unlock()
		})
	}, nil
}

// bucket returns key's bucket of class, making room when the map is full.
func (l *Limiter) bucket(key, class string, r Rate, now time.Time) *bucket {
	k := bucketKey{key, class}
	if b, ok := l.buckets[k]; ok {
		b.used = now
		return b
	}
	if len(l.buckets) >= maxBuckets {
		l.evict(now)
	}
	b := &bucket{lim: rate.NewLimiter(rate.Limit(r.PerMinute/60), r.burst()), used: now}
	l.buckets[k] = b
	return b
}

// evict drops the buckets that refilled (a new bucket is the same), and,
// if none did, the least recently used quarter.
func (l *Limiter) evict(now time.Time) {
	for k, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(b.lim.Burst()) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) < maxBuckets {
		return
	}
	keys := make([]bucketKey, 0, len(l.buckets))
	for k := range l.buckets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return l.buckets[keys[i]].used.Before(l.buckets[keys[j]].used) })
	for _, k := range keys[:len(keys)/4] {
		delete(l.buckets, k)
	}
}

// LimitStat is one count of refused calls, for metrics.
type LimitStat struct {
	Principal string `json:"principal"`
	Class     string `json:"class"`
	Reason    string `json:"reason"` // rate or concurrency
	Rejected  int64  `json:"rejected"`
}

// Rejections returns the calls refused so far, by principal, class and
// reason, sorted.
func (l *Limiter) Rejections() []LimitStat {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LimitStat, 0, len(l.rejected))
	for k, n := range l.rejected {
		out = append(out, LimitStat{Principal: k.principal, Class: k.class, Reason: k.reason, Rejected: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Principal != b.Principal {
			return a.Principal < b.Principal
		}
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		return a.Reason < b.Reason
	})
	return out
}

// InFlight returns each principal's calls in flight (only counted when a
// concurrency cap is set).
func (l *Limiter) InFlight() map[string]int {
	out := map[string]int{}
	if l == nil {
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.inflight {
		out[k] = n
	}
	return out
}

// admit is the pipeline's rate limit and concurrency cap per principal
// and class (read, write, ai), after authorization and before anything
// is decoded: a refused call costs nothing else (no confirmation is
// created for it). It returns the function that ends the call's hold on
// a concurrency slot.
func (e *Env) admit(c Caller, op *Op) (func(), *errs.Error) {
	return e.Limits.Admit(c.Principal, LimitClass(op))
}
