package ai

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// Invocation is the audit record of one AI operation: what was read and
// what it cost, never prompts or outputs.
type Invocation struct {
	Time       time.Time `json:"time"`
	Operation  string    `json:"operation"`
	Provider   string    `json:"provider,omitempty"`
	Model      string    `json:"model,omitempty"`
	Paths      []string  `json:"paths"`
	Notes      int       `json:"notes"`
	Citations  int       `json:"citations"`
	Usage      Usage     `json:"usage"`
	CacheHit   bool      `json:"cache_hit,omitempty"`
	Code       string    `json:"code,omitempty"`
	DurationMs float64   `json:"duration_ms"`
	Applied    []string  `json:"applied,omitempty"`
}

// Runtime is the AI runtime of one vault: settings, the chat provider (nil
// without one), the cache and cost ledger.
type Runtime struct {
	Settings Settings
	Chat     Provider
	Now      func() time.Time
	// OnInvocation, when set, receives every invocation record (the event
	// bus hooks in here).
	OnInvocation func(Invocation)

	dir    string
	loc    safefs.Loc // dir, reached without following links
	dbOnce sync.Once
	db     *sql.DB
	dbErr  error
	mu     sync.Mutex // serializes reserving and settling in this process (transactions do across processes)
}

// New builds a runtime; dir is the vault's .loci directory (cache, ledger,
// audit log and, for record/replay, fixtures). No network call happens here.
func New(s Settings, dir string) *Runtime { return NewAt(s, safefs.At(dir)) }

// NewAt is New with the directory located from a trusted base (the vault
// root, for the default <vault>/.loci): a link planted at .loci,
// ai-cache.db or ai-audit.jsonl is refused, never written through.
func NewAt(s Settings, loc safefs.Loc) *Runtime {
	s.Defaults()
	dir := loc.Path()
	rt := &Runtime{Settings: s, dir: dir, loc: loc}
	if s.ChatEnabled() {
		var p Provider = NewOpenAI(&rt.Settings)
		if fx := os.Getenv("LOCI_AI_FIXTURES"); os.Getenv("LOCI_AI_RECORD") == "1" || os.Getenv("LOCI_AI_REPLAY") == "1" {
			if fx == "" {
				fx = filepath.Join(dir, "ai-fixtures")
			}
			p = &Recorder{Inner: p, Dir: fx, Replay: os.Getenv("LOCI_AI_REPLAY") == "1"}
		}
		rt.Chat = p
	}
	return rt
}

func (r *Runtime) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Enabled reports whether AI is on (chat or embeddings-only).
func (r *Runtime) Enabled() bool { return r != nil && r.Settings.Enabled() }

// HasChat reports whether a chat provider is configured.
func (r *Runtime) HasChat() bool { return r != nil && r.Chat != nil }

// Close closes the cache database.
func (r *Runtime) Close() {
	if r != nil && r.db != nil {
		r.db.Close()
	}
}

func (r *Runtime) store() (*sql.DB, error) {
	r.dbOnce.Do(func() {
		if err := r.loc.MkdirAll(0o755); err != nil {
			r.dbErr = err
			return
		}
		// SQLite opens these by path: none may be a planted link.
		if err := r.loc.Check("ai-cache.db", "ai-cache.db-wal", "ai-cache.db-shm", "ai-cache.db-journal"); err != nil {
			r.dbErr = err
			return
		}
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dir, "ai-cache.db")+"?"+q.Encode())
		if err == nil {
			_, err = db.Exec(`CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, op TEXT NOT NULL, value BLOB NOT NULL, created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS spend (day TEXT PRIMARY KEY, cost_usd REAL NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, calls INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS held (id INTEGER PRIMARY KEY, day TEXT NOT NULL, usd REAL NOT NULL, expires INTEGER NOT NULL)`)
		}
		r.db, r.dbErr = db, err
	})
	if r.dbErr != nil {
		if safefs.IsDenied(r.dbErr) {
			return nil, r.dbErr
		}
		return nil, errs.Wrap(r.dbErr, errs.CodeInternal, "cannot open the AI cache")
	}
	return r.db, nil
}

