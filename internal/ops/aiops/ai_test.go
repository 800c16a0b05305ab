package aiops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/aiops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/write"
)

var aiFiles = map[string]string{
	"Projects/Atlas.md":  "---\ntags: [project]\n---\n# Atlas\n\nAtlas is a search engine for notes.\n\n## Goals\n\n- Ship safe writes by June.\n- Keep the index local.\n",
	"Projects/Beacon.md": "# Beacon\n\nBeacon builds dashboards. It depends on [[Atlas]].\n",
	"Private/Diary.md":   "# Diary\n\nTOP-SECRET-DIARY-TEXT\n",
	"Ideas/Zettel.md":    "# Zettel\n\nSmall linked notes. #idea\n",
}

// aiEnv is a vault with the AI runtime pointed at a fake provider.
func aiEnv(t *testing.T, mut func(*ai.Settings)) (*ops.Env, *aitest.Server) {
	t.Helper()
	return aiEnvWith(t, aiFiles, mut)
}

// aiEnvWith is aiEnv over other files.
func aiEnvWith(t *testing.T, files map[string]string, mut func(*ai.Settings)) (*ops.Env, *aitest.Server) {
	t.Helper()
	env := opstest.FixtureEnv(t, files)
	srv := aitest.New()
	t.Cleanup(srv.Close)
	s := ai.Settings{Provider: "openai-compatible", BaseURL: srv.BaseURL(), Model: "fake-1", Timeout: 5 * time.Second, DenyGlobs: []string{"Private/**"}}
	if mut != nil {
		mut(&s)
	}
	env.AI = ai.New(s, filepath.Join(t.TempDir(), ".loci"))
	return env, srv
}

func TestAIOffByDefault(t *testing.T) {
	env := opstest.FixtureEnv(t, aiFiles)
	for _, op := range opstest.Reg.List() {
		if op.Toolset != ops.ToolsetAI {
			continue
		}
		if env.Advertised(op) {
			t.Errorf("%s advertised with AI off", op.Name)
		}
		if op.Name == "ai_status" {
			if out := opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{}`); out.Enabled {
				t.Error("ai_status says enabled")
			}
			continue
		}
		d := opstest.WantCode(t, env, op.Name, op.Example, errs.CodeAIUnavailable)
		if d["required_role"] != "chat" {
			t.Errorf("%s: details %v", op.Name, d)
		}
	}
}

func TestAIEmbeddingsOnly(t *testing.T) {
	env, srv := aiEnv(t, func(s *ai.Settings) { s.Provider = "embeddings" })
	st := opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{}`)
	if !st.Enabled || st.Chat || strings.Join(st.Operations, ",") != "ai_relate,ai_status,ai_toc" {
		t.Errorf("status %+v", st)
	}
	for _, name := range []string{"ai_ask", "ai_summarize", "ai_tag"} {
		op, _ := opstest.Reg.Get(name)
		if env.Advertised(op) {
			t.Errorf("%s advertised without chat", name)
		}
		opstest.WantCode(t, env, name, op.Example, errs.CodeAIUnavailable)
	}
	toc := opstest.Call[aiops.AITocOut](t, env, "ai_toc", `{"note": "Projects/Atlas.md"}`)
	if len(toc.Entries) != 2 || toc.Entries[1].Anchor != "Projects/Atlas#Goals" || toc.Usage.CostUSD != 0 || !strings.Contains(toc.Markdown, "[[Projects/Atlas#Goals|Goals]]") {
		t.Errorf("toc %+v", toc)
	}
	rel := opstest.Call[aiops.AIRelateOut](t, env, "ai_relate", `{"path": "Projects/Beacon.md", "propose_links": true}`)
	for _, r := range rel.Relations {
		if r.Source != "heuristic" || r.Path == "Private/Diary.md" {
			t.Errorf("relation %+v", r)
		}
		if r.Path == "Projects/Atlas.md" && (r.Label != "cites" || !r.Linked) {
			t.Errorf("Beacon links to Atlas: %+v", r)
		}
	}
	if srv.Calls() != 0 {
		t.Errorf("%d provider calls without a chat provider", srv.Calls())
	}
}

func askHandler(req aitest.Request) aitest.Reply {
	ns := opstest.PromptNotes(req)
	for _, n := range ns {
		if n[0] == "Projects/Atlas.md" {
			return aitest.Reply{Content: aitest.JSON(map[string]any{"supported": true, "answer": "Ship safe writes by June.", "confidence": 0.9,
				"citations": []any{opstest.Cite(n[0], n[1], 10, 10)}, "follow_ups": []string{"Who works on Atlas?"}})}
		}
	}
	return aitest.Reply{Content: `{"supported": false, "answer": "", "citations": []}`}
}

func TestAIAskGroundedAndCached(t *testing.T) {
	env, srv := aiEnv(t, func(s *ai.Settings) {
		s.Prices = map[string]ai.Price{"fake-*": {InputPerMTok: 1, OutputPerMTok: 2}}
	})
	srv.Handler = askHandler
	events := []ops.Event{}
	var mu sync.Mutex
	env.SubscribeEvents(func(e ops.Event) { mu.Lock(); events = append(events, e); mu.Unlock() })
	in := `{"question": "What are the goals of Atlas?", "paths": ["Projects/Atlas.md", "Private/Diary.md"]}`
	out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if !out.Supported || out.Answer != "Ship safe writes by June." || len(out.Citations) != 1 {
		t.Fatalf("ask %+v", out)
	}
	c := out.Citations[0]
	if c.Snippet != "- Ship safe writes by June." || c.Line != 10 || len(c.Etag) != 64 {
		t.Errorf("citation %+v", c)
	}
	if out.Usage.Calls != 1 || out.Usage.CostUSD <= 0 || !warned(out.Warnings, "globs_excluded") {
		t.Errorf("usage %+v warnings %+v", out.Usage, out.Warnings)
	}
	for _, r := range srv.Requests {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "TOP-SECRET") {
				t.Fatal("a denied note reached the provider")
			}
		}
	}
	again := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if srv.Calls() != 1 || again.Usage.CostUSD != 0 || !warned(again.Warnings, "ai_cache_hit") || again.Answer != out.Answer {
		t.Errorf("cache: calls %d, %+v", srv.Calls(), again)
	}
	// An edit changes the fingerprint: no stale cache.
	os.WriteFile(filepath.Join(opstest.Root(env), "Projects/Atlas.md"), []byte(aiFiles["Projects/Atlas.md"]+"\nMore.\n"), 0o644)
	opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if srv.Calls() != 2 {
		t.Errorf("edited note served from cache (calls %d)", srv.Calls())
	}
	// Audit: counts and paths, never the prompt or the answer.
	b, err := os.ReadFile(filepath.Join(env.AI.Dir(), "ai-audit.jsonl"))
	if err != nil || strings.Contains(string(b), "Ship safe") || !strings.Contains(string(b), `"operation":"ai_ask"`) {
		t.Errorf("audit %s %v", b, err)
	}
	mu.Lock()
	n := 0
	for _, e := range events {
		if e.Kind == ops.EventAIInvocation {
			n++
		}
	}
	mu.Unlock()
	if n != 3 {
		t.Errorf("%d ai.invocation events, want 3", n)
	}
	if sp := env.AI.Today(context.Background()); sp.Calls != 2 || sp.CostUSD <= 0 {
		t.Errorf("ledger %+v", sp)
	}
}

