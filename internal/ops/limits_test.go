package ops_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func agent(name string, scopes ...auth.Scope) *auth.Principal {
	return &auth.Principal{Name: name, Scopes: scopes, Via: auth.ViaToken}
}

func callAs(env *ops.Env, p *auth.Principal, name, input string) ops.Result {
	return opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "rest", Principal: p}, name, json.RawMessage(input))
}

func wantErr(t *testing.T, res ops.Result, code string) map[string]any {
	t.Helper()
	if res.Err == nil {
		b, _ := json.Marshal(res.Output)
		t.Fatalf("want %s, got a result: %.300s", code, b)
	}
	if res.Err.Code != code {
		t.Fatalf("want %s, got %s: %s %v", code, res.Err.Code, res.Err.Message, res.Err.Details)
	}
	var d map[string]any
	b, _ := json.Marshal(res.Err.Details)
	json.Unmarshal(b, &d)
	return d
}

func wantOK(t *testing.T, res ops.Result) {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("want success, got %s: %s %v", res.Err.Code, res.Err.Message, res.Err.Details)
	}
}

// TestRateLimits: a bucket per principal and class, refilled on the
// injected clock; over it rate_limited with the limit and the wait.
func TestRateLimits(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n"})
	clk := newClock()
	env.Limits = ops.NewLimiter(ops.LimitSettings{Read: ops.Rate{PerMinute: 6, Burst: 2}, Write: ops.Rate{PerMinute: 60}}, clk.Now)
	bot := agent("bot", auth.ScopeRead, auth.ScopeWrite)
	other := agent("other", auth.ScopeRead)

	wantOK(t, callAs(env, bot, "read_note", `{"path":"A.md"}`))
	wantOK(t, callAs(env, bot, "search_notes", `{"query":"A"}`))
	d := wantErr(t, callAs(env, bot, "read_note", `{"path":"A.md"}`), errs.CodeRateLimited)
	// 6 a minute: one token every 10 s.
	want := map[string]any{"principal": "bot", "class": "read", "reason": "rate", "limit_per_minute": 6.0, "burst": 2.0, "retry_after_seconds": 10.0}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("details[%s] = %v, want %v (%v)", k, d[k], v, d)
		}
	}
	// Another principal has its own bucket; the owner in process (nil
	// principal: the CLI, stdio) is never limited.
	wantOK(t, callAs(env, other, "read_note", `{"path":"A.md"}`))
	for range 5 {
		wantOK(t, callAs(env, nil, "read_note", `{"path":"A.md"}`))
	}
	// The write class is a bucket of its own (burst 60/6 = 10).
	for range 10 {
		wantOK(t, callAs(env, bot, "capture_note", `{"content":"x"}`))
	}
	d = wantErr(t, callAs(env, bot, "capture_note", `{"content":"y"}`), errs.CodeRateLimited)
	if d["class"] != "write" || d["burst"] != 10.0 || d["retry_after_seconds"] != 1.0 {
		t.Errorf("write details: %v", d)
	}
	// The same name authenticated another way (a JWT) has its own bucket.
	jwtBot := &auth.Principal{Name: "bot", Scopes: bot.Scopes, Via: auth.ViaJWT}
	wantOK(t, callAs(env, jwtBot, "read_note", `{"path":"A.md"}`))

	// 9 s later still nothing; at 10 s one call.
	clk.Add(9 * time.Second)
	d = wantErr(t, callAs(env, bot, "read_note", `{"path":"A.md"}`), errs.CodeRateLimited)
	if d["retry_after_seconds"] != 1.0 {
		t.Errorf("after 9 s: %v", d)
	}
	clk.Add(time.Second)
	wantOK(t, callAs(env, bot, "read_note", `{"path":"A.md"}`))
	wantErr(t, callAs(env, bot, "read_note", `{"path":"A.md"}`), errs.CodeRateLimited)
	// Refused calls are counted for metrics.
	stats := env.Limits.Rejections()
	if len(stats) != 2 || stats[0] != (ops.LimitStat{Principal: "bot", Class: "read", Reason: "rate", Rejected: 3}) ||
		stats[1] != (ops.LimitStat{Principal: "bot", Class: "write", Reason: "rate", Rejected: 1}) {
		t.Errorf("rejections: %+v", stats)
	}
	// A refused call costs nothing else: a forbidden one is refused
	// before it takes a token.
	wantErr(t, callAs(env, other, "capture_note", `{"content":"z"}`), errs.CodeForbidden)
}