// Key hashes the parts of a cache key.
func Key(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CacheGet loads a fresh cached value into dst.
func (r *Runtime) CacheGet(ctx context.Context, key string, dst any) bool {
	db, err := r.store()
	if err != nil {
		return false
	}
	var b []byte
	var created int64
	if err := db.QueryRowContext(ctx, `SELECT value, created FROM cache WHERE key = ?`, key).Scan(&b, &created); err != nil {
		return false
	}
	if r.now().Sub(time.Unix(created, 0)) > r.Settings.CacheTTL {
		db.ExecContext(ctx, `DELETE FROM cache WHERE key = ?`, key)
		return false
	}
	return json.Unmarshal(b, dst) == nil
}

// CachePut stores a value.
func (r *Runtime) CachePut(ctx context.Context, key, op string, v any) {
	db, err := r.store()
	if err != nil {
		return
	}
	b, _ := json.Marshal(v)
	db.ExecContext(ctx, `INSERT OR REPLACE INTO cache (key, op, value, created) VALUES (?, ?, ?, ?)`, key, op, b, r.now().Unix())
	db.ExecContext(ctx, `DELETE FROM cache WHERE created < ?`, r.now().Add(-r.Settings.CacheTTL).Unix())
}

// CacheEntries counts the cached results.
func (r *Runtime) CacheEntries(ctx context.Context) int {
	db, err := r.store()
	if err != nil {
		return 0
	}
	var n int
	db.QueryRowContext(ctx, `SELECT COUNT(*) FROM cache WHERE created >= ?`, r.now().Add(-r.Settings.CacheTTL).Unix()).Scan(&n)
	return n
}

// Spend is the ledger of one UTC day.
type Spend struct {
	Day          string  `json:"day" jsonschema:"UTC day (YYYY-MM-DD)"`
	CostUSD      float64 `json:"cost_usd" jsonschema:"estimated spend so far today"`
	ReservedUSD  float64 `json:"reserved_usd,omitempty" jsonschema:"held for calls in flight: what they may cost at most, booked before each call and settled after it"`
	InputTokens  int     `json:"input_tokens" jsonschema:"prompt tokens today"`
	OutputTokens int     `json:"output_tokens" jsonschema:"completion tokens today"`
	Calls        int     `json:"calls" jsonschema:"provider calls today"`
	CeilingUSD   float64 `json:"ceiling_usd,omitempty" jsonschema:"the daily ceiling (0: none)"`
	ResetAt      string  `json:"reset_at" jsonschema:"when the day's ledger resets (next UTC midnight)"`
}

// holdTTL bounds how long a reservation counts: one left by a process
// that died mid-call stops holding the ceiling after it.
const holdTTL = time.Hour

// Today returns today's ledger.
func (r *Runtime) Today(ctx context.Context) Spend {
	now := r.now().UTC()
	day := now.Format("2006-01-02")
	sp := Spend{Day: day, CeilingUSD: r.Settings.DailyCostUSD, ResetAt: nextDay(now).Format(time.RFC3339)}
	if db, err := r.store(); err == nil {
		db.QueryRowContext(ctx, `SELECT cost_usd, input_tokens, output_tokens, calls FROM spend WHERE day = ?`, day).Scan(&sp.CostUSD, &sp.InputTokens, &sp.OutputTokens, &sp.Calls)
		var held sql.NullFloat64
		db.QueryRowContext(ctx, `SELECT SUM(usd) FROM held WHERE day = ? AND expires > ?`, day, now.Unix()).Scan(&held)
		sp.ReservedUSD = roundUSD(held.Float64)
	}
	return sp
}

func nextDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour) }