func TestAIAskUnsupportedAndBadCitations(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Script(aitest.Reply{Content: `{"supported": false, "answer": "", "citations": []}`})
	out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", `{"question": "Who won the 1998 world cup?", "paths": ["Ideas/Zettel.md"]}`)
	if out.Answer != aiops.IDontKnow || out.Supported || !warned(out.Warnings, "unsupported_question") {
		t.Errorf("%+v", out)
	}
	// Every citation wrong: a path outside the scope, a line past the end,
	// an unknown heading, a made-up etag.
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"supported": true, "answer": "Made up.", "citations": []any{
			opstest.Cite("Private/Diary.md", n[1], 1, 1), opstest.Cite(n[0], n[1], 99, 120),
			map[string]any{"path": n[0], "etag": n[1], "anchor": "No such heading"}, opstest.Cite(n[0], strings.Repeat("0", 64), 1, 1)}})}
	}
	d := opstest.WantCode(t, env, "ai_ask", `{"question": "What is a zettel?", "paths": ["Ideas/Zettel.md"], "cache": false}`, errs.CodeAIGrounding)
	if dropped, _ := d["dropped"].([]any); len(dropped) != 4 {
		t.Errorf("dropped %v", d)
	}
}

func TestAIProviderErrors(t *testing.T) {
	good := func(req aitest.Request) aitest.Reply { return askHandler(req) }
	in := `{"question": "Goals of Atlas?", "paths": ["Projects/Atlas.md"], "cache": false}`
	t.Run("repair", func(t *testing.T) {
		env, srv := aiEnv(t, nil)
		srv.Script(aitest.Reply{Content: "Sure! Here is the answer: {not json"})
		srv.Handler = good
		out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
		if !out.Supported || out.Usage.Calls != 2 || srv.Calls() != 2 {
			t.Errorf("repair: %+v", out)
		}
		if !strings.Contains(srv.Requests[1].Last(), "not valid") {
			t.Error("no repair prompt")
		}
	})
	t.Run("malformed twice", func(t *testing.T) {
		env, srv := aiEnv(t, nil)
		srv.Script(aitest.Reply{Content: "nope"}, aitest.Reply{Content: `{"answer": 3}`})
		opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIProvider)
	})
	t.Run("5xx retried", func(t *testing.T) {
		env, srv := aiEnv(t, nil)
		srv.Script(aitest.Reply{Status: 502, Content: "bad gateway"})
		srv.Handler = good
		if out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in); !out.Supported || srv.Calls() != 2 {
			t.Errorf("retry: calls %d", srv.Calls())
		}
	})
	t.Run("5xx exhausted", func(t *testing.T) {
		env, srv := aiEnv(t, nil)
		srv.Handler = func(aitest.Request) aitest.Reply { return aitest.Reply{Status: 503, Content: "overloaded"} }
		d := opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIProvider)
		if d["upstream_status"] != float64(503) || srv.Calls() != 3 {
			t.Errorf("details %v calls %d", d, srv.Calls())
		}
	})
	t.Run("4xx not retried", func(t *testing.T) {
		env, srv := aiEnv(t, func(s *ai.Settings) { s.Structured = "json" })
		srv.Handler = func(aitest.Request) aitest.Reply { return aitest.Reply{Status: 401, Content: "bad key"} }
		opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIProvider)
		if srv.Calls() != 1 {
			t.Errorf("calls %d", srv.Calls())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		env, srv := aiEnv(t, func(s *ai.Settings) { s.Timeout = 150 * time.Millisecond; s.MaxRetries = -1 })
		srv.Script(aitest.Reply{Delay: 2 * time.Second, Content: "{}"})
		d := opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIProvider)
		if d["timeout"] != true {
			t.Errorf("details %v", d)
		}
	})
	t.Run("stalled stream", func(t *testing.T) {
		env, srv := aiEnv(t, func(s *ai.Settings) { s.Timeout = 100 * time.Millisecond })
		srv.Handler = func(req aitest.Request) aitest.Reply {
			r := askHandler(req)
			r.ChunkDelay = 300 * time.Millisecond
			return r
		}
		ctx := ops.WithStream(context.Background(), func(string, any) {})
		res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "ai_ask", json.RawMessage(in))
		if res.Err == nil || res.Err.Code != errs.CodeAIProvider || res.Err.Details["timeout"] != true {
			t.Errorf("%+v", res.Err)
		}
	})
	t.Run("slow but steady stream", func(t *testing.T) {
		env, srv := aiEnv(t, func(s *ai.Settings) { s.Timeout = 200 * time.Millisecond })
		srv.Handler = func(req aitest.Request) aitest.Reply {
			r := askHandler(req)
			r.ChunkDelay = 20 * time.Millisecond // ~20 chunks: longer than the timeout in total
			return r
		}
		ctx := ops.WithStream(context.Background(), func(string, any) {})
		res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "ai_ask", json.RawMessage(in))
		if res.Err != nil || !res.Output.(*aiops.AIAskOut).Supported {
			t.Errorf("%+v", res.Err)
		}
	})
	t.Run("input too large", func(t *testing.T) {
		// The prompt alone is about 140 tokens and Atlas 77: 200 leaves
		// 200 - 200/8 - 140 = 35 for notes.
		env, srv := aiEnv(t, func(s *ai.Settings) { s.MaxInputTokens = 200 })
		srv.Handler = good
		d := opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIInputTooLarge)
		if d["path"] != "Projects/Atlas.md" || srv.Calls() != 0 {
			t.Errorf("details %v calls %d", d, srv.Calls())
		}
	})
	t.Run("json_schema refused", func(t *testing.T) {
		env, srv := aiEnv(t, nil)
		srv.Handler = func(req aitest.Request) aitest.Reply {
			r := askHandler(req)
			r.RejectJSONSchema = true
			return r
		}
		if out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in); !out.Supported {
			t.Errorf("%+v", out)
		}
		if srv.Requests[0].ResponseFormat == nil || srv.Requests[len(srv.Requests)-1].ResponseFormat != nil {
			t.Error("no fallback to plain JSON")
		}
	})
	t.Run("cost ceiling", func(t *testing.T) {
		// About 300 input tokens at $1,000 per million: a call may cost
		// $0.30 and costs about that; the second would pass $0.50.
		env, srv := aiEnv(t, func(s *ai.Settings) {
			s.DailyCostUSD = 0.5
			s.Prices = map[string]ai.Price{"fake-1": {InputPerMTok: 1000}}
		})
		srv.Handler = good
		opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
		d := opstest.WantCode(t, env, "ai_ask", in, errs.CodeAIQuota)
		if d["reset_at"] == nil || d["retry_after_seconds"] == nil || srv.Calls() != 1 {
			t.Errorf("details %v calls %d", d, srv.Calls())
		}
	})
}

