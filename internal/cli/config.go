package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

func init() { commandFactories = append(commandFactories, newConfigCmd) }

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check the config files (validate) and print every setting in effect with its source (show)",
		Long: "One precedence for every setting: flags > environment (LOCI_*) > your config file (~/.config/loci/config.yaml; " +
			"LOCI_CONFIG names another, LOCI_CONFIG_DIR the folder) > the vault's own <vault>/.loci/config.yaml > defaults. " +
			"Every file is read strictly: an unknown key, a wrong type, a bad glob, duration or enum value is config_invalid and every " +
			"command refuses to run with it. A vault's own file may not name a remote model server or its key, move the index out of " +
			"the vault, set chat: or turn agent writes on (docs/cli.md, docs/security.md).",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate [vault]",
		Short: "Check every config file of a vault: exit 0 with one OK line per file, or list every problem (exit 2)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := g.vaultArg(args[0]); err != nil {
					return err
				}
			}
			return g.validateConfig()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show [vault]",
		Short: "Print every effective setting of a vault with its source (flag, env, file:line, default), secrets redacted",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := g.vaultArg(args[0]); err != nil {
					return err
				}
			}
			return g.showConfig()
		},
	})
	return cmd
}

// problemLocation is "file:line" (or the file, "environment", "flags").
func problemLocation(p config.Problem) string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.Config, p.Line)
	}
	return p.Config
}

// validateConfig checks the vault's config files as every command loads
// them (including where index_dir leads).
func (g *globals) validateConfig() error {
	vc, err := g.currentVaultConfig()
	if err != nil {
		if probs := config.Problems(err); probs != nil && g.format == "text" {
			e := errs.As(err)
			for _, p := range probs {
				q := p
				q.Line = 0
				fmt.Fprintf(g.stderr, "%s: %s\n", problemLocation(p), q)
			}
			n := "1 problem"
			if len(probs) > 1 {
				n = fmt.Sprintf("%d problems", len(probs))
			}
			path, _ := e.Details["config"].(string)
			return &errs.Error{Code: e.Code, Message: fmt.Sprintf("invalid config %s: %s", path, n), Details: e.Details}
		}
		return err
	}
	c := vc.cfg
	if g.format == "json" {
		return g.print(map[string]any{"ok": true, "files": c.Files, "notices": nonNilProblems(c.Notices)}, nil)
	}
	found := false
	var absent []string
	for _, f := range c.Files {
		switch {
		case f.Exists:
			found = true
			fmt.Fprintf(g.stdout, "ok: %s (%s)\n", f.Path, layerName(f))
		case strings.HasPrefix(f.Note, "ignored"):
			fmt.Fprintf(g.stdout, "skipped: %s (%s)\n", f.Path, f.Note)
		default:
			absent = append(absent, f.Path)
		}
	}
	if !found {
		fmt.Fprintf(g.stdout, "ok: no config file (%s: none exists; defaults apply)\n", strings.Join(absent, ", "))
	}
	for _, n := range c.Notices {
		fmt.Fprintf(g.stdout, "note: %s: %s\n", problemLocation(n), noticeText(n))
	}
	return nil
}

func layerName(f config.FileRef) string {
	if f.Layer == config.LayerVault {
		return "the vault's own config"
	}
	if strings.HasSuffix(f.Path, "chat.yaml") || strings.HasPrefix(f.Note, "chat.yaml") {
		return "your config; chat.yaml: the chat: section on its own"
	}
	return "your config"
}

// noticeText renders a setting that was not honoured.
func noticeText(n config.Problem) string {
	q := n
	q.Line = 0
	return q.String()
}

func nonNilProblems(p []config.Problem) []config.Problem {
	if p == nil {
		return []config.Problem{}
	}
	return p
}

// redacted hides a secret's value, keeping whether it is set.
func redacted(s string) string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// redactTemplate shows a ${VAR} template as it is (it names a variable,
// not a secret) and hides any other literal value.
func redactTemplate(s string) string {
	if strings.Contains(s, "${") {
		return s
	}
	return redacted(s)
}

// redactURL hides a password written into a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	return u.String()
}

// shownTree is what `loci config show` prints: an ordered tree whose
// leaves are values with their sources.
type shownTree struct {
	keys     []string
	children map[string]*shownTree
	value    any
	source   string
	// elems are per-element sources of a list that adds up across layers.
	elems []string
	leaf  bool
}

func newTree() *shownTree { return &shownTree{children: map[string]*shownTree{}} }