// Complete runs a chat call under the daily ceiling: what the call may
// cost at most (the estimated input and the whole output limit, at the
// model's price) is reserved before it, so calls in flight together
// cannot pass the ceiling, and the reservation is replaced by the real
// cost after it.
func (r *Runtime) Complete(ctx context.Context, req Request) (*Response, error) {
	if !r.HasChat() {
		return nil, Unavailable("chat")
	}
	if req.MaxTokens <= 0 || req.MaxTokens > r.Settings.MaxOutputTokens {
		req.MaxTokens = r.Settings.MaxOutputTokens
	}
	estIn := 0
	for _, m := range req.Messages {
		estIn += EstimateTokens(m.Content)
	}
	hold, err := r.reserve(ctx, r.Settings.Cost(r.Settings.Model, estIn, req.MaxTokens))
	if err != nil {
		return nil, err
	}
	resp, err := r.Chat.Complete(ctx, req)
	if err != nil {
		// A call that failed after the server may have billed it is booked
		// at what the provider says (the answer so far, or the most it
		// could cost); any other failed call books nothing.
		var billed Usage
		if resp != nil {
			billed = resp.Usage
			billed.CostUSD = r.Settings.Cost(r.Settings.Model, billed.InputTokens, billed.OutputTokens)
		}
		r.settle(hold, billed)
		var e *errs.Error
		if errors.As(err, &e) || ctx.Err() != nil {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeAIProvider, "the AI provider failed: "+err.Error())
	}
	if resp.Usage.InputTokens == 0 {
		resp.Usage.InputTokens = estIn
	}
	resp.Usage.CostUSD = r.Settings.Cost(r.Settings.Model, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	r.settle(hold, resp.Usage)
	return resp, nil
}

// reservation is a hold on the day's ceiling (id 0: nothing held).
type reservation struct {
	id  int64
	day string
}

// reserve holds usd of today's ceiling for a call, or refuses it with
// ai_quota_exceeded when the day's spend, what calls in flight hold and
// usd would pass the ceiling. Without a ceiling nothing is held. With one,
// a ledger that cannot be opened refuses the call (the ceiling is not
// skipped).
func (r *Runtime) reserve(ctx context.Context, usd float64) (reservation, error) {
	ceiling := r.Settings.DailyCostUSD
	if ceiling <= 0 {
		return reservation{}, nil
	}
	db, err := r.store()
	if err != nil {
		return reservation{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now().UTC()
	day := now.Format("2006-01-02")
	var spent, held float64
	var id int64
	err = immediate(ctx, db, func(conn *sql.Conn) error {
		var sum sql.NullFloat64
		if err := conn.QueryRowContext(ctx, `SELECT COALESCE((SELECT cost_usd FROM spend WHERE day = ?), 0), (SELECT SUM(usd) FROM held WHERE day = ? AND expires > ?)`,
			day, day, now.Unix()).Scan(&spent, &sum); err != nil {
			return err
		}
		held = sum.Float64
		if spent >= ceiling || spent+held+usd > ceiling+1e-9 {
			return nil
		}
		conn.ExecContext(ctx, `DELETE FROM held WHERE expires <= ?`, now.Unix())
		res, err := conn.ExecContext(ctx, `INSERT INTO held (day, usd, expires) VALUES (?, ?, ?)`, day, usd, now.Add(holdTTL).Unix())
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return reservation{}, errs.Wrap(err, errs.CodeInternal, "cannot check the daily AI cost ceiling")
	}
	if id == 0 {
		reset := nextDay(now)
		msg := fmt.Sprintf("the daily AI cost ceiling of $%.4f is reached ($%.4f spent today)", ceiling, spent)
		if spent < ceiling {
			msg = fmt.Sprintf("this call may cost up to $%.4f, which would pass the daily AI cost ceiling of $%.4f ($%.4f spent today, $%.4f held by calls in flight)", usd, ceiling, spent, held)
		}
		e := errs.New(errs.CodeAIQuota, "%s; it resets at %s", msg, reset.Format(time.RFC3339)).
			With("reset_at", reset.Format(time.RFC3339)).With("spent_usd", roundUSD(spent)).
			With("reserved_usd", roundUSD(held)).With("needed_usd", roundUSD(usd)).With("ceiling_usd", ceiling)
		if usd > ceiling {
			// Waiting for the reset does not help: no Retry-After.
			e = errs.New(errs.CodeAIQuota, "this call may cost up to $%.4f, more than the whole daily AI cost ceiling of $%.4f: "+
				"raise ai.daily_cost_usd, or lower ai.max_output_tokens or the scope", usd, ceiling).
				With("spent_usd", roundUSD(spent)).With("needed_usd", roundUSD(usd)).With("ceiling_usd", ceiling)
		} else {
			e = e.With("retry_after_seconds", int(math.Ceil(reset.Sub(now).Seconds())))
		}
		return reservation{}, e
	}
	return reservation{id: id, day: day}, nil
}

// settle books a call's real cost and releases its reservation, in one
// transaction. It runs after the call, whatever the request's context
// says: a cancelled call that was answered still cost its tokens.
func (r *Runtime) settle(h reservation, u Usage) {
	db, err := r.store()
	if err != nil {
		return
	}
	ctx := context.Background()
	r.mu.Lock()
	defer r.mu.Unlock()
	day := h.day
	if day == "" {
		day = r.now().UTC().Format("2006-01-02")
	}
	immediate(ctx, db, func(conn *sql.Conn) error {
		if h.id != 0 {
			if _, err := conn.ExecContext(ctx, `DELETE FROM held WHERE id = ?`, h.id); err != nil {
				return err
			}
		}
		if u.Calls == 0 && u.InputTokens == 0 && u.OutputTokens == 0 {
			return nil // the call failed before anything was billed
		}
		_, err := conn.ExecContext(ctx, `INSERT INTO spend (day, cost_usd, input_tokens, output_tokens, calls) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(day) DO UPDATE SET cost_usd = cost_usd + excluded.cost_usd, input_tokens = input_tokens + excluded.input_tokens,
output_tokens = output_tokens + excluded.output_tokens, calls = calls + excluded.calls`, day, u.CostUSD, u.InputTokens, u.OutputTokens, max(u.Calls, 1))
		return err
	})
}

// immediate runs f in a write transaction taken up front (BEGIN
// IMMEDIATE), so a read and the write that depends on it are not
// interleaved with another process's (loci serve and a CLI call share the
// ledger).
func immediate(ctx context.Context, db *sql.DB, f func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	if err := f(conn); err != nil {
		conn.ExecContext(context.Background(), `ROLLBACK`)
		return err
	}
	_, err = conn.ExecContext(ctx, `COMMIT`)
	if err != nil {
		conn.ExecContext(context.Background(), `ROLLBACK`)
	}
	return err
}

// Record writes an invocation to .loci/ai-audit.jsonl and hands it to
// OnInvocation.
func (r *Runtime) Record(inv Invocation) {
	if r == nil {
		return
	}
	if inv.Paths == nil {
		inv.Paths = []string{}
	}
	if b, err := json.Marshal(inv); err == nil {
		r.loc.Root.AppendLine(r.loc.Name("ai-audit.jsonl"), append(b, '\n'), 0o600)
	}
	if r.OnInvocation != nil {
		r.OnInvocation(inv)
	}
}

// Unavailable is the ai_unavailable error for a missing role.
func Unavailable(role string) *errs.Error {
	msg := "AI is off: configure a chat provider (ai.provider, ai.base_url and ai.model in .loci/config.yaml, or LOCI_AI_PROVIDER / LOCI_AI_BASE_URL / LOCI_AI_MODEL); see docs/ai.md"
	if role == "embeddings" {
		msg = "this needs embeddings: enable an embedding provider (embed.provider) and run `loci index`"
	}
	return errs.New(errs.CodeAIUnavailable, "%s", msg).With("required_role", role)
}

// Dir is where the runtime keeps its cache, ledger and audit log.
func (r *Runtime) Dir() string { return r.dir }
