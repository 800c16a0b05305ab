package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/aiops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

func aiAPI(t *testing.T, configured bool) (*httptest.Server, *aitest.Server) {
	t.Helper()
	ts, fake, _ := aiAPIWith(t, configured, nil)
	return ts, fake
}

// aiAPIWith is aiAPI with the AI runtime's settings changed by mut and the
// runtime returned.
func aiAPIWith(t *testing.T, configured bool, mut func(*ai.Settings)) (*httptest.Server, *aitest.Server, *ai.Runtime) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, map[string]string{"A.md": "# A\n\nThe answer is 42.\n"})
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := aitest.New()
	t.Cleanup(fake.Close)
	etag := regexp.MustCompile(`etag="([0-9a-f]+)"`)
	fake.Handler = func(req aitest.Request) aitest.Reply {
		e := etag.FindStringSubmatch(req.Last())[1]
		return aitest.Reply{ChunkDelay: time.Millisecond, Content: aitest.JSON(map[string]any{"supported": true, "answer": "The answer is 42.",
			"citations": []any{map[string]any{"path": "A.md", "etag": e, "line": 3}}})}
	}
	if configured {
		s := ai.Settings{Provider: "openai-compatible", BaseURL: fake.BaseURL(), Model: "fake"}
		if mut != nil {
			mut(&s)
		}
		env.AI = ai.New(s, filepath.Join(t.TempDir(), ".loci"))
	}
	ts := httptest.NewServer(api.New(catalog.All(), env, api.Options{}))
	t.Cleanup(ts.Close)
	return ts, fake, env.AI
}

func TestAIUnavailableOverREST(t *testing.T) {
	ts, fake := aiAPI(t, false)
	res, err := http.Post(ts.URL+"/v1/ai/ask", "application/json", strings.NewReader(`{"question": "What is the answer?"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		OK    bool `json:"ok"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.NewDecoder(res.Body).Decode(&env)
	if res.StatusCode != 503 || env.Error.Code != "ai_unavailable" || fake.Calls() != 0 {
		t.Errorf("%d %+v calls %d", res.StatusCode, env, fake.Calls())
	}
}

func TestAIAskSSE(t *testing.T) {
	ts, _ := aiAPI(t, true)
	body := `{"question": "What is the answer?", "paths": ["A.md"]}`
	// Plain JSON first (through the alias), then the same call streamed.
	res, err := http.Post(ts.URL+"/v1/ai/ask", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var plain struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Data   json.RawMessage `json:"data"`
	}
	json.NewDecoder(res.Body).Decode(&plain)
	res.Body.Close()
	if res.StatusCode != 200 || !plain.OK {
		t.Fatalf("plain %d %+v", res.StatusCode, plain)
	}
	req, _ := http.NewRequest("POST", ts.URL+"/v1/ops/ai_ask", strings.NewReader(strings.Replace(body, "}", `, "cache": false}`, 1)))
	req.Header.Set("Accept", "text/event-stream")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := map[string]int{}
	var final aiops.AIAskOut
	sc := bufio.NewScanner(res.Body)
	var ev string
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			ev = e
			events[ev]++
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && ev == "ai.complete" {
			json.Unmarshal([]byte(d), &final)
		}
	}
	if events["ai.partial"] == 0 || events["ai.citation"] != 1 || events["ai.complete"] != 1 {
		t.Errorf("events %v", events)
	}
	if final.Answer != "The answer is 42." || len(final.Citations) != 1 || final.Citations[0].Snippet != "The answer is 42." {
		t.Errorf("final %+v", final)
	}
}

// TestAIQuotaRetryAfter: ai_quota_exceeded answers 429 with Retry-After,
// the seconds until the UTC day (and the ledger) resets, also in
// details.retry_after_seconds.
func TestAIQuotaRetryAfter(t *testing.T) {
	// A call is about 350 input tokens at $1,000 per million: the first
	// fits the $0.50 ceiling, the second would pass it.
	ts, fake, rt := aiAPIWith(t, true, func(s *ai.Settings) {
		s.DailyCostUSD = 0.5
		s.Prices = map[string]ai.Price{"fake": {InputPerMTok: 1000}}
	})
	rt.Now = func() time.Time { return time.Date(2026, 11, 22, 23, 58, 30, 0, time.UTC) }
	ask := func() *http.Response {
		res, err := http.Post(ts.URL+"/v1/ai/ask", "application/json", strings.NewReader(`{"question": "What is the answer?", "paths": ["A.md"], "cache": false}`))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ask(); res.StatusCode != 200 {
		t.Fatalf("first call: %d", res.StatusCode)
	}
	res := ask()
	defer res.Body.Close()
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	json.NewDecoder(res.Body).Decode(&env)
	if res.StatusCode != 429 || env.Error.Code != "ai_quota_exceeded" || res.Header.Get("Retry-After") != "90" ||
		env.Error.Details["retry_after_seconds"] != float64(90) || fake.Calls() != 1 {
		t.Errorf("%d %q %+v calls %d", res.StatusCode, res.Header.Get("Retry-After"), env.Error, fake.Calls())
	}
}

// TestAIStatusGET: GET (and HEAD) /v1/ai/status runs ai_status, as GET
// /v1/status runs index_status; the AI operations that may call the model
// stay POST only.
func TestAIStatusGET(t *testing.T) {
	ts, fake := aiAPI(t, true)
	res, err := http.Get(ts.URL + "/v1/ai/status?vault=vault")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		OK     bool `json:"ok"`
		Result struct {
			Enabled bool   `json:"enabled"`
			Model   string `json:"model"`
		} `json:"result"`
	}
	json.NewDecoder(res.Body).Decode(&st)
	res.Body.Close()
	if res.StatusCode != 200 || !st.OK || !st.Result.Enabled || st.Result.Model != "fake" {
		t.Errorf("GET /v1/ai/status: %d %+v", res.StatusCode, st)
	}
	if res, err := http.Head(ts.URL + "/v1/ai/status"); err != nil || res.StatusCode != 200 {
		t.Errorf("HEAD: %v %v", res, err)
	}
	res, err = http.Get(ts.URL + "/v1/ai/ask?question=x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || res.Header.Get("Allow") != "POST" || fake.Calls() != 0 {
		t.Errorf("GET /v1/ai/ask: %d %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

// TestAIIdempotencyKeyHeader: over /v1/ai/<op> too, streamed or not.
func TestAIIdempotencyKeyHeader(t *testing.T) {
	ts, fake := aiAPI(t, true)
	post := func(body string, sse bool) string {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/v1/ai/ask", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "ask-1")
		if sse {
			req.Header.Set("Accept", "text/event-stream")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	body := `{"question": "What is the answer?", "paths": ["A.md"], "cache": false}`
	post(body, false)
	if out := post(body, true); fake.Calls() != 1 || !strings.Contains(out, "idempotent_replay") {
		t.Errorf("calls %d: %s", fake.Calls(), out)
	}
	if out := post(strings.Replace(body, "answer", "question", 1), false); !strings.Contains(out, "idempotency_key_reused") {
		t.Errorf("reused: %s", out)
	}
}