func (t *shownTree) section(key string) *shownTree {
	if c, ok := t.children[key]; ok {
		return c
	}
	c := newTree()
	t.keys = append(t.keys, key)
	t.children[key] = c
	return c
}

func (t *shownTree) set(key string, value any, src config.Source) *shownTree {
	c := t.section(key)
	c.leaf, c.value, c.source = true, value, src.String()
	return c
}

func (t *shownTree) yamlNode() *yaml.Node {
	if t.leaf {
		var n yaml.Node
		if err := n.Encode(t.value); err != nil {
			n = yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(t.value)}
		}
		if n.Kind == yaml.SequenceNode && len(t.elems) == len(n.Content) && len(n.Content) > 0 {
			for i, el := range n.Content {
				el.LineComment = t.elems[i]
			}
			return &n
		}
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
			n.HeadComment = t.source
			return &n
		}
		n.LineComment = t.source
		return &n
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range t.keys {
		c := t.children[k]
		kn := &yaml.Node{Kind: yaml.ScalarNode, Value: k}
		vn := c.yamlNode()
		if c.leaf && vn.HeadComment != "" {
			kn.LineComment, vn.HeadComment = vn.HeadComment, ""
		}
		m.Content = append(m.Content, kn, vn)
	}
	return m
}

func (t *shownTree) jsonValue() any {
	if t.leaf {
		out := map[string]any{"value": t.value, "source": t.source}
		if len(t.elems) > 0 {
			out["sources"] = t.elems
		}
		return out
	}
	out := map[string]any{}
	for _, k := range t.keys {
		out[k] = t.children[k].jsonValue()
	}
	return out
}

