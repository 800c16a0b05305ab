package read_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/search"
)

func capsAs(t *testing.T, env *ops.Env, p *auth.Principal) *read.Capabilities {
	t.Helper()
	res := opstest.Reg.Call(t.Context(), env, ops.Caller{Surface: "test", Principal: p}, "get_capabilities", json.RawMessage(`{}`))
	if res.Err != nil {
		t.Fatalf("get_capabilities: %s %s", res.Err.Code, res.Err.Message)
	}
	return res.Output.(*read.Capabilities)
}

func TestGetCapabilitiesObsidian(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		".obsidian/app.json": "{}\n",
		"Note.md":            "# Note\n\nbody\n",
	})
	c := opstest.Call[read.Capabilities](t, env, "get_capabilities", `{}`)
	if c.GraphKind != "obsidian" || len(c.LogseqGraphs) != 0 || c.Version != ops.Version || c.Vault == "" {
		t.Errorf("kind, graphs, version: %+v", c)
	}
	if !slices.Contains(c.QueryLanguages, "dataview") {
		t.Errorf("query languages: %#v (want dataview among them)", c.QueryLanguages)
	}
	if !c.Writes.Enabled || c.Writes.ReadOnly || !c.Writes.Allowed || !c.Writes.Destructive {
		t.Errorf("owner with writes on: %+v", c.Writes)
	}
	if c.AI.Enabled || c.AI.Allowed {
		t.Errorf("no AI configured: %+v", c.AI)
	}
	// The fixture embeds with the built-in model: every vector is there.
	if c.Embeddings.Provider == "" || c.Embeddings.Model == "" || !c.Embeddings.Complete || c.Embeddings.Pending != 0 ||
		!slices.Equal(c.Search.Modes, []string{"lexical", "semantic", "hybrid"}) || c.Search.DefaultMode != "hybrid" {
		t.Errorf("complete vectors: %+v %+v", c.Embeddings, c.Search)
	}
	if c.Limits.QueryMaxBytes != search.MaxQueryBytes || c.Limits.QueryMaxTerms != search.MaxTerms ||
		c.Limits.MaxResultBytes != ops.DefaultMaxResultBytes || c.Limits.Rates != nil || len(c.Limits.PageSizes) == 0 {
		t.Errorf("limits: %+v", c.Limits)
	}
	if c.Root != opstest.Root(env) || c.IndexPath == "" || len(c.Scopes) != len(auth.AllScopes) {
		t.Errorf("the owner sees the server paths and every scope: %+v", c)
	}
	// A principal without admin: no server paths, its own scopes, no writes.
	agent := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}
	a := capsAs(t, env, agent)
	if a.Root != "" || a.IndexPath != "" || !slices.Equal(a.Scopes, []string{"read"}) || a.Writes.Allowed || !a.Writes.Enabled {
		t.Errorf("read-only principal: %+v", a)
	}
	admin := &auth.Principal{Name: "ops", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeAdmin}, Via: auth.ViaToken}
	if c := capsAs(t, env, admin); c.Root == "" {
		t.Errorf("admin sees the root: %+v", c)
	}
	// Rate limits, when configured.
	env.Limits = ops.NewLimiter(ops.LimitSettings{Read: ops.Rate{PerMinute: 60}, Concurrency: 4}, nil)
	if c := capsAs(t, env, nil); c.Limits.Rates == nil || c.Limits.Rates.ReadPerMinute != 60 || c.Limits.Rates.Concurrency != 4 {
		t.Errorf("rates: %+v", c.Limits.Rates)
	}
}

func TestGetCapabilitiesAI(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"Note.md": "# Note\n"})
	// Nothing is sent to the provider: get_capabilities only reads the settings.
	env.AI = ai.New(ai.Settings{Provider: "openai-compatible", BaseURL: "http://127.0.0.1:9/v1", Model: "fake-1", Timeout: time.Second}, filepath.Join(t.TempDir(), ".loci"))
	c := opstest.Call[read.Capabilities](t, env, "get_capabilities", `{}`)
	if !c.AI.Enabled || !c.AI.Chat || !c.AI.Allowed || c.AI.Provider != "openai-compatible" {
		t.Errorf("AI on: %+v", c.AI)
	}
	reader := &auth.Principal{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}
	if a := capsAs(t, env, reader); !a.AI.Enabled || a.AI.Allowed {
		t.Errorf("AI on, caller without the ai scope: %+v", a.AI)
	}
}

func TestGetCapabilitiesLogseqAndPlain(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn": "{:meta/version 1}\n",
		"pages/Loci.md":     "- Top\n",
	})
	c := opstest.Call[read.Capabilities](t, env, "get_capabilities", `{}`)
	if c.GraphKind != "logseq" || !slices.Equal(c.LogseqGraphs, []string{""}) {
		t.Errorf("logseq graph: %q %q", c.GraphKind, c.LogseqGraphs)
	}
	if c.Writes.Enabled || c.Writes.Allowed {
		t.Errorf("writes are off by default: %+v", c.Writes)
	}
	plain := opstest.FixtureEnv(t, map[string]string{
		"Note.md":                 "# Note\n",
		"graph/logseq/config.edn": "{:meta/version 1}\n",
	})
	c = opstest.Call[read.Capabilities](t, plain, "get_capabilities", `{}`)
	if c.GraphKind != "plain" || !slices.Equal(c.LogseqGraphs, []string{"graph"}) {
		t.Errorf("plain folder with a graph inside: %q %q", c.GraphKind, c.LogseqGraphs)
	}
	opstest.WantCode(t, plain, "get_capabilities", `{"vault":"nope"}`, errs.CodeVaultNotFound)
}

func TestGetCapabilitiesReadOnly(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Note.md": "# Note\n"})
	env.Writes.ReadOnly = true
	c := opstest.Call[read.Capabilities](t, env, "get_capabilities", `{}`)
	if !c.Writes.Enabled || !c.Writes.ReadOnly || c.Writes.Allowed || c.Writes.Destructive {
		t.Errorf("read-only mode: %+v", c.Writes)
	}
	opstest.WantCode(t, env, "write_note", `{"path":"x.md","content":"x","apply":true}`, errs.CodeWritesDisabled)
}

// TestCapabilityPageSizes checks the page sizes reported against the
// operations' own validation: max passes, max+1 is refused.
func TestCapabilityPageSizes(t *testing.T) {
	base := map[string]string{"search_notes": `"query":"x",`, "list_frontmatter_values": `"key":"status",`}
	for _, ps := range read.PageSizes() {
		op, ok := opstest.Reg.Get(ps.Operation)
		if !ok {
			t.Fatalf("no operation %s", ps.Operation)
		}
		if _, err := op.Decode(json.RawMessage(fmt.Sprintf(`{%s"limit":%d}`, base[ps.Operation], ps.Max))); err != nil {
			t.Errorf("%s limit %d: %v", ps.Operation, ps.Max, err)
		}
		if _, err := op.Decode(json.RawMessage(fmt.Sprintf(`{%s"limit":%d}`, base[ps.Operation], ps.Max+1))); errs.As(err) == nil || errs.As(err).Code != errs.CodeInvalidInput {
			t.Errorf("%s limit %d: want validation_failed, got %v", ps.Operation, ps.Max+1, err)
		}
	}
}
