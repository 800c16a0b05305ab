package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// aiErrors are the codes every AI operation may return.
var aiErrors = []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodePathDenied, errs.CodeIdempotencyReuse,
	errs.CodeAIUnavailable, errs.CodeAIQuota, errs.CodeAIProvider, errs.CodeAIGrounding, errs.CodeAIInputTooLarge}

// aiApplyErrors adds the codes of the write pipeline.
var aiApplyErrors = append(append([]string{}, aiErrors...), errs.CodeWritesDisabled, errs.CodeEtagMismatch, errs.CodeConflict,
	errs.CodeIdempotencyReuse, errs.CodeNoteLocked, errs.CodeInvalidUTF8)

// AIScope selects the notes an AI operation reads. Fields combine: the
// scope is the union of what each selects.
type AIScope struct {
	Paths         []string `json:"paths,omitempty" jsonschema:"vault-relative paths (or note references) of the notes"`
	Glob          string   `json:"glob,omitempty" jsonschema:"every note whose path matches this doublestar glob"`
	Tag           string   `json:"tag,omitempty" jsonschema:"every note carrying this tag (nested tags included)"`
	Query         string   `json:"query,omitempty" jsonschema:"the best notes for this search query (hybrid retrieval when vectors exist, else lexical)"`
	Note          string   `json:"note,omitempty" jsonschema:"one note (path or reference), optionally with the notes it links to (include_linked)"`
	IncludeLinked int      `json:"include_linked,omitempty" jsonschema:"with note: follow its links this many hops out (0-3)"`
	MaxNotes      int      `json:"max_notes,omitempty" jsonschema:"at most this many notes in the scope (default 20, at most 200)"`
}

func (s *AIScope) empty() bool {
	return len(s.Paths) == 0 && s.Glob == "" && s.Tag == "" && s.Query == "" && s.Note == ""
}

func (s *AIScope) validate() error {
	if s.IncludeLinked < 0 || s.IncludeLinked > 3 {
		return errs.New(errs.CodeInvalidInput, "include_linked must be between 0 and 3")
	}
	if s.IncludeLinked > 0 && s.Note == "" {
		return errs.New(errs.CodeInvalidInput, "include_linked needs note")
	}
	if err := CheckGlob(s.Glob); err != nil {
		return err
	}
	return CheckLimit(s.MaxNotes, 200)
}