// showConfig prints every effective setting of the vault with where it
// comes from: flag, env NAME, user file:line, vault file:line or default.
// API keys, tokens, header and server environment values and URL
// passwords are redacted.
func (g *globals) showConfig() error {
	vaultDir, err := g.vaultDir()
	if err != nil {
		return err
	}
	vc, err := g.vaultConfig(vaultDir)
	if err != nil {
		return err
	}
	c := vc.cfg
	v, err := vault.Open(vaultDir, nil)
	if err != nil {
		return err
	}
	cliW, err := g.writeSettings(c, true)
	if err != nil {
		return err
	}
	srvW, err := g.writeSettings(c, false)
	if err != nil {
		return err
	}
	es, err := embed.FromConfig(c)
	if err != nil {
		return err
	}
	as := ai.FromConfig(c)
	src := c.SourceOf
	def := config.Source{Layer: config.LayerDefault}

	t := newTree()
	t.set("vault", v.Root, vaultSource(g))
	var files []string
	for _, f := range c.Files {
		state := "absent"
		switch {
		case f.Exists:
			state = "read"
		case strings.HasPrefix(f.Note, "ignored"):
			state = f.Note
		}
		files = append(files, fmt.Sprintf("%s %s (%s)", f.Layer, f.Path, state))
	}
	fl := t.section("files")
	fl.leaf, fl.value, fl.source = true, files, "lowest first: vault < user; environment and flags above them"

	idx := vc.indexDir
	if idx == "" {
		idx = index.DefaultDir(v.Root)
	}
	if abs, err := filepath.Abs(idx); err == nil {
		idx = abs
	}
	t.set("index_dir", idx, src("index_dir"))
	ex := t.set("exclude", nonNil(c.Exclude), src("exclude"))
	for i := range c.Exclude {
		ex.elems = append(ex.elems, src(fmt.Sprintf("exclude[%d]", i)).String())
	}

	w := t.section("writes")
	gate := func() config.Source {
		if s := src("writes.read_only"); c.Writes.ReadOnly {
			return s
		}
		if c.Writes.Enabled != nil {
			return src("writes.enabled")
		}
		return def
	}
	w.set("cli", cliW.Allowed(), gate())
	w.set("servers", srvW.Allowed(), gate())
	w.set("read_only", srvW.ReadOnly, src("writes.read_only"))
	w.set("write_paths", nonNil(srvW.WritePaths), src("writes.write_paths"))
	dp := w.set("deny_paths", nonNil(srvW.DenyPaths), src("writes.deny_paths"))
	for i := range srvW.DenyPaths {
		dp.elems = append(dp.elems, src(fmt.Sprintf("writes.deny_paths[%d]", i)).String())
	}
	inbox := srvW.Inbox
	if inbox == "" {
		inbox = "Inbox"
	}
	w.set("inbox", inbox, src("writes.inbox"))
	jmb := srvW.JournalMaxBytes
	if jmb <= 0 {
		jmb = vault.DefaultJournalMaxBytes
	}
	w.set("journal_max_bytes", jmb, src("writes.journal_max_bytes"))
	jma := srvW.JournalMaxAge
	if jma <= 0 {
		jma = vault.DefaultJournalMaxAge
	}
	w.set("journal_max_age", jma.String(), src("writes.journal_max_age"))
	lt := srvW.LockTimeout
	if lt <= 0 {
		lt = vault.DefaultLockTimeout
	}
	w.set("lock_timeout", lt.String(), src("writes.lock_timeout"))

	if len(c.Providers) > 0 {
		ps := t.section("providers")
		names := make([]string, 0, len(c.Providers))
		for n := range c.Providers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p, k := c.Providers[n], "providers."+n
			s := ps.section(n)
			s.set("type", firstNonEmpty(p.Type, typeOfName(n)), src(k+".type"))
			if p.BaseURL != "" {
				s.set("base_url", redactURL(p.BaseURL), src(k+".base_url"))
			}
			if p.APIKeyEnv != "" {
				s.set("api_key_env", p.APIKeyEnv, src(k+".api_key_env"))
			}
			if p.APIKey != "" {
				s.set("api_key", redacted(p.APIKey), src(k+".api_key"))
			}
			for _, h := range sortedKeys(p.Headers) {
				s.section("headers").set(h, redactTemplate(p.Headers[h]), src(k+".headers."+h))
			}
		}
	}

	roleServer := func(sec *shownTree, role string) {
		ep := c.Endpoint(role)
		if ep == nil {
			return
		}
		sec.set("type", ep.Type, ep.Src["type"])
		sec.set("base_url", redactURL(ep.BaseURL), ep.Src["base_url"])
		sec.set("api_key", redacted(ep.APIKey), ep.Src["api_key"])
	}
	e := t.section("embed")
	e.set("provider", firstNonEmpty(c.Embed.Provider, es.Provider), src("embed.provider"))
	roleServer(e, config.RoleEmbed)
	if es.Model != "" {
		e.set("model", es.Model, src("embed.model"))
	}
	if es.ModelPath != "" {
		e.set("model_path", es.ModelPath, src("embed.model_path"))
	}
	e.set("dims", es.Dims, src("embed.dims"))
	e.set("batch_size", es.BatchSize, src("embed.batch_size"))
	e.set("concurrency", es.Concurrency, src("embed.concurrency"))
	e.set("max_retries", es.MaxRetries, src("embed.max_retries"))
	e.set("price_per_mtok", es.PricePerMTok, src("embed.price_per_mtok"))
	e.set("on_mismatch", es.OnMismatch, src("embed.on_mismatch"))
	e.set("int8", es.Int8, src("embed.int8"))

	sr := t.section("search")
	d := search.DefaultFusion
	num := func(key string, v, dv float64) {
		if v == 0 || (key != "min_similarity" && key != "agreement_floor" && key != "lexical_margin" && v < 0) {
			v = dv
		}
		sr.set(key, v, src("search."+key))
	}
	num("rrf_k", c.Search.RRFK, d.K)
	num("lexical_weight", c.Search.LexicalWeight, d.Lexical)
	num("semantic_weight", c.Search.SemanticWeight, d.Semantic)
	num("graph_weight", c.Search.GraphWeight, d.Graph)
	num("min_similarity", c.Search.MinSimilarity, d.MinSimilarity)
	num("agreement_floor", c.Search.AgreementFloor, d.AgreementFloor)
	num("lexical_margin", c.Search.LexicalMargin, d.LexicalMargin)

	a := t.section("ai")
	a.set("provider", firstNonEmpty(as.Provider, "none"), src("ai.provider"))
	roleServer(a, config.RoleAI)
	if as.Model != "" {
		a.set("model", as.Model, src("ai.model"))
	}
	a.set("max_input_tokens", as.MaxInputTokens, src("ai.max_input_tokens"))
	a.set("max_output_tokens", as.MaxOutputTokens, src("ai.max_output_tokens"))
	a.set("temperature", as.Temperature, src("ai.temperature"))
	if as.Seed != nil {
		a.set("seed", *as.Seed, src("ai.seed"))
	}
	a.set("timeout", as.Timeout.String(), src("ai.timeout_seconds"))
	a.set("max_retries", max(as.MaxRetries, 0), src("ai.max_retries"))
	a.set("structured", as.Structured, src("ai.structured"))
	a.set("daily_cost_usd", as.DailyCostUSD, src("ai.daily_cost_usd"))
	for _, m := range sortedKeys(as.Prices) {
		// Sources are recorded per field of an entry.
		p, k := a.section("prices").section(m), "ai.prices."+m
		p.set("input_per_mtok", as.Prices[m].InputPerMTok, src(k+".input_per_mtok"))
		p.set("output_per_mtok", as.Prices[m].OutputPerMTok, src(k+".output_per_mtok"))
	}
	a.set("allow_globs", nonNil(as.AllowGlobs), src("ai.allow_globs"))
	ag := a.set("deny_globs", nonNil(as.DenyGlobs), src("ai.deny_globs"))
	for i := range as.DenyGlobs {
		ag.elems = append(ag.elems, src(fmt.Sprintf("ai.deny_globs[%d]", i)).String())
	}

	// loci chat resolves the user's side only (no vault): show that.
	t.set("read_paths", nonNil(c.ReadPaths), src("read_paths"))
	drp := t.set("deny_read_paths", nonNil(c.DenyReadPaths), src("deny_read_paths"))
	for i := range c.DenyReadPaths {
		drp.elems = append(drp.elems, src(fmt.Sprintf("deny_read_paths[%d]", i)).String())
	}
	showServer(t.section("server"), c)
	if err := g.showChat(t.section("chat")); err != nil {
		return err
	}
	if len(c.Notices) > 0 {
		var notes []string
		for _, n := range c.Notices {
			notes = append(notes, problemLocation(n)+": "+noticeText(n))
		}
		nt := t.section("not_honoured")
		nt.leaf, nt.value, nt.source = true, notes, "settings loci did not apply, and why"
	}

	if g.format == "json" {
		b, _ := json.MarshalIndent(t.jsonValue(), "", "  ")
		fmt.Fprintln(g.stdout, string(b))
		return nil
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{t.yamlNode()},
		HeadComment: "effective settings: flags > environment > your config > the vault's config > defaults;\neach value's source follows it; secrets redacted"}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "cannot render the settings")
	}
	fmt.Fprint(g.stdout, string(b))
	return nil
}

