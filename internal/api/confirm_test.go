package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestConfirmationRoutes: GET /v1/confirmations and POST
// /v1/confirmations/{id} need admin; the agent's call answers 428, a bad
// id 409; rate_limited carries Retry-After.
func TestConfirmationRoutes(t *testing.T) {
	frozen := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n", "B.md": "# B\n"})
	env.Limits = ops.NewLimiter(ops.LimitSettings{Read: ops.Rate{PerMinute: 2, Burst: 1}}, func() time.Time { return frozen })
	principals := map[string]*auth.Principal{
		"editor": {Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}, Via: auth.ViaToken, Confirm: auth.PolicyConfirm},
		"human":  {Name: "human", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeAdmin}, Via: auth.ViaToken},
	}
	h := api.New(catalog.All(), env, api.Options{Version: "test"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), principals[r.Header.Get("X-As")])))
	}))
	defer srv.Close()
	do := func(as, method, path, body string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-As", as)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %s", method, path, b)
		}
		return resp.StatusCode, resp.Header, m
	}
	errOf := func(m map[string]any) (string, map[string]any) {
		e, _ := m["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		c, _ := e["code"].(string)
		return c, d
	}

	st, _, m := do("editor", "POST", "/v1/ops/delete_note", `{"path":"A.md","apply":true}`)
	code, d := errOf(m)
	if st != 428 || code != "confirmation_required" {
		t.Fatalf("delete as editor: %d %v", st, m)
	}
	id := d["confirmation_id"].(string)
	// The agent cannot list or decide (no admin), nor reach it through /v1/ops.
	if st, _, _ := do("editor", "GET", "/v1/confirmations", ""); st != 403 {
		t.Errorf("editor lists: %d", st)
	}
	if st, _, _ := do("editor", "POST", "/v1/confirmations/"+id, `{"decision":"confirm"}`); st != 403 {
		t.Errorf("editor confirms: %d", st)
	}
	if st, _, m := do("editor", "POST", "/v1/ops/confirm", `{"id":"`+id+`"}`); st != 404 {
		t.Errorf("an op to confirm: %d %v", st, m)
	}
	st, _, m = do("human", "GET", "/v1/confirmations", "")
	list, _ := m["result"].(map[string]any)["confirmations"].([]any)
	if st != 200 || len(list) != 1 || list[0].(map[string]any)["id"] != id || !strings.Contains(list[0].(map[string]any)["summary"].(string), "A.md") {
		t.Fatalf("list: %d %v", st, m)
	}
	if st, _, m := do("human", "GET", "/v1/confirmations/"+id, ""); st != 200 || m["result"].(map[string]any)["state"] != "pending" {
		t.Errorf("get one: %d %v", st, m)
	}
	if st, _, m := do("human", "POST", "/v1/confirmations/"+id, `{"decision":"yes"}`); st != 400 {
		t.Errorf("bad decision: %d %v", st, m)
	}
	if st, _, m := do("human", "POST", "/v1/confirmations/"+id, `{"decision":"deny"}`); st != 200 || m["result"].(map[string]any)["state"] != "denied" {
		t.Errorf("deny: %d %v", st, m)
	}
	st, _, m = do("editor", "POST", "/v1/ops/delete_note", `{"path":"A.md","apply":true,"confirmation_id":"`+id+`"}`)
	if code, d := errOf(m); st != 409 || code != "confirmation_invalid" || d["reason"] != "denied" {
		t.Errorf("retry after deny: %d %v", st, m)
	}
	if st, _, _ := do("human", "POST", "/v1/confirmations/cf_nope", `{"decision":"confirm"}`); st != 409 {
		t.Errorf("unknown id: %d", st)
	}
	// Over the read limit (1 burst, 2 a minute): 429 with Retry-After.
	do("editor", "GET", "/v1/status", "")
	st, hd, m := do("editor", "GET", "/v1/status", "")
	if code, d := errOf(m); st != 429 || code != "rate_limited" || hd.Get("Retry-After") != "30" || d["class"] != "read" {
		t.Errorf("over the limit: %d %q %v", st, hd.Get("Retry-After"), m)
	}
}