// TestLimitClasses: destructive counts as write, admin as read, AI as ai.
func TestLimitClasses(t *testing.T) {
	for name, want := range map[string]string{
		"delete_note": ops.ClassWrite, "relocate_note": ops.ClassWrite, "write_note": ops.ClassWrite, "capture_note": ops.ClassWrite,
		"search_notes": ops.ClassRead, "index_status": ops.ClassRead, "ai_ask": ops.ClassAI,
	} {
		op, ok := opstest.Reg.Get(name)
		if !ok {
			t.Fatalf("no op %s", name)
		}
		if got := ops.LimitClass(op); got != want {
			t.Errorf("%s: class %s, want %s", name, got, want)
		}
	}
	admin := &ops.Op{Name: "x", Scope: auth.ScopeAdmin}
	if got := ops.LimitClass(admin); got != ops.ClassRead {
		t.Errorf("admin: %s", got)
	}
}

// blockingReg is a registry with one read operation whose handler waits
// on a channel.
func blockingReg(entered chan<- struct{}, release <-chan struct{}) *ops.Registry {
	type in struct{}
	type out struct {
		OK bool `json:"ok"`
	}
	reg := ops.NewRegistry()
	reg.Register("test", ops.Def[in, out]{Name: "wait", Description: "waits", Annotations: ops.Annotations{ReadOnly: true},
		Handler: func(ctx context.Context, env *ops.Env, _ *in) (*out, error) {
			entered <- struct{}{}
			<-release
			return &out{OK: true}, nil
		}})
	return reg
}

// TestConcurrencyCap: a principal with as many calls in flight as its cap
// is refused at once (no waiting) until one finishes; others are not.
func TestConcurrencyCap(t *testing.T) {
	env := &ops.Env{Limits: ops.NewLimiter(ops.LimitSettings{Concurrency: 2}, nil)}
	entered, release := make(chan struct{}), make(chan struct{})
	reg := blockingReg(entered, release)
	bot, other := agent("bot", auth.ScopeRead), agent("other", auth.ScopeRead)
	call := func(p *auth.Principal) ops.Result {
		return reg.Call(context.Background(), env, ops.Caller{Surface: "mcp", Principal: p}, "wait", json.RawMessage(`{}`))
	}
	results := make(chan ops.Result, 3)
	for range 2 {
		go func() { results <- call(bot) }()
		<-entered
	}
	if n := env.Limits.InFlight()["bot|token"]; n != 2 {
		t.Errorf("in flight: %d", n)
	}
	d := wantErr(t, call(bot), errs.CodeRateLimited)
	if d["reason"] != "concurrency" || d["concurrency"] != 2.0 || d["principal"] != "bot" {
		t.Errorf("details: %v", d)
	}
	// Another principal, and the in-process owner, are not held up.
	go func() { results <- call(other) }()
	<-entered
	go func() {
		// The owner in process (nil principal) is never capped.
		results <- call(nil)
	}()
	<-entered
	for range 4 {
		release <- struct{}{}
		wantOK(t, <-results)
	}
	// The slots came back.
	go func() { results <- call(bot) }()
	<-entered
	release <- struct{}{}
	wantOK(t, <-results)
	if n := len(env.Limits.InFlight()); n != 0 {
		t.Errorf("in flight after all finished: %v", env.Limits.InFlight())
	}
	if st := env.Limits.Rejections(); len(st) != 1 || st[0].Reason != "concurrency" {
		t.Errorf("rejections: %+v", st)
	}
}