// showServer adds the server section (`loci serve` for several agents:
// docs/security.md). The JWT secret and the metrics token are shown as a
// file and a variable's name, never their contents.
func showServer(s *shownTree, c *config.Config) {
	src, sv := c.SourceOf, c.Server
	j := s.section("jwt")
	j.set("hs256_secret_file", sv.JWT.HS256SecretFile, src("server.jwt.hs256_secret_file"))
	j.set("jwks_file", sv.JWT.JWKSFile, src("server.jwt.jwks_file"))
	j.set("jwks_url", sv.JWT.JWKSURL, src("server.jwt.jwks_url"))
	j.set("issuer", sv.JWT.Issuer, src("server.jwt.issuer"))
	j.set("audience", sv.JWT.Audience, src("server.jwt.audience"))
	j.set("name_claim", firstNonEmpty(sv.JWT.NameClaim, auth.DefaultNameClaim), src("server.jwt.name_claim"))
	j.set("scopes_claim", firstNonEmpty(sv.JWT.ScopesClaim, auth.DefaultScopesClaim), src("server.jwt.scopes_claim"))
	j.set("vaults_claim", firstNonEmpty(sv.JWT.VaultsClaim, auth.DefaultVaultsClaim), src("server.jwt.vaults_claim"))
	j.set("confirm", firstNonEmpty(sv.JWT.Confirm, auth.PolicyConfirm), src("server.jwt.confirm"))
	j.set("authorization_servers", nonNil(sv.JWT.AuthorizationServers), src("server.jwt.authorization_servers"))
	j.set("resource", sv.JWT.Resource, src("server.jwt.resource"))
	l := s.section("limits")
	for _, r := range []struct {
		name string
		rate config.Rate
	}{{"read", sv.Limits.Read}, {"write", sv.Limits.Write}, {"ai", sv.Limits.AI}} {
		rs := l.section(r.name)
		rs.set("per_minute", r.rate.PerMinute, src("server.limits."+r.name+".per_minute"))
		rs.set("burst", r.rate.Burst, src("server.limits."+r.name+".burst"))
	}
	l.set("concurrency", sv.Limits.Concurrency, src("server.limits.concurrency"))
	s.set("toolsets", nonNil(sv.Toolsets), src("server.toolsets"))
	s.set("facade", sv.Facade, src("server.facade"))
	s.set("calls_log_max_bytes", sv.CallsLogMaxBytes, src("server.calls_log_max_bytes"))
	s.set("metrics_token_env", sv.MetricsTokenEnv, src("server.metrics_token_env"))
}