func TestAIStreaming(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		r := askHandler(req)
		r.ChunkDelay = 5 * time.Millisecond
		return r
	}
	var mu sync.Mutex
	var partial strings.Builder
	kinds := map[string]int{}
	ctx := ops.WithStream(context.Background(), func(ev string, data any) {
		mu.Lock()
		defer mu.Unlock()
		kinds[ev]++
		if ev == "ai.partial" {
			partial.WriteString(data.(map[string]string)["text"])
		}
	})
	res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "ai_ask", json.RawMessage(`{"question": "Goals?", "paths": ["Projects/Atlas.md"], "stream": true, "cache": false}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	streamed := res.Output.(*aiops.AIAskOut)
	if kinds["ai.partial"] < 2 || kinds["ai.citation"] != 1 || kinds["ai.usage"] != 1 {
		t.Errorf("events %v", kinds)
	}
	// ai.partial is the answer's text as it grows, not the model's JSON.
	if partial.String() != "Ship safe writes by June." {
		t.Errorf("partial text %q", partial.String())
	}
	if !srv.Requests[0].Stream {
		t.Error("not streamed")
	}
	plain := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", `{"question": "Goals?", "paths": ["Projects/Atlas.md"], "cache": false}`)
	a, _ := json.Marshal(streamed.Citations)
	b, _ := json.Marshal(plain.Citations)
	if streamed.Answer != plain.Answer || string(a) != string(b) {
		t.Errorf("streamed %s != plain %s", a, b)
	}
}

func TestAISummarizeDropsUngrounded(t *testing.T) {
	// Room for Atlas (77 tokens) or Beacon (50), not both: the prompt is
	// about 140 tokens, 280 - 280/8 - 140 = 105.
	env, srv := aiEnv(t, func(s *ai.Settings) { s.MaxInputTokens = 280 })
	srv.Handler = func(req aitest.Request) aitest.Reply {
		ns := opstest.PromptNotes(req)
		if len(ns) == 0 { // reduce step
			return aitest.Reply{Content: `{"tldr": "Two projects.", "open_questions": ["When?"], "outline": ["Atlas", "Beacon"]}`}
		}
		n := ns[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"tldr": "part", "key_points": []any{
			map[string]any{"text": "Grounded point about " + n[0], "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}},
			map[string]any{"text": "Ungrounded claim", "citations": []any{}},
		}})}
	}
	out := opstest.Call[aiops.AISummarizeOut](t, env, "ai_summarize", `{"glob": "Projects/**"}`)
	if len(out.KeyPoints) != 2 || out.TLDR != "Two projects." || !warned(out.Warnings, "ungrounded_dropped") || !warned(out.Warnings, "map_reduce") {
		t.Errorf("%+v", out)
	}
	for _, k := range out.KeyPoints {
		if len(k.Citations) == 0 || strings.Contains(k.Text, "Ungrounded") {
			t.Errorf("ungrounded point got through: %+v", k)
		}
	}
}

func TestAITagApplyThroughWritePipeline(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": []any{map[string]any{"path": n[0], "tags": []any{
			map[string]any{"tag": "#Search Engines", "confidence": 0.9, "citations": []any{opstest.Cite(n[0], n[1], 6, 6)}},
			map[string]any{"tag": "PROJECT", "confidence": 0.8, "citations": []any{opstest.Cite(n[0], n[1], 2, 2)}},
			map[string]any{"tag": "maybe", "confidence": 0.2, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}},
			map[string]any{"tag": "bad tag!", "confidence": 0.9, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}},
			map[string]any{"tag": "nocite", "confidence": 0.9},
		}}}})}
	}
	in := `{"paths": ["Projects/Atlas.md"], "apply": true}`
	opstest.WantCode(t, env, "ai_tag", in, errs.CodeWritesDisabled)
	env.Writes = ops.WriteSettings{Enabled: true}
	prev := opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{"paths": ["Projects/Atlas.md"]}`)
	nt := prev.Notes[0]
	if got := opstest.Paths(nt.Tags, func(s aiops.SuggestedTag) string { return s.Tag }); strings.Join(got, ",") != "Search-Engines,project" {
		t.Errorf("tags %v warnings %+v", got, prev.Warnings)
	}
	for _, w := range []string{"tag_below_threshold", "tag_invalid", "ungrounded_dropped"} {
		if !warned(prev.Warnings, w) {
			t.Errorf("no %s warning", w)
		}
	}
	if nt.Write == nil || nt.Write.Applied || !strings.Contains(nt.Write.Changes[0].Diff, "Search-Engines") || strings.Contains(opstest.ReadFile(t, env, "Projects/Atlas.md"), "Search-Engines") {
		t.Fatalf("preview %+v", nt.Write)
	}
	out := opstest.Call[aiops.AITagOut](t, env, "ai_tag", in)
	w := out.Notes[0].Write
	if !w.Applied || w.UndoID == "" || !strings.Contains(opstest.ReadFile(t, env, "Projects/Atlas.md"), "Search-Engines") {
		t.Fatalf("apply %+v", w)
	}
	if srv.Calls() != 1 {
		t.Errorf("the apply after the preview should come from the cache (calls %d)", srv.Calls())
	}
	opstest.Call[write.UndoOut](t, env, "undo", `{"id": "`+w.UndoID+`", "apply": true}`)
	if opstest.ReadFile(t, env, "Projects/Atlas.md") != aiFiles["Projects/Atlas.md"] {
		t.Error("undo did not restore the note")
	}
}

func TestAIMetadataValidated(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true}
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": []any{map[string]any{"path": n[0], "fields": []any{
			map[string]any{"name": "status", "value": "shipping", "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}},
			map[string]any{"name": "due", "value": "2026-06-30", "citations": []any{opstest.Cite(n[0], n[1], 10, 10)}},
		}}}})}
	}
	out := opstest.Call[aiops.AIMetadataOut](t, env, "ai_metadata", `{"paths": ["Projects/Atlas.md"], "apply": true, "fields": [
		{"name": "status", "type": "enum", "enum": ["active", "done"]}, {"name": "due", "type": "date"}, {"name": "owner", "type": "string", "required": true}]}`)
	nm := out.Notes[0]
	if len(nm.Fields) != 1 || nm.Fields[0].Name != "due" || !warned(out.Warnings, "metadata_invalid") || !warned(out.Warnings, "metadata_missing") {
		t.Errorf("%+v %+v", nm, out.Warnings)
	}
	if !nm.Write.Applied || !strings.Contains(opstest.ReadFile(t, env, "Projects/Atlas.md"), "due: 2026-06-30") {
		t.Errorf("write %+v", nm.Write)
	}
}