// AIOpts are the options every AI operation shares.
type AIOpts struct {
	Cite           *bool  `json:"cite,omitempty" jsonschema:"require citations (default true): claims without a verified citation are dropped, and with none left the call fails with ai_grounding_failed"`
	Cache          *bool  `json:"cache,omitempty" jsonschema:"use the AI cache (default true): the same input over the same note versions within 24 h is answered from .loci/ai-cache.db at no cost"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a unique key for this call: a retry with the same key and input within 24 h returns the first result (warning idempotent_replay) without calling the model or writing again; the same key with another input fails with idempotency_key_reused"`
	Vault          string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

func (o *AIOpts) opts() *AIOpts { return o }

func (o *AIOpts) cite() bool     { return o.Cite == nil || *o.Cite }
func (o *AIOpts) useCache() bool { return o.Cache == nil || *o.Cache }

// Citation points at the vault content a claim rests on.
type Citation struct {
	Path    string `json:"path" jsonschema:"vault-relative path"`
	Etag    string `json:"etag" jsonschema:"the version of the note the claim rests on"`
	Anchor  string `json:"anchor,omitempty" jsonschema:"heading the claim rests on"`
	Line    int    `json:"line,omitempty" jsonschema:"first line (1-based)"`
	EndLine int    `json:"end_line,omitempty" jsonschema:"last line"`
	Snippet string `json:"snippet" jsonschema:"the cited text, read back from the note"`
}

// AIWarning is a non-fatal condition (docs/ai.md lists the codes).
type AIWarning struct {
	Code    string `json:"code" jsonschema:"warning code: ai_cache_hit, idempotent_replay, citation_invalid, citation_drift, ungrounded_dropped, globs_excluded, unsupported_question, scope_truncated, truncated, chat_unavailable, tag_invalid, tag_below_threshold, metadata_invalid, extract_invalid, map_reduce"`
	Message string `json:"message" jsonschema:"what happened"`
	Path    string `json:"path,omitempty" jsonschema:"the note concerned"`
}

// AIMeta is carried by every AI output.
type AIMeta struct {
	Scope     []string    `json:"scope" jsonschema:"the notes read (after allow/deny globs)"`
	Citations []Citation  `json:"citations" jsonschema:"every verified citation of the result"`
	Usage     ai.Usage    `json:"usage" jsonschema:"tokens and cost of this call (zero on a cache hit)"`
	Warnings  []AIWarning `json:"warnings" jsonschema:"non-fatal conditions"`
	Provider  string      `json:"provider,omitempty" jsonschema:"chat provider used"`
	Model     string      `json:"model,omitempty" jsonschema:"chat model used"`
}

func (m *AIMeta) meta() *AIMeta { return m }

func (m *AIMeta) warn(code, path, format string, args ...any) {
	m.Warnings = append(m.Warnings, AIWarning{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

// scopeNote is a note of the resolved scope, as read from disk.
type scopeNote struct {
	Path     string
	Title    string
	Etag     string
	Lines    []string
	Headings []markdown.Heading
}

// aiCall is one AI invocation in progress.
type aiCall struct {
	env    *Env
	vh     *VaultHandle
	rt     *ai.Runtime
	op     string
	meta   *AIMeta
	notes  []*scopeNote
	byPath map[string]*scopeNote
	start  time.Time
	hit    bool
	// applied lists the notes written.
	applied []string
	stream  func(event string, data any)
}

// beginAI starts an AI call; needChat says whether the op needs a chat model.
// The vault's own AI runtime (Env.AIFor) runs the call: its provider,
// allow/deny globs, cache and cost ledger.
func beginAI(ctx context.Context, env *Env, op, vault string, needChat bool, meta *AIMeta) (*aiCall, error) {
	vh, err := env.Vault(vault)
	if err != nil {
		if !env.AnyAI((*ai.Runtime).Enabled) {
			return nil, ai.Unavailable("chat")
		}
		return nil, err
	}
	rt := env.AIFor(vh)
	if !rt.Enabled() {
		return nil, ai.Unavailable("chat")
	}
	if needChat && !rt.HasChat() {
		return nil, ai.Unavailable("chat")
	}
	meta.Scope, meta.Citations, meta.Warnings = []string{}, []Citation{}, []AIWarning{}
	if rt.HasChat() {
		meta.Provider, meta.Model = rt.Chat.Name(), rt.Chat.Model()
	}
	c := &aiCall{env: env, vh: vh, rt: rt, op: op, meta: meta, byPath: map[string]*scopeNote{}, start: time.Now()}
	c.stream = StreamFrom(ctx)
	return c, nil
}

// finish writes the audit record of the call.
func (c *aiCall) finish(err error) {
	if c == nil {
		return
	}
	inv := ai.Invocation{Time: c.start.UTC(), Operation: c.op, Provider: c.meta.Provider, Model: c.meta.Model, Paths: c.meta.Scope,
		Notes: len(c.meta.Scope), Citations: len(c.meta.Citations), Usage: c.meta.Usage, CacheHit: c.hit,
		DurationMs: float64(time.Since(c.start).Microseconds()) / 1000, Applied: c.applied}
	if err != nil {
		inv.Code = errs.Code(err)
	}
	c.rt.Record(inv)
	c.env.Emit(Event{Kind: EventAIInvocation, Vault: c.vh.Name, Data: map[string]any{
		"operation": inv.Operation, "provider": inv.Provider, "model": inv.Model, "paths": inv.Paths, "notes": inv.Notes,
		"citations": inv.Citations, "input_tokens": inv.Usage.InputTokens, "output_tokens": inv.Usage.OutputTokens,
		"cost_usd": inv.Usage.CostUSD, "cache_hit": inv.CacheHit, "code": inv.Code, "duration_ms": inv.DurationMs, "applied": inv.Applied}})
}

// resolve turns a scope into notes, dropping the ones the globs exclude.
func (c *aiCall) resolve(ctx context.Context, s *AIScope) error {
	ix := c.vh.Index
	set := map[string]bool{}
	var order []string
	add := func(p string) {
		if !set[p] {
			set[p] = true
			order = append(order, p)
		}
	}
	for _, p := range s.Paths {
		rel, _, _, err := NotePath(ctx, c.vh, "", p)
		if err != nil {
			return err
		}
		add(rel)
	}
	if s.Glob != "" || s.Tag != "" {
		notes, err := ix.ListNotes(ctx, false)
		if err != nil {
			return err
		}
		tagged := map[string]bool{}
		if s.Tag != "" {
			key := strings.ToLower(strings.TrimPrefix(s.Tag, "#"))
			rows, err := ix.DB.QueryContext(ctx, `SELECT DISTINCT n.path FROM tags t JOIN notes n ON n.id = t.note_id WHERE t.tag_key = ? OR t.tag_key LIKE ?`, key, key+"/%")
			if err != nil {
				return err
			}
			for rows.Next() {
				var p string
				rows.Scan(&p)
				tagged[p] = true
			}
			rows.Close()
		}
		for _, n := range notes {
			if (s.Glob == "" || GlobMatch(s.Glob, n.Path)) && (s.Tag == "" || tagged[n.Path]) {
				add(n.Path)
			}
		}
	}
	if s.Query != "" {
		res, err := SearcherFor(c.vh).Search(ctx, search.Query{Text: s.Query, Limit: OrDefault(s.MaxNotes, 20)})
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			add(r.Path)
		}
	}
	if s.Note != "" {
		rel, _, _, err := NotePath(ctx, c.vh, "", s.Note)
		if err != nil {
			return err
		}
		add(rel)
		frontier := []string{rel}
		for hop := 0; hop < s.IncludeLinked; hop++ {
			var next []string
			for _, p := range frontier {
				rows, err := ix.DB.QueryContext(ctx, `SELECT DISTINCT d.path FROM links l JOIN notes s ON s.id = l.src_id JOIN notes d ON d.id = l.dst_id WHERE s.path = ? ORDER BY d.path`, p)
				if err != nil {
					return err
				}
				for rows.Next() {
					var q string
					rows.Scan(&q)
					if !set[q] {
						next = append(next, q)
					}
					add(q)
				}
				rows.Close()
			}
			frontier = next
		}
	}
	max := OrDefault(s.MaxNotes, 20)
	var excluded []string
	var kept []string
	for _, p := range order {
		if !c.rt.Settings.PathAllowed(p) {
			excluded = append(excluded, p)
			continue
		}
		kept = append(kept, p)
	}
	if len(excluded) > 0 {
		c.meta.warn("globs_excluded", "", "%d note(s) excluded by the AI allow/deny globs were not read", len(excluded))
	}
	if len(kept) > max {
		c.meta.warn("scope_truncated", "", "the scope has %d notes; only the first %d were read (max_notes)", len(kept), max)
		kept = kept[:max]
	}
	// Order: paths as given, then glob/tag matches by path, then query hits
	// by rank, then the note and its links (deterministic for a vault state).
	for _, p := range kept {
		n, err := c.readNote(p)
		if err != nil {
			return err
		}
		c.notes = append(c.notes, n)
		c.byPath[p] = n
		c.meta.Scope = append(c.meta.Scope, p)
	}
	return nil
}

func (c *aiCall) readNote(rel string) (*scopeNote, error) {
	b, clean, err := c.vh.Vault.ReadNote(rel)
	if err != nil {
		return nil, err
	}
	rel, etag := clean, vault.Etag(b)
	outline, journal := c.vh.Vault.LogseqFile(rel)
	doc := markdown.Parse(b, markdown.Options{Path: rel, Logseq: outline, Journal: journal})
	text := strings.ReplaceAll(strings.TrimPrefix(string(b), "\ufeff"), "\r\n", "\n")
	return &scopeNote{Path: rel, Title: doc.Title, Etag: etag, Lines: strings.Split(text, "\n"), Headings: doc.Headings}, nil
}

// render prints notes for the prompt: a header with path and etag, then
// numbered lines, so the model can cite exact spans.
func render(notes []*scopeNote) string {
	var sb strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&sb, "=== NOTE path=%q etag=%q title=%q\n", n.Path, n.Etag, n.Title)
		for i, l := range n.Lines {
			fmt.Fprintf(&sb, "%d| %s\n", i+1, l)
		}
		sb.WriteString("=== END NOTE\n\n")
	}
	return sb.String()
}

// batches splits notes so that each batch fits the input budget; a note
// alone over the budget is ai_input_too_large.
func (c *aiCall) batches(notes []*scopeNote, reserve int) ([][]*scopeNote, error) {
	budget := c.rt.Settings.MaxInputTokens - reserve
	var out [][]*scopeNote
	var cur []*scopeNote
	size := 0
	for _, n := range notes {
		t := ai.EstimateTokens(render([]*scopeNote{n}))
		if t > budget {
			return nil, errs.New(errs.CodeAIInputTooLarge, "%s is about %d tokens, over the input budget of %d (ai.max_input_tokens)", n.Path, t, budget).
				With("path", n.Path).With("tokens", t)
		}
		if size+t > budget && len(cur) > 0 {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, n)
		size += t
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// rawCitation is a citation as the model writes it.
type rawCitation struct {
	Path    string `json:"path"`
	Etag    string `json:"etag,omitempty"`
	Anchor  string `json:"anchor,omitempty"`
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"end_line,omitempty"`
}

var citationSchema = map[string]any{
	"type": "object", "required": []string{"path"},
	"properties": map[string]any{
		"path": map[string]any{"type": "string"}, "etag": map[string]any{"type": "string"},
		"anchor": map[string]any{"type": "string"}, "line": map[string]any{"type": "integer"}, "end_line": map[string]any{"type": "integer"},
	},
}

func citationsSchema() map[string]any {
	return map[string]any{"type": "array", "items": citationSchema}
}

const groundingRules = `Use ONLY the notes given between "=== NOTE" and "=== END NOTE"; never outside knowledge. ` +
	`Cite sources as {"path", "etag", "line", "end_line", "anchor"}: path and etag exactly as in the NOTE header, line numbers as printed before "|", anchor the heading text if any. ` +
	`Reply with one JSON object only.`

// verify checks citations against the vault; survivors are returned with
// their snippet read back from the note, failures become warnings.
func (c *aiCall) verify(raw []rawCitation) []Citation {
	var out []Citation
	for _, r := range raw {
		if cit, ok := c.verifyOne(r); ok {
			out = append(out, cit)
			c.addCitation(cit)
		}
	}
	return out
}

func (c *aiCall) addCitation(cit Citation) {
	for _, x := range c.meta.Citations {
		if x == cit {
			return
		}
	}
	c.meta.Citations = append(c.meta.Citations, cit)
	if c.stream != nil {
		c.stream("ai.citation", cit)
	}
}

func (c *aiCall) verifyOne(r rawCitation) (Citation, bool) {
	invalid := func(format string, args ...any) (Citation, bool) {
		c.meta.warn("citation_invalid", r.Path, format, args...)
		return Citation{}, false
	}
	n := c.byPath[r.Path]
	if n == nil {
		return invalid("cited %q, which is not among the notes read", r.Path)
	}
	if r.Etag != "" && r.Etag != n.Etag {
		return invalid("cited a version of %s that was not read (etag %s)", r.Path, r.Etag)
	}
	b, _, err := c.vh.Vault.ReadNote(n.Path)
	if err != nil {
		return invalid("%s no longer exists", r.Path)
	}
	if vault.Etag(b) != n.Etag {
		c.meta.warn("citation_drift", r.Path, "%s changed while the answer was generated", r.Path)
		return Citation{}, false
	}
	cit := Citation{Path: n.Path, Etag: n.Etag, Line: r.Line, EndLine: r.EndLine}
	if r.Anchor != "" {
		want := strings.ToLower(strings.TrimSpace(strings.TrimLeft(r.Anchor, "# ")))
		found := false
		for i, h := range n.Headings {
			if strings.ToLower(strings.TrimSpace(h.Text)) == want {
				cit.Anchor, found = h.Text, true
				if cit.Line == 0 {
					cit.Line, cit.EndLine = h.Line, len(n.Lines)
					for _, h2 := range n.Headings[i+1:] {
						if h2.Level <= h.Level {
							cit.EndLine = h2.Line - 1
							break
						}
					}
				}
				break
			}
		}
		if !found {
			return invalid("heading %q is not in %s", r.Anchor, r.Path)
		}
	}
	if cit.Line != 0 || cit.EndLine != 0 {
		if cit.EndLine == 0 {
			cit.EndLine = cit.Line
		}
		if cit.Line < 1 || cit.EndLine < cit.Line || cit.EndLine > len(n.Lines) {
			return invalid("lines %d-%d are not in %s (%d lines)", r.Line, r.EndLine, r.Path, len(n.Lines))
		}
	}
	from, to := 1, len(n.Lines)
	if cit.Line > 0 {
		from, to = cit.Line, cit.EndLine
	}
	var parts []string
	for i := from; i <= to && len(parts) < 3; i++ {
		if t := strings.TrimSpace(n.Lines[i-1]); t != "" && t != "---" {
			parts = append(parts, t)
		}
	}
	cit.Snippet = truncRunes(strings.Join(parts, " "), 240)
	return cit, true
}

func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// generate asks the model for JSON matching schema and decodes it into
// dst; text that is not such JSON gets one repair round.
func (c *aiCall) generate(ctx context.Context, name string, schema map[string]any, system, user string, dst any, streaming bool) error {
	req := ai.Request{Messages: []ai.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}, Schema: schema, SchemaName: name}
	if streaming && c.stream != nil {
		req.OnDelta = func(s string) { c.stream("ai.partial", map[string]string{"text": s}) }
	}
	resp, err := c.rt.Complete(ctx, req)
	if err != nil {
		return err
	}
	c.account(resp)
	perr := decodeModelJSON(resp.Text, schema, dst)
	if perr == nil {
		return nil
	}
	req.OnDelta = nil
	req.Messages = append(req.Messages, ai.Message{Role: "assistant", Content: resp.Text},
		ai.Message{Role: "user", Content: "That reply is not valid: " + perr.Error() + ". Reply again with only the JSON object, matching the schema."})
	resp, err = c.rt.Complete(ctx, req)
	if err != nil {
		return err
	}
	c.account(resp)
	if err := decodeModelJSON(resp.Text, schema, dst); err != nil {
		return errs.New(errs.CodeAIProvider, "the model's output is not valid JSON for %s, even after a repair attempt: %v", name, err).With("provider", c.meta.Provider)
	}
	return nil
}

func (c *aiCall) account(resp *ai.Response) {
	c.meta.Usage.Add(resp.Usage)
	if resp.FinishReason == "length" {
		c.meta.warn("truncated", "", "the model stopped at the output token limit")
	}
	if c.stream != nil {
		c.stream("ai.usage", c.meta.Usage)
	}
}

// decodeModelJSON extracts, schema-checks and decodes the model's JSON.
func decodeModelJSON(text string, schema map[string]any, dst any) error {
	raw, err := ai.ExtractJSON(text)
	if err != nil {
		return err
	}
	if schema != nil {
		if err := validateAgainst(schema, raw); err != nil {
			return err
		}
	}
	return json.Unmarshal(raw, dst)
}

// cached runs gen unless the cache holds the result for this input over
// the same note versions; out is the output (with its AIMeta) to fill.
func cached[T any, PT interface {
	*T
	meta() *AIMeta
}](ctx context.Context, c *aiCall, in any, use bool, out PT, gen func() error) error {
	if c.rt.HasChat() {
		fp := make([][2]string, 0, len(c.notes))
		for _, n := range c.notes {
			fp = append(fp, [2]string{n.Path, n.Etag})
		}
		s := c.rt.Settings
		key := ai.Key(c.op, s.Provider, s.Model, s.Temperature, s.Seed, s.MaxOutputTokens, normalizedInput(in), fp, c.vh.Name)
		if use {
			var hit T
			if c.rt.CacheGet(ctx, key, &hit) {
				*out = hit
				m := PT(out).meta()
				m.Usage = ai.Usage{}
				m.warn("ai_cache_hit", "", "served from the AI cache: the same input over the same note versions was answered before")
				c.meta, c.hit = m, true
				return nil
			}
		}
		if err := gen(); err != nil {
			return err
		}
		c.rt.CachePut(ctx, key, c.op, out)
		return nil
	}
	return gen()
}

// normalizedInput drops the fields that do not change the generation.
func normalizedInput(in any) map[string]any {
	b, _ := json.Marshal(in)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"apply", "idempotency_key", "cache", "stream", "if_match", "vault"} {
		delete(m, k)
	}
	return m
}

// requireWrites refuses an apply when the call's vault does not allow
// writes (checked again in RunWrite; this answers before the model runs).
func (c *aiCall) requireWrites() error {
	if err := c.env.CheckWrites(c.vh, c.op); err != nil {
		return err
	}
	return nil
}

// idempotentAI wraps an AI handler: a call with an idempotency_key is
// answered from the stored first result when key and input match (within
// the cache TTL), and refused with idempotency_key_reused when the input
// differs. Calls without a key, or with AI off, run as they are.
func idempotentAI[In any, Out any, PI interface {
	*In
	opts() *AIOpts
}, PO interface {
	*Out
	meta() *AIMeta
}](op string, h func(context.Context, *Env, *In) (*Out, error)) func(context.Context, *Env, *In) (*Out, error) {
	return func(ctx context.Context, env *Env, in *In) (*Out, error) {
		key := PI(in).opts().IdempotencyKey
		vh, _ := env.Vault(PI(in).opts().Vault)
		rt := env.AIFor(vh)
		if key == "" || !rt.Enabled() {
			return h(ctx, env, in)
		}
		if len(key) > 200 {
			return nil, errs.New(errs.CodeInvalidInput, "idempotency_key is longer than 200 characters")
		}
		b, _ := json.Marshal(in)
		var m map[string]any
		json.Unmarshal(b, &m)
		delete(m, "idempotency_key")
		delete(m, "stream")
		hash := ai.Key(m)
		slot := ai.Key("idempotency", op, PI(in).opts().Vault, key)
		var rec struct {
			Hash   string          `json:"hash"`
			Output json.RawMessage `json:"output"`
		}
		if rt.CacheGet(ctx, slot, &rec) {
			if rec.Hash != hash {
				return nil, errs.New(errs.CodeIdempotencyReuse, "idempotency_key %q was used for a different %s call; use a new key for a new call", key, op).
					With("idempotency_key", key).With("operation", op)
			}
			out := new(Out)
			if err := json.Unmarshal(rec.Output, out); err != nil {
				return nil, errs.Wrap(err, errs.CodeInternal, "the stored result of this idempotency_key is damaged")
			}
			m := PO(out).meta()
			m.Usage = ai.Usage{}
			m.warn("idempotent_replay", "", "the stored result of the first call with this idempotency_key; nothing was generated or written now")
			return out, nil
		}
		out, err := h(ctx, env, in)
		if err != nil {
			return nil, err
		}
		ob, _ := json.Marshal(out)
		rec.Hash, rec.Output = hash, ob
		rt.CachePut(ctx, slot, op+":idempotency", rec)
		return out, nil
	}
}