// showChat adds loci chat's settings: the user's files, environment and
// defaults (never a vault's).
func (g *globals) showChat(t *shownTree) error {
	c, err := config.Resolve("", config.Options{})
	if err != nil {
		return err
	}
	cc, err := chat.FromConfig(c)
	if err != nil {
		return err
	}
	cc.Resolve(c.Getenv)
	src := c.SourceOf
	if ep := c.Endpoint(config.RoleChat); ep != nil {
		t.set("provider", firstNonEmpty(ep.Provider, "(chat.base_url)"), ep.Src["provider"])
		t.set("type", ep.Type, ep.Src["type"])
		t.set("base_url", redactURL(ep.BaseURL), ep.Src["base_url"])
		t.set("api_key", redacted(ep.APIKey), ep.Src["api_key"])
	} else {
		t.set("provider", "none", src("chat.provider"))
	}
	t.set("model", cc.Model.Name, src("chat.model"))
	if cc.Model.Temperature != nil {
		t.set("temperature", *cc.Model.Temperature, src("chat.temperature"))
	}
	if cc.Model.MaxTokens > 0 {
		t.set("max_tokens", cc.Model.MaxTokens, src("chat.max_tokens"))
	}
	if cc.Model.SystemPrompt != "" {
		t.set("system_prompt", chatOneLine(cc.Model.SystemPrompt, 60), src("chat.system_prompt"))
	}
	for _, h := range sortedKeys(c.Chat.Headers) {
		t.section("headers").set(h, redactTemplate(c.Chat.Headers[h]), src("chat.headers."+h))
	}
	for _, alias := range sortedKeys(cc.Servers) {
		s, k := cc.Servers[alias], "chat.servers."+alias
		st := t.section("servers").section(alias)
		if s.URL != "" {
			st.set("url", redactURL(s.URL), src(k+".url"))
		} else {
			st.set("command", strings.Join(append(append([]string{}, s.Command...), s.Args...), " "), src(k+".command"))
		}
		if s.Token != "" {
			st.set("token", redactTemplate(s.Token), src(k+".token"))
		}
		if s.TokenEnv != "" {
			st.set("token_env", s.TokenEnv, src(k+".token_env"))
		}
		for _, h := range sortedKeys(s.Headers) {
			st.section("headers").set(h, redactTemplate(s.Headers[h]), src(k+".headers."+h))
		}
		for _, ev := range sortedKeys(s.Env) {
			st.section("env").set(ev, redactTemplate(s.Env[ev]), src(k+".env."+ev))
		}
		if s.Disabled {
			st.set("disabled", true, src(k+".disabled"))
		}
	}
	t.set("auto_approve", nonNil(cc.AutoApprove), src("chat.auto_approve"))
	t.set("auto_approve_read_only", cc.AutoApproveReadOnly, src("chat.auto_approve_read_only"))
	t.set("max_tool_depth", cc.MaxToolDepth, src("chat.max_tool_depth"))
	t.set("max_result_chars", cc.MaxResultChars, src("chat.max_result_chars"))
	t.set("tool_timeout", cc.ToolTimeout.String(), src("chat.tool_timeout"))
	t.set("connect_timeout", cc.ConnectTimeout.String(), src("chat.connect_timeout"))
	cm := t.section("commands")
	cm.set("enabled", cc.Commands.Enabled, src("chat.commands.enabled"))
	cm.set("timeout", cc.Commands.Timeout.String(), src("chat.commands.timeout"))
	if cc.Commands.Shell != "" {
		cm.set("shell", cc.Commands.Shell, src("chat.commands.shell"))
	}
	h := t.section("history")
	h.set("enabled", cc.HistoryEnabled(), src("chat.history.enabled"))
	h.set("dir", cc.History.Dir, src("chat.history.dir"))
	return nil
}

// vaultSource says where the vault folder came from (an argument counts
// as the flag).
func vaultSource(g *globals) config.Source {
	if g.flags != nil {
		if f := g.flags.Lookup("vault"); f != nil && f.Changed || g.vault != f.DefValue {
			return config.Source{Layer: config.LayerFlag, Name: "vault"}
		}
	}
	if os.Getenv("LOCI_VAULT") != "" {
		return config.Source{Layer: config.LayerEnv, Name: "LOCI_VAULT"}
	}
	return config.Source{Layer: config.LayerDefault}
}

func typeOfName(name string) string {
	for _, t := range config.ProviderTypes {
		if t == name {
			return t
		}
	}
	return "openai-compatible"
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