func TestAIExtract(t *testing.T) {
	env, srv := aiEnv(t, nil)
	opstest.WantCode(t, env, "ai_extract", `{"paths": ["Projects/Atlas.md"], "schema": {"type": "object", "properties": {"x": {"type": 12}}}}`, errs.CodeAISchemaInvalid)
	if srv.Calls() != 0 {
		t.Error("an invalid schema reached the provider")
	}
	srv.Handler = func(req aitest.Request) aitest.Reply {
		var recs []any
		for _, n := range opstest.PromptNotes(req) {
			data := map[string]any{"name": strings.TrimSuffix(filepath.Base(n[0]), ".md")}
			if n[0] == "Projects/Beacon.md" {
				data = map[string]any{"nickname": 3} // fails the schema
			}
			recs = append(recs, map[string]any{"path": n[0], "data": data, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"records": recs})}
	}
	schema := `{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}`
	out := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", `{"glob": "Projects/**", "schema": `+schema+`, "destination": "frontmatter", "key": "entity"}`)
	if len(out.Records) != 1 || out.Records[0].Path != "Projects/Atlas.md" || !warned(out.Warnings, "extract_invalid") {
		t.Fatalf("%+v", out)
	}
	if w := out.Records[0].Write; w == nil || w.Applied || !strings.Contains(w.Changes[0].Diff, "+entity:") {
		t.Errorf("preview %+v", w)
	}
}

func TestAIRecordReplay(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = askHandler
	dir := t.TempDir()
	env.AI.Chat = &ai.Recorder{Inner: env.AI.Chat, Dir: dir}
	in := `{"question": "Goals?", "paths": ["Projects/Atlas.md"], "cache": false}`
	rec := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	srv.Close()
	env.AI.Chat = &ai.Recorder{Inner: env.AI.Chat.(*ai.Recorder).Inner, Dir: dir, Replay: true}
	rep := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if rep.Answer != rec.Answer {
		t.Errorf("replay %q != %q", rep.Answer, rec.Answer)
	}
}

func TestAICitationDrift(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		// The note changes while the model is answering.
		os.WriteFile(filepath.Join(opstest.Root(env), "Projects/Atlas.md"), []byte("# Atlas\n\nRewritten.\n"), 0o644)
		return askHandler(req)
	}
	d := opstest.WantCode(t, env, "ai_ask", `{"question": "Goals?", "paths": ["Projects/Atlas.md"]}`, errs.CodeAIGrounding)
	if dropped, _ := d["dropped"].([]any); len(dropped) != 1 || !strings.HasPrefix(dropped[0].(string), "citation_drift") {
		t.Errorf("details %v", d)
	}
}

func TestAIRelateWithChat(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		var rs []any
		for _, n := range opstest.PromptNotes(req)[1:] {
			r := map[string]any{"path": n[0], "label": "depends_on", "confidence": 0.8, "rationale": "uses it", "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}}
			if n[0] != "Projects/Atlas.md" {
				r["citations"] = []any{opstest.Cite(n[0], n[1], 999, 999)} // unverifiable: the heuristic label stays
			}
			rs = append(rs, r)
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"relations": rs})}
	}
	out := opstest.Call[aiops.AIRelateOut](t, env, "ai_relate", `{"path": "Projects/Beacon.md", "propose_links": true}`)
	sources := map[string]string{}
	for _, r := range out.Relations {
		sources[r.Path] = r.Source + ":" + r.Label
	}
	if sources["Projects/Atlas.md"] != "model:depends_on" || sources["Private/Diary.md"] != "" {
		t.Errorf("relations %v", sources)
	}
	if len(sources) > 1 && !warned(out.Warnings, "ungrounded_dropped") {
		t.Errorf("warnings %+v", out.Warnings)
	}
	for _, d := range out.Drafts {
		for _, p := range d.Patches {
			if strings.Contains(p.Content, "Projects/Atlas") {
				t.Error("a draft links a note that is already linked")
			}
		}
	}
	if opstest.ReadFile(t, env, "Projects/Beacon.md") != aiFiles["Projects/Beacon.md"] {
		t.Error("ai_relate wrote")
	}
}

func TestAITocMOCWrite(t *testing.T) {
	env, srv := aiEnv(t, nil)
	in := `{"mode": "moc", "glob": "**", "group_by": "tag", "write_to": "MOC.md"}`
	prev := opstest.Call[aiops.AITocOut](t, env, "ai_toc", in)
	if srv.Calls() != 0 || prev.Write == nil || prev.Write.Applied || opstest.Exists(env, "MOC.md") || !warned(prev.Warnings, "globs_excluded") {
		t.Fatalf("preview %+v", prev)
	}
	if strings.Contains(prev.Markdown, "Diary") || !strings.Contains(prev.Markdown, "## project") {
		t.Errorf("markdown %q", prev.Markdown)
	}
	opstest.WantCode(t, env, "ai_toc", strings.Replace(in, "}", `, "apply": true}`, 1), errs.CodeWritesDisabled)
	env.Writes = ops.WriteSettings{Enabled: true}
	out := opstest.Call[aiops.AITocOut](t, env, "ai_toc", strings.Replace(in, "}", `, "apply": true}`, 1))
	if !out.Write.Applied || opstest.ReadFile(t, env, "MOC.md") != out.Markdown {
		t.Errorf("write %+v", out.Write)
	}
	// Replacing it needs its etag.
	opstest.WantCode(t, env, "ai_toc", strings.Replace(in, "}", `, "apply": true}`, 1), errs.CodeConflict)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		return aitest.Reply{Content: `{"groups": [{"name": "Work", "paths": ["Projects/Atlas.md", "Nope.md"]}]}`}
	}
	topic := opstest.Call[aiops.AITocOut](t, env, "ai_toc", `{"mode": "moc", "glob": "Projects/**", "group_by": "topic"}`)
	if len(topic.Groups) != 2 || topic.Groups[0].Name != "Work" || topic.Groups[1].Name != "Other" || !warned(topic.Warnings, "citation_invalid") {
		t.Errorf("topic %+v", topic.Groups)
	}
}

func TestAIIdempotencyKey(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true}
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": []any{map[string]any{"path": n[0], "tags": []any{
			map[string]any{"tag": "search", "confidence": 0.9, "citations": []any{opstest.Cite(n[0], n[1], 6, 6)}}}}}})}
	}
	in := `{"paths": ["Projects/Atlas.md"], "apply": true, "cache": false, "idempotency_key": "k1"}`
	first := opstest.Call[aiops.AITagOut](t, env, "ai_tag", in)
	again := opstest.Call[aiops.AITagOut](t, env, "ai_tag", in)
	if srv.Calls() != 1 || !warned(again.Warnings, "idempotent_replay") || again.Notes[0].Write.UndoID != first.Notes[0].Write.UndoID {
		t.Errorf("replay: calls %d %+v", srv.Calls(), again)
	}
	if es, _ := opstest.MustWriter(t, env).Journal(); len(es) != 1 {
		t.Errorf("%d journal entries, want 1", len(es))
	}
	opstest.WantCode(t, env, "ai_tag", strings.Replace(in, "Atlas", "Beacon", 1), errs.CodeIdempotencyReuse)
	// A replay of an apply is checked against the vault's write settings
	// like the apply itself.
	env.Writes = ops.WriteSettings{Enabled: true, ReadOnly: true}
	opstest.WantCode(t, env, "ai_tag", in, errs.CodeWritesDisabled)
}

// TestAIIdempotencyStoreUnavailable: a keyed apply whose idempotency store
// cannot be used (a link planted at .loci/idempotency) fails with a typed
// error before the model is called, instead of running unrecorded.
func TestAIIdempotencyStoreUnavailable(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true}
	srv.Handler = askHandler
	if err := os.MkdirAll(filepath.Join(opstest.Root(env), ".loci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(opstest.Root(env), ".loci", "idempotency")); err != nil {
		t.Skip("symlinks unavailable")
	}
	d := opstest.WantCode(t, env, "ai_tag", `{"paths": ["Projects/Atlas.md"], "apply": true, "idempotency_key": "k1"}`, errs.CodePathDenied)
	if srv.Calls() != 0 || opstest.ReadFile(t, env, "Projects/Atlas.md") != aiFiles["Projects/Atlas.md"] {
		t.Errorf("calls %d, details %v", srv.Calls(), d)
	}
}

// signalCtx reports, once, the first time something waits on it: for a
// call that reaches the idempotency key's lock, that is where it starts
// waiting (the lock derives its deadline from it).
type signalCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *signalCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestAIIdempotencyKeySerializes: two concurrent calls with one key call
// the model once and write once; the second gets the first's result. The
// fake model holds the first call until the second one has either reached
// the model too (the defect: both run) or started waiting.
func TestAIIdempotencyKeySerializes(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true}
	first, second := make(chan struct{}), make(chan struct{})
	b := &signalCtx{Context: context.Background(), waiting: make(chan struct{})}
	var mu sync.Mutex
	n := 0
	srv.Handler = func(req aitest.Request) aitest.Reply {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 1 {
			close(first)
			select {
			case <-second:
			case <-b.waiting:
			}
		} else if k == 2 {
			close(second)
		}
		p := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": []any{map[string]any{"path": p[0], "tags": []any{
			map[string]any{"tag": "search", "confidence": 0.9, "citations": []any{opstest.Cite(p[0], p[1], 6, 6)}}}}}})}
	}
	in := json.RawMessage(`{"paths": ["Projects/Atlas.md"], "apply": true, "cache": false, "idempotency_key": "same"}`)
	call := func(ctx context.Context, res chan<- ops.Result) {
		res <- opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "ai_tag", in)
	}
	ra, rb := make(chan ops.Result, 1), make(chan ops.Result, 1)
	go call(context.Background(), ra)
	<-first
	go call(b, rb)
	a, r := <-ra, <-rb
	if a.Err != nil || r.Err != nil {
		t.Fatalf("errors %v %v", a.Err, r.Err)
	}
	if srv.Calls() != 1 {
		t.Errorf("the model was called %d times for one key", srv.Calls())
	}
	ao, bo := a.Output.(*aiops.AITagOut), r.Output.(*aiops.AITagOut)
	if ao.Notes[0].Write == nil || bo.Notes[0].Write == nil || ao.Notes[0].Write.UndoID != bo.Notes[0].Write.UndoID || !warned(bo.Warnings, "idempotent_replay") {
		t.Errorf("first %+v second %+v", ao, bo)
	}
	if es, _ := opstest.MustWriter(t, env).Journal(); len(es) != 1 {
		t.Errorf("%d journal entries, want 1", len(es))
	}
}

// warned reports whether ws holds a warning with one of codes.
func warned(ws []aiops.AIWarning, codes ...string) bool {
	for _, w := range ws {
		if slices.Contains(codes, w.Code) {
			return true
		}
	}
	return false
}

// TestAISmallContextBudget: a local model with a small context window
// (max_input_tokens 2048) still gets small notes; the part of the budget
// kept back for the prompt is in proportion to it, not a fixed 4,000
// tokens (which left "a budget of -1952").
func TestAISmallContextBudget(t *testing.T) {
	env, srv := aiEnv(t, func(s *ai.Settings) { s.MaxInputTokens = 2048 })
	srv.Handler = askHandler
	out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", `{"question": "Goals of Atlas?", "paths": ["Projects/Atlas.md"]}`)
	if !out.Supported || srv.Calls() != 1 {
		t.Fatalf("ask with a 2048-token budget: %+v", out)
	}
	// What was sent fits the budget.
	sent := 0
	for _, m := range srv.Requests[0].Messages {
		sent += ai.EstimateTokens(m.Content)
	}
	if sent > 2048 {
		t.Errorf("sent about %d tokens, over max_input_tokens 2048", sent)
	}
	// A note over the budget is named with a positive budget.
	big := strings.Repeat("Atlas grows. ", 1200) // ~3,900 tokens
	os.WriteFile(filepath.Join(opstest.Root(env), "Projects/Big.md"), []byte("# Big\n\n"+big+"\n"), 0o644)
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	d := opstest.WantCode(t, env, "ai_ask", `{"question": "Big?", "paths": ["Projects/Big.md"]}`, errs.CodeAIInputTooLarge)
	if b, _ := d["budget"].(float64); b <= 0 || b >= 2048 || d["path"] != "Projects/Big.md" {
		t.Errorf("details %v", d)
	}
	// A question that alone fills the budget is refused before any call.
	q := strings.Repeat("why ", 2100)
	d = opstest.WantCode(t, env, "ai_ask", `{"question": "`+q+`", "paths": ["Projects/Atlas.md"]}`, errs.CodeAIInputTooLarge)
	if srv.Calls() != 1 || d["max_input_tokens"] != float64(2048) {
		t.Errorf("calls %d details %v", srv.Calls(), d)
	}
}

// remoteEnv is aiEnv with the runtime's settings naming a remote server
// (for prices) while its client talks to the fake.
func remoteEnv(t *testing.T, model string, ceiling float64) (*ops.Env, *aitest.Server) {
	t.Helper()
	env, srv := aiEnv(t, nil)
	local := env.AI.Settings
	s := local
	s.BaseURL, s.Model, s.DailyCostUSD = "https://llm.example.com/v1", model, ceiling
	env.AI = ai.New(s, filepath.Join(t.TempDir(), ".loci"))
	local.Model = model
	env.AI.Chat = ai.NewOpenAI(&local)
	srv.Handler = askHandler
	return env, srv
}

// TestAIPriceUnknown: a daily ceiling with a model loci has no price for
// cannot stop anything (its calls are booked at $0); ai_status and every
// result that called the model say so. A hosted model on loci's list is
// priced without a prices: table; a local server costs nothing and warns
// about nothing.
func TestAIPriceUnknown(t *testing.T) {
	in := `{"question": "Goals of Atlas?", "paths": ["Projects/Atlas.md"]}`
	env, _ := remoteEnv(t, "mystery-7b", 2)
	st := opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{}`)
	if st.Price == nil || st.Price.Source != ai.PriceUnknown || !warned(st.Warnings, "price_unknown") {
		t.Errorf("status %+v", st)
	}
	out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if !warned(out.Warnings, "price_unknown") || out.Usage.CostUSD != 0 {
		t.Errorf("ask %+v", out)
	}

	env, _ = remoteEnv(t, "gpt-4o-mini", 2)
	st = opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{}`)
	if st.Price == nil || st.Price.Source != ai.PriceList || st.Price.InputPerMTok != 0.15 || len(st.Warnings) != 0 {
		t.Errorf("status %+v", st)
	}
	out = opstest.Call[aiops.AIAskOut](t, env, "ai_ask", in)
	if warned(out.Warnings, "price_unknown") || out.Usage.CostUSD <= 0 {
		t.Errorf("ask %+v", out)
	}

	env, _ = aiEnv(t, func(s *ai.Settings) { s.DailyCostUSD = 2 })
	st = opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{}`)
	if st.Price == nil || st.Price.Source != ai.PriceLocal || len(st.Warnings) != 0 {
		t.Errorf("local status %+v", st)
	}
}

// TestAIExtractSchemaCheckedFirst: a schema with an unknown type name
// (anywhere in it) is ai_schema_invalid before any model call.
func TestAIExtractSchemaCheckedFirst(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"records": []any{map[string]any{"path": n[0], "data": []any{"x"}, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}}}})}
	}
	for schema, where := range map[string]string{
		`{"type": "arrayy"}`: "/type",
		`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "strin"}}}}`: "/properties/tags/items/type",
		`{"type": ["string", "nul"]}`:                               "/type",
		`{"anyOf": [{"type": "integer"}, {"type": "bool"}]}`:        "/anyOf/1/type",
		`{"$defs": {"p": {"type": "objekt"}}, "$ref": "#/$defs/p"}`: "/$defs/p/type",
	} {
		d := opstest.WantCode(t, env, "ai_extract", `{"paths": ["Projects/Atlas.md"], "schema": `+schema+`}`, errs.CodeAISchemaInvalid)
		if es, _ := d["errors"].([]any); len(es) != 1 || !strings.Contains(es[0].(string), where) {
			t.Errorf("%s: details %v", schema, d)
		}
	}
	if srv.Calls() != 0 {
		t.Errorf("%d model calls for invalid schemas", srv.Calls())
	}
	// Schemas whose validation would not end (a reference to the root, a
	// definition that reaches itself) or that are built to be costly are
	// refused before they are used: these crashed the process with a
	// stack overflow when the first record was validated.
	deep := strings.Repeat(`{"type":"array","items":`, 40) + `{"type":"string"}` + strings.Repeat(`}`, 40)
	for schema, where := range map[string]string{
		`{"$ref": "#"}`: `"#"`,
		`{"type": "array", "items": {"$ref": "#"}}`:                                                   `"#"`,
		`{"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`:                                "refers back to itself",
		`{"$defs": {"a": {"items": {"$ref": "#/$defs/b"}}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}}`: "refers back to itself",
		`{"$dynamicRef": "#x"}`: "$dynamicRef",
		`{"properties": {"x": {"$id": "http://e/x", "$ref": "#/$defs/y"}}}`: "$id",
		deep: "levels deep",
	} {
		d := opstest.WantCode(t, env, "ai_extract", `{"paths": ["Projects/Atlas.md"], "schema": `+schema+`}`, errs.CodeAISchemaInvalid)
		if es, _ := d["errors"].([]any); len(es) == 0 || !strings.Contains(es[0].(string), where) {
			t.Errorf("%.60s: details %v", schema, d)
		}
	}
	if srv.Calls() != 0 {
		t.Errorf("%d model calls for refused schemas", srv.Calls())
	}
}

// TestAIExtractDropsInvalidItems: an array item that fails the schema is
// dropped (extract_invalid names it) and the rest of the record is kept.
func TestAIExtractDropsInvalidItems(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		var recs []any
		for _, n := range opstest.PromptNotes(req) {
			data := any(map[string]any{"name": "Atlas", "people": []any{map[string]any{"name": "Ann"}, map[string]any{"nick": 3}, map[string]any{"name": "Bo"}}})
			if n[0] == "Projects/Beacon.md" {
				data = map[string]any{"people": []any{}} // no name: the record fails as a whole
			}
			recs = append(recs, map[string]any{"path": n[0], "data": data, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"records": recs})}
	}
	schema := `{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"},
		"people": {"type": "array", "items": {"$ref": "#/$defs/person"}}}, "$defs": {"person": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}`
	out := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", `{"glob": "Projects/**", "schema": `+schema+`}`)
	if len(out.Records) != 1 || out.Records[0].Path != "Projects/Atlas.md" {
		t.Fatalf("%+v", out)
	}
	b, _ := json.Marshal(out.Records[0].Data)
	if string(b) != `{"name":"Atlas","people":[{"name":"Ann"},{"name":"Bo"}]}` {
		t.Errorf("data %s", b)
	}
	var item, whole bool
	for _, w := range out.Warnings {
		item = item || (w.Code == "extract_invalid" && w.Path == "Projects/Atlas.md" && strings.Contains(w.Message, "/people/1"))
		whole = whole || (w.Code == "extract_invalid" && w.Path == "Projects/Beacon.md")
	}
	if !item || !whole {
		t.Errorf("warnings %+v", out.Warnings)
	}
	// A top-level array keeps its valid items too.
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"records": []any{map[string]any{"path": n[0], "data": []any{"a", 3, "b"}, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}}}})}
	}
	arr := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", `{"paths": ["Projects/Atlas.md"], "schema": {"type": "array", "items": {"type": "string"}, "minItems": 1}}`)
	if b, _ := json.Marshal(arr.Records); len(arr.Records) != 1 || !strings.Contains(string(b), `"data":["a","b"]`) {
		t.Errorf("array %s", b)
	}
}

// TestAIMetadataListBounds: a list field's max and min bound its number of
// items; items that fail the pattern are dropped one by one.
func TestAIMetadataListBounds(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		cite := []any{opstest.Cite(n[0], n[1], 6, 6)}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": []any{map[string]any{"path": n[0], "fields": []any{
			map[string]any{"name": "topics", "value": []any{"search", "Bad Topic", "notes", "index", "local"}, "citations": cite},
			map[string]any{"name": "owners", "value": []any{"ann"}, "citations": cite},
		}}}})}
	}
	out := opstest.Call[aiops.AIMetadataOut](t, env, "ai_metadata", `{"paths": ["Projects/Atlas.md"], "fields": [
		{"name": "topics", "type": "list", "pattern": "^[a-z]+$", "max": 3}, {"name": "owners", "type": "list", "min": 2}]}`)
	nm := out.Notes[0]
	b, _ := json.Marshal(nm.Fields)
	if len(nm.Fields) != 1 || !strings.Contains(string(b), `"value":["search","notes","index"]`) {
		t.Errorf("fields %s", b)
	}
	var pattern, cut, short bool
	for _, w := range out.Warnings {
		pattern = pattern || (w.Code == "metadata_invalid" && strings.Contains(w.Message, "Bad Topic"))
		cut = cut || (w.Code == "metadata_invalid" && strings.Contains(w.Message, "first 3"))
		short = short || (w.Code == "metadata_invalid" && strings.Contains(w.Message, "owners"))
	}
	if !pattern || !cut || !short {
		t.Errorf("warnings %+v", out.Warnings)
	}
	for _, bad := range []string{
		`{"name": "n", "type": "list", "max": 1.5}`, `{"name": "n", "type": "list", "min": -1}`,
		`{"name": "n", "type": "number", "min": 3, "max": 1}`, `{"name": "n", "type": "string", "max": 3}`,
	} {
		opstest.WantCode(t, env, "ai_metadata", `{"paths": ["Projects/Atlas.md"], "fields": [`+bad+`]}`, errs.CodeInvalidInput)
	}
}

// TestAISummarizeStreamsText: a streamed summary's ai.partial events are
// the tldr and then the key points as a list, the way the CLI prints the
// result.
func TestAISummarizeStreamsText(t *testing.T) {
	env, srv := aiEnv(t, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		// In the schema's order, as models write it: tldr first.
		return aitest.Reply{Content: "```json\n{\"tldr\": " + aitest.JSON("Atlas is a \"search\" engine.") + `, "key_points": [` +
			aitest.JSON(map[string]any{"text": "Safe writes ship in June.", "citations": []any{opstest.Cite(n[0], n[1], 10, 10)}}) + ", " +
			aitest.JSON(map[string]any{"text": "The index stays local — ünïcode.", "citations": []any{opstest.Cite(n[0], n[1], 11, 11)}}) +
			`], "open_questions": ["Who?"]}` + "\n```"}
	}
	var mu sync.Mutex
	var partial strings.Builder
	ctx := ops.WithStream(context.Background(), func(ev string, data any) {
		mu.Lock()
		defer mu.Unlock()
		if ev == "ai.partial" {
			partial.WriteString(data.(map[string]string)["text"])
		}
	})
	res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "ai_summarize", json.RawMessage(`{"paths": ["Projects/Atlas.md"], "stream": true}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := "Atlas is a \"search\" engine.\n\n- Safe writes ship in June.\n- The index stays local — ünïcode."
	if partial.String() != want {
		t.Errorf("partial text %q, want %q", partial.String(), want)
	}
}

// TestAIApplyGoesOnPastAFailedNote: when the write of one note fails (here
// Beacon, which deny_paths refuses), the notes written before it keep
// their results and undo ids, the failed one carries apply_failed with
// the error's code, and the call still answers (so a keyed call records
// what it wrote). A model that lists one note twice gets one record, one
// write.
func TestAIApplyGoesOnPastAFailedNote(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true, DenyPaths: []string{"Projects/Beacon.md"}}
	srv.Handler = func(req aitest.Request) aitest.Reply {
		var notes, recs []any
		for _, n := range opstest.PromptNotes(req) {
			cite := []any{opstest.Cite(n[0], n[1], 1, 1)}
			notes = append(notes, map[string]any{"path": n[0],
				"tags":   []any{map[string]any{"tag": "reviewed", "confidence": 0.9, "citations": cite}},
				"fields": []any{map[string]any{"name": "status", "value": "active", "citations": cite}}})
			// Every record twice: the first one is kept.
			recs = append(recs, map[string]any{"path": n[0], "data": map[string]any{"name": "first"}, "citations": cite},
				map[string]any{"path": n[0], "data": map[string]any{"name": "second"}, "citations": cite})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": notes, "records": recs})}
	}
	check := func(name string, warns []aiops.AIWarning, atlas, beacon *ops.WriteResult) {
		t.Helper()
		if atlas == nil || !atlas.Applied || atlas.UndoID == "" {
			t.Errorf("%s: Atlas %+v", name, atlas)
		}
		if beacon != nil {
			t.Errorf("%s: Beacon has a write result %+v", name, beacon)
		}
		found := false
		for _, w := range warns {
			if w.Code == "apply_failed" {
				found = true
				if w.Path != "Projects/Beacon.md" || w.ErrorCode != errs.CodePathDenied {
					t.Errorf("%s: warning %+v", name, w)
				}
			}
		}
		if !found {
			t.Errorf("%s: no apply_failed warning in %+v", name, warns)
		}
	}
	scope := `"glob": "Projects/**", "apply": true, "cache": false`
	tag := opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{`+scope+`}`)
	if len(tag.Notes) != 2 {
		t.Fatalf("ai_tag notes %+v", tag.Notes)
	}
	check("ai_tag", tag.Warnings, tag.Notes[0].Write, tag.Notes[1].Write)
	md := opstest.Call[aiops.AIMetadataOut](t, env, "ai_metadata", `{`+scope+`, "fields": [{"name": "status", "type": "string"}]}`)
	if len(md.Notes) != 2 {
		t.Fatalf("ai_metadata notes %+v", md.Notes)
	}
	check("ai_metadata", md.Warnings, md.Notes[0].Write, md.Notes[1].Write)
	ex := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", `{`+scope+`, "schema": {"type": "object"}, "destination": "frontmatter", "key": "entity"}`)
	if len(ex.Records) != 2 || ex.Records[0].Path != "Projects/Atlas.md" {
		t.Fatalf("ai_extract records %+v", ex.Records)
	}
	check("ai_extract", ex.Warnings, ex.Records[0].Write, ex.Records[1].Write)
	atlas := opstest.ReadFile(t, env, "Projects/Atlas.md")
	if !strings.Contains(atlas, "name: first") || strings.Contains(atlas, "second") {
		t.Errorf("Atlas after ai_extract:\n%s", atlas)
	}
	if opstest.ReadFile(t, env, "Projects/Beacon.md") != aiFiles["Projects/Beacon.md"] {
		t.Error("Beacon was written")
	}
	// Three calls, three journaled changes of Atlas: one each.
	if es, _ := opstest.MustWriter(t, env).Journal(); len(es) != 3 {
		t.Errorf("%d journal entries, want 3", len(es))
	}
}

// TestAIScopeTagIsNotAPattern: the tag of a scope is matched as text, it
// and the tags nested under it: "my_tag" does not select a note tagged
// "myXtag/…" (an unescaped LIKE read _ as any character), whose text then
// went to the provider.
func TestAIScopeTagIsNotAPattern(t *testing.T) {
	env, srv := aiEnvWith(t, map[string]string{
		"A.md": "---\ntags: [my_tag/sub]\n---\n# A\n\nAlpha text.\n",
		"B.md": "---\ntags: [myXtag/sub]\n---\n# B\n\nSECRET-B text.\n",
		"C.md": "# C\n\nGamma. #my_tag\n",
	}, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		return aitest.Reply{Content: aitest.JSON(map[string]any{"tldr": "t", "key_points": []any{
			map[string]any{"text": "p", "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}}}})}
	}
	out := opstest.Call[aiops.AISummarizeOut](t, env, "ai_summarize", `{"tag": "my_tag"}`)
	if strings.Join(out.Scope, ",") != "A.md,C.md" {
		t.Errorf("scope %v, want A.md and C.md", out.Scope)
	}
	for _, r := range srv.Requests {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "SECRET-B") {
				t.Fatal("a note outside the tag reached the provider")
			}
		}
	}
}

// TestAIEveryRequestFitsTheBudget: no request goes out over the input
// budget, including the ones that do not go through the batching of
// notes: ai_relate's labelling (the note and its neighbours), the merge
// step of a map-reduce summary, ai_toc's topic prompt, and the repair
// round (which resent the prompt with the bad reply). What does not fit
// is left out with scope_truncated (or, for the repair, the bad reply is
// not resent).
func TestAIEveryRequestFitsTheBudget(t *testing.T) {
	within := func(t *testing.T, srv *aitest.Server, max int) {
		t.Helper()
		if srv.Calls() == 0 {
			t.Fatal("no request")
		}
		for i, r := range srv.Requests {
			n := 0
			for _, m := range r.Messages {
				n += ai.EstimateTokens(m.Content)
			}
			if n > max-max/8 {
				t.Errorf("request %d (%s) is about %d tokens, over the budget of %d (max_input_tokens %d)", i, r.Schema(), n, max-max/8, max)
			}
		}
	}
	words := func(n int) string { return strings.Repeat("orbit words ", n) }
	t.Run("ai_relate", func(t *testing.T) {
		files := map[string]string{"Orbit.md": "# Orbit\n\nOrbit " + words(170) + "\n"}
		for _, n := range []string{"A", "B", "C", "D", "E"} {
			files["Orbit "+n+".md"] = "# Orbit " + n + "\n\nOrbit " + words(170) + "\n"
		}
		env, srv := aiEnvWith(t, files, func(s *ai.Settings) { s.MaxInputTokens = 2048 })
		srv.Handler = func(req aitest.Request) aitest.Reply {
			var rs []any
			for _, n := range opstest.PromptNotes(req)[1:] {
				rs = append(rs, map[string]any{"path": n[0], "label": "extends", "confidence": 0.8, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}})
			}
			return aitest.Reply{Content: aitest.JSON(map[string]any{"relations": rs})}
		}
		out := opstest.Call[aiops.AIRelateOut](t, env, "ai_relate", `{"path": "Orbit.md"}`)
		within(t, srv, 2048)
		src := map[string]int{}
		for _, r := range out.Relations {
			src[r.Source]++
		}
		if len(out.Relations) != 5 || src["model"] == 0 || src["heuristic"] == 0 || !warned(out.Warnings, "scope_truncated") {
			t.Errorf("relations %v, warnings %+v", src, out.Warnings)
		}
	})
	t.Run("ai_summarize merge", func(t *testing.T) {
		files := map[string]string{}
		for _, n := range []string{"A", "B", "C", "D", "E", "F"} {
			files["S/"+n+".md"] = "# " + n + "\n\n" + words(100) + "\n"
		}
		env, srv := aiEnvWith(t, files, func(s *ai.Settings) { s.MaxInputTokens = 1024 })
		srv.Handler = func(req aitest.Request) aitest.Reply {
			ns := opstest.PromptNotes(req)
			if len(ns) == 0 { // the merge step
				return aitest.Reply{Content: `{"tldr": "All of it.", "open_questions": [], "outline": []}`}
			}
			return aitest.Reply{Content: aitest.JSON(map[string]any{"tldr": words(130), "key_points": []any{
				map[string]any{"text": "A point.", "citations": []any{opstest.Cite(ns[0][0], ns[0][1], 1, 1)}}}})}
		}
		out := opstest.Call[aiops.AISummarizeOut](t, env, "ai_summarize", `{"glob": "S/**"}`)
		within(t, srv, 1024)
		if out.TLDR != "All of it." || !warned(out.Warnings, "map_reduce") || !warned(out.Warnings, "scope_truncated") {
			t.Errorf("tldr %q warnings %+v", out.TLDR, out.Warnings)
		}
	})
	t.Run("ai_toc topics", func(t *testing.T) {
		files := map[string]string{}
		for i := range 40 {
			files[fmt.Sprintf("T/Note %02d.md", i)] = fmt.Sprintf("# Note %02d\n\n## First part\n\n## Second part\n", i)
		}
		env, srv := aiEnvWith(t, files, func(s *ai.Settings) { s.MaxInputTokens = 1024 })
		srv.Handler = func(req aitest.Request) aitest.Reply {
			var paths []string
			for _, m := range regexp.MustCompile(`path="([^"]+)"`).FindAllStringSubmatch(req.Last(), -1) {
				paths = append(paths, m[1])
			}
			return aitest.Reply{Content: aitest.JSON(map[string]any{"groups": []any{map[string]any{"name": "Listed", "paths": paths}}})}
		}
		out := opstest.Call[aiops.AITocOut](t, env, "ai_toc", `{"mode": "moc", "glob": "T/**", "max_notes": 40, "group_by": "topic"}`)
		within(t, srv, 1024)
		if len(out.Groups) != 2 || out.Groups[1].Name != "Other" || len(out.Groups[0].Notes)+len(out.Groups[1].Notes) != 40 || !warned(out.Warnings, "scope_truncated") {
			t.Errorf("groups %+v warnings %+v", out.Groups, out.Warnings)
		}
	})
	t.Run("repair round", func(t *testing.T) {
		env, srv := aiEnv(t, func(s *ai.Settings) { s.MaxInputTokens = 2048 })
		srv.Script(aitest.Reply{Content: "Let me think. " + words(700)})
		srv.Handler = askHandler
		out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", `{"question": "Goals of Atlas?", "paths": ["Projects/Atlas.md"]}`)
		within(t, srv, 2048)
		if !out.Supported || srv.Calls() != 2 || !strings.Contains(srv.Requests[1].Last(), "not valid") {
			t.Errorf("calls %d %+v", srv.Calls(), out)
		}
	})
}

// TestAIAskRetrievedIsWhatWasSent: when the retrieved notes do not all
// fit the input budget, retrieved lists the ones given to the model, not
// every note the scope resolved.
func TestAIAskRetrievedIsWhatWasSent(t *testing.T) {
	long := strings.Repeat("orbit words ", 130)
	env, srv := aiEnvWith(t, map[string]string{"A.md": "# A\n\n" + long + "\n", "B.md": "# B\n\n" + long + "\n"}, func(s *ai.Settings) { s.MaxInputTokens = 1024 })
	var sent []string
	srv.Handler = func(req aitest.Request) aitest.Reply {
		ns := opstest.PromptNotes(req)
		for _, n := range ns {
			sent = append(sent, n[0])
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"supported": true, "answer": "Words.", "confidence": 0.5,
			"citations": []any{opstest.Cite(ns[0][0], ns[0][1], 1, 1)}})}
	}
	out := opstest.Call[aiops.AIAskOut](t, env, "ai_ask", `{"question": "What words?", "paths": ["A.md", "B.md"]}`)
	got := opstest.Paths(out.Retrieved, func(r aiops.RetrievedNote) string { return r.Path })
	if !warned(out.Warnings, "scope_truncated") || strings.Join(got, ",") != "A.md" || strings.Join(sent, ",") != "A.md" {
		t.Errorf("retrieved %v, sent %v, warnings %+v", got, sent, out.Warnings)
	}
}

// TestAIFrontmatterKeysCheckedFirst: a field name or an extract key that
// cannot be a frontmatter key (one that spans lines) is refused before
// the model is called, not by the write once the model was paid; and
// ai_extract with apply but destination json writes nothing, so it needs
// no writes.
func TestAIFrontmatterKeysCheckedFirst(t *testing.T) {
	env, srv := aiEnv(t, nil)
	env.Writes = ops.WriteSettings{Enabled: true}
	srv.Handler = func(req aitest.Request) aitest.Reply {
		n := opstest.PromptNotes(req)[0]
		cite := []any{opstest.Cite(n[0], n[1], 1, 1)}
		return aitest.Reply{Content: aitest.JSON(map[string]any{
			"notes":   []any{map[string]any{"path": n[0], "fields": []any{map[string]any{"name": "a\nb", "value": "x", "citations": cite}}}},
			"records": []any{map[string]any{"path": n[0], "data": map[string]any{}, "citations": cite}}})}
	}
	for op, in := range map[string]string{
		"ai_metadata": `{"paths": ["Projects/Atlas.md"], "fields": [{"name": "a\nb", "type": "string"}]}`,
		"ai_extract":  `{"paths": ["Projects/Atlas.md"], "schema": {"type": "object"}, "destination": "frontmatter", "key": "x\ny"}`,
	} {
		opstest.WantCode(t, env, op, in, errs.CodeInvalidInput)
	}
	if srv.Calls() != 0 {
		t.Errorf("%d model calls for invalid keys", srv.Calls())
	}
	env.Writes = ops.WriteSettings{}
	out := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", `{"paths": ["Projects/Atlas.md"], "schema": {"type": "object"}, "apply": true}`)
	if len(out.Records) != 1 || out.Records[0].Write != nil {
		t.Errorf("destination json: %+v", out.Records)
	}
	// Nor does its replay.
	keyed := `{"paths": ["Projects/Atlas.md"], "schema": {"type": "object"}, "apply": true, "cache": false, "idempotency_key": "x1"}`
	opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", keyed)
	if again := opstest.Call[aiops.AIExtractOut](t, env, "ai_extract", keyed); !warned(again.Warnings, "idempotent_replay") {
		t.Errorf("replay %+v", again.Warnings)
	}
}

// TestAITocMarkdownIsSafe: what the model or a note supplies cannot add
// lines to a map of content or break its links: a group name with line
// breaks becomes one heading, and a title with | ]] [[ stays the text of
// its own link.
func TestAITocMarkdownIsSafe(t *testing.T) {
	env, srv := aiEnvWith(t, map[string]string{
		"M/Odd.md":   "---\nstatus: \"one\\n## Injected\"\n---\n# A | B ]] [[C\n",
		"M/Plain.md": "---\nstatus: done\n---\n# Plain\n",
	}, nil)
	srv.Handler = func(req aitest.Request) aitest.Reply {
		return aitest.Reply{Content: `{"groups": [{"name": "Work\n## Injected\n- [[Evil]]", "paths": ["M/Odd.md", "M/Plain.md"]}]}`}
	}
	for _, in := range []string{`{"mode": "moc", "glob": "M/**", "group_by": "topic"}`, `{"mode": "moc", "glob": "M/**", "group_by": "frontmatter:status"}`} {
		out := opstest.Call[aiops.AITocOut](t, env, "ai_toc", in)
		md := out.Markdown
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "## Injected") || strings.HasPrefix(l, "- [[Evil") {
				t.Errorf("%s: a line was injected:\n%s", in, md)
			}
		}
		doc := markdown.Parse([]byte(md), markdown.Options{Path: "MOC.md"})
		got := map[string]string{}
		for _, l := range doc.Links {
			got[l.Target] = l.Display
		}
		if len(doc.Links) != 2 || got["M/Odd"] != `A \| B \]\] \[\[C` || got["M/Plain"] != "Plain" {
			t.Errorf("%s: links %+v in\n%s", in, doc.Links, md)
		}
	}
}
