package config

import (
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// The roles that name a model server.
const (
	RoleAI    = "ai"
	RoleEmbed = "embed"
	RoleChat  = "chat"
)

// ProviderTypes are the kinds of OpenAI-compatible servers loci knows.
var ProviderTypes = []string{"openai", "ollama", "llamacpp", "vllm", "openai-compatible"}

// Default base URLs by provider type.
const (
	OpenAIBaseURL = "https://api.openai.com/v1"
	OllamaBaseURL = "http://localhost:11434/v1"
)

// The OpenAI SDKs' own variables, used as fallbacks for a provider of type
// openai that the user chose (never one a vault's own file chose).
const (
	EnvOpenAIKey  = "OPENAI_API_KEY"
	EnvOpenAIBase = "OPENAI_BASE_URL"
)

// roleValues are a role's provider values that are not model servers.
var roleValues = map[string][]string{
	RoleAI:    {"none", "embeddings"},
	RoleEmbed: {"builtin", "model2vec", "onnx", "none", "off"},
	RoleChat:  {},
}

// Endpoint is the model server a role uses, resolved over every layer.
type Endpoint struct {
	Role     string
	Provider string // as configured: a providers entry or a type
	Type     string // openai | ollama | llamacpp | vllm | openai-compatible
	BaseURL  string
	APIKey   string
	// KeyEnv is the variable api_key_env named, when the key comes from one
	// (it may be unset: APIKey is then "").
	KeyEnv  string
	Headers map[string]string // ${VAR} expanded
	// Src says where provider, type, base_url and api_key come from, and
	// each header: "headers.<Name>".
	Src map[string]Source
	// keyKey and baseKey are the config keys that set the key and the base
	// URL (for messages); headerKeys the key that set each header.
	keyKey, baseKey string
	headerKeys      map[string]string
	// chooser is whoever decided the base URL: its source, or for a default
	// the source of the provider (or type) that implies it.
	chooser Source
}

// roleSection returns a role's provider-related settings.
func (c *Config) roleSection(role string) (provider, baseURL, apiKey, apiKeyEnv string, headers map[string]string) {
	switch role {
	case RoleAI:
		return c.AI.Provider, c.AI.BaseURL, c.AI.APIKey, c.AI.APIKeyEnv, nil
	case RoleEmbed:
		return c.Embed.Provider, c.Embed.BaseURL, c.Embed.APIKey, c.Embed.APIKeyEnv, nil
	case RoleChat:
		return c.Chat.Provider, c.Chat.BaseURL, c.Chat.APIKey, c.Chat.APIKeyEnv, c.Chat.Headers
	}
	return "", "", "", "", nil
}

// Endpoint returns the model server of a role (nil when the role names
// none: AI off or embeddings-only, the built-in embedder, no chat model).
func (c *Config) Endpoint(role string) *Endpoint {
	if ep, ok := c.endpoints[role]; ok {
		return ep
	}
	ep, _ := c.endpoint(role)
	return ep
}

// endpoint resolves a role's server and the problems of the vault rule.
func (c *Config) endpoint(role string) (*Endpoint, []Problem) {
	name, roleBase, roleKey, roleKeyEnv, roleHeaders := c.roleSection(role)
	name = strings.TrimSpace(name)
	if slices.Contains(roleValues[role], name) || (name == "" && (role != RoleChat || roleBase == "")) {
		return nil, nil
	}
	pk := role + ".provider"
	ep := &Endpoint{Role: role, Provider: name, Src: map[string]Source{}}
	ep.Src["provider"] = c.SourceOf(pk)
	typeSrc := c.SourceOf(pk)
	entry, isEntry := c.Providers[name]
	ek := "providers." + name
	var base, key string
	var baseSrc, keySrc Source
	ep.Headers, ep.headerKeys = map[string]string{}, map[string]string{}
	if isEntry {
		ep.Type = entry.Type
		if ep.Type != "" {
			typeSrc = c.SourceOf(ek + ".type")
		} else if slices.Contains(ProviderTypes, name) {
			ep.Type = name
		} else {
			ep.Type = "openai-compatible"
		}
		if entry.BaseURL != "" {
			base, baseSrc, ep.baseKey = entry.BaseURL, c.SourceOf(ek+".base_url"), ek+".base_url"
		}
		switch {
		case entry.APIKeyEnv != "":
			key, keySrc, ep.keyKey, ep.KeyEnv = c.getenv(entry.APIKeyEnv), c.SourceOf(ek+".api_key_env"), ek+".api_key_env", entry.APIKeyEnv
		case entry.APIKey != "":
			key, keySrc, ep.keyKey = entry.APIKey, c.SourceOf(ek+".api_key"), ek+".api_key"
		}
		for _, k := range slices.Sorted(maps.Keys(entry.Headers)) {
			ep.setHeader(k, expandVars(entry.Headers[k], c.getenv), ek+".headers."+k, c.SourceOf(ek+".headers."+k), false)
		}
	} else if name == "" {
		// chat with only a base_url: an implicit server.
		ep.Type = "openai-compatible"
		if hostOf(roleBase) == "api.openai.com" {
			ep.Type = "openai"
		}
		typeSrc = c.SourceOf(role + ".base_url")
	} else {
		ep.Type = name
	}
	// The role's own base_url and key (the older spelling, and the
	// LOCI_<ROLE>_* variables) override the entry's when their layer is at
	// least as high.
	if roleBase != "" {
		if s := c.SourceOf(role + ".base_url"); base == "" || rank(s.Layer) >= rank(baseSrc.Layer) {
			base, baseSrc, ep.baseKey = roleBase, s, role+".base_url"
		}
	}
	for _, rk := range []struct{ k, v string }{{"api_key", roleKey}, {"api_key_env", roleKeyEnv}} {
		if rk.v == "" {
			continue
		}
		s := c.SourceOf(role + "." + rk.k)
		if rank(s.Layer) >= rank(keySrc.Layer) {
			v, kenv := rk.v, ""
			if rk.k == "api_key_env" {
				v, kenv = c.getenv(rk.v), rk.v
			}
			key, keySrc, ep.keyKey, ep.KeyEnv = v, s, role+"."+rk.k, kenv
		}
	}
	for _, k := range slices.Sorted(maps.Keys(roleHeaders)) {
		ep.setHeader(k, expandVars(roleHeaders[k], c.getenv), role+".headers."+k, c.SourceOf(role+".headers."+k), true)
	}
	ep.Src["type"] = typeSrc
	ep.chooser = baseSrc
	if base == "" {
		ep.chooser = typeSrc
		switch ep.Type {
		case "openai":
			base, baseSrc = OpenAIBaseURL, Source{Layer: LayerDefault}
			if v := c.getenv(EnvOpenAIBase); v != "" && typeSrc.IsUser() {
				base, baseSrc = v, Source{Layer: LayerEnv, Name: EnvOpenAIBase}
				ep.chooser = baseSrc
			}
		case "ollama":
			base, baseSrc = OllamaBaseURL, Source{Layer: LayerDefault}
		}
	}
	ep.BaseURL, ep.APIKey = strings.TrimSpace(base), key
	ep.Src["base_url"], ep.Src["api_key"] = baseSrc, keySrc
	if ep.baseKey == "" {
		ep.baseKey = pk
		if isEntry && c.SourceOf(ek+".type").Layer != LayerDefault {
			ep.baseKey = ek + ".type"
		}
	}

	var probs []Problem
	vaultChose := ep.Src["provider"].Layer == LayerVault
	// OPENAI_API_KEY goes only to the OpenAI API (or the server the user
	// named in OPENAI_BASE_URL), and only for a server the user chose.
	if ep.APIKey == "" && keySrc.Layer == "" && (ep.Type == "openai" || hostOf(ep.BaseURL) == "api.openai.com") &&
		!vaultChose && ep.chooser.Layer != LayerVault {
		if v := c.getenv(EnvOpenAIKey); v != "" {
			ep.APIKey, keySrc = v, Source{Layer: LayerEnv, Name: EnvOpenAIKey}
			ep.Src["api_key"] = keySrc
		}
	}
	if ep.BaseURL == "" {
		return ep, append(probs, c.problem(pk, "provider "+quote(name)+" ("+ep.Type+") has no base_url: set "+role+".base_url or providers."+name+".base_url", ""))
	}
	remote := !IsLoopbackURL(ep.BaseURL)
	switch {
	case remote && ep.chooser.Layer == LayerVault:
		// The vault's own file named (or implied) a server elsewhere.
		probs = append(probs, c.problem(ep.baseKey, redactURL(ep.BaseURL)+" is not on this machine; "+remoteRule, ""))
	case remote && vaultChose && !(ep.baseKey == role+".base_url" && baseSrc.IsUser()):
		// The vault's file chose a provider whose server is elsewhere (a
		// type's default, or an entry of your own): only you may send this
		// role there (LOCI_<ROLE>_PROVIDER, <role>.provider in your config,
		// or <role>.base_url / LOCI_<ROLE>_BASE_URL naming the server).
		probs = append(probs, c.problem(pk, quote(name)+" means "+redactURL(ep.BaseURL)+", which is not on this machine; "+remoteRule, ""))
	case remote && (keySrc.Layer == LayerVault || ep.vaultHeader() != ""):
		// The user sent this role elsewhere; the vault's file may still not
		// pick the secret (or any header: one named Authorization replaces
		// the key) that goes with it. Every header is checked by its own
		// source, whoever else set headers on the same entry.
		k := ep.keyKey
		if keySrc.Layer != LayerVault {
			k = ep.vaultHeader()
		}
		probs = append(probs, c.problem(k, "the key for "+redactURL(ep.BaseURL)+" (a server elsewhere) may not come from the vault's own config; set "+envKeyOf(role)+" or put it in your own config", ""))
	}
	// Even for a server on this machine, a vault's own file may not pick
	// which of your environment variables is sent: another user of the
	// machine can listen on a local port, and AWS_SECRET_ACCESS_KEY is not
	// a model server's key. Keys the vault's file writes out itself (api_key)
	// are its own to give.
	if ep.KeyEnv != "" && keySrc.Layer == LayerVault {
		probs = append(probs, c.problem(ep.keyKey, "a vault's own config may not choose an environment variable to send ("+ep.KeyEnv+"): "+
			"a planted or cloned vault could read any secret of yours this way; name the key in your own config (~/.config/loci/config.yaml or $LOCI_CONFIG) or set "+envKeyOf(role), ""))
	}
	rawHeaders := map[string]map[string]string{role + ".headers.": roleHeaders}
	if isEntry {
		rawHeaders["providers."+name+".headers."] = entry.Headers
	}
	for prefix, hs := range rawHeaders {
		for h, v := range hs {
			if k := prefix + h; c.SourceOf(k).Layer == LayerVault && strings.Contains(v, "${") {
				probs = append(probs, c.problem(k, "a vault's own config may not put your environment variables (${...}) into a request header; set this header in your own config", ""))
			}
		}
	}
	if ep.chooser.Layer == LayerVault {
		// Your key, and your headers (a ${VAR} secret, a token), never go
		// to a server a vault's file named.
		if keySrc.IsUser() && ep.APIKey != "" {
			c.Notices = append(c.Notices, c.problem(ep.keyKey, "not sent to "+redactURL(ep.BaseURL)+", which the vault's own config named ("+ep.chooser.String()+"); name that server yourself to use your key with it", ""))
			ep.APIKey = ""
			ep.Src["api_key"] = Source{Layer: LayerDefault}
		}
		for _, h := range slices.Sorted(maps.Keys(ep.headerKeys)) {
			if k := ep.headerKeys[h]; ep.Src["headers."+h].IsUser() {
				c.Notices = append(c.Notices, c.problem(k, "header not sent to "+redactURL(ep.BaseURL)+", which the vault's own config named ("+ep.chooser.String()+"); name that server yourself to send your headers to it", ""))
				delete(ep.Headers, h)
				delete(ep.headerKeys, h)
				delete(ep.Src, "headers."+h)
			}
		}
	}
	return ep, probs
}

// setHeader sets a header from the config key key. HTTP header names are
// case-insensitive: of two spellings of one name the role's (override)
// wins over the entry's, else the higher layer's, else the first.
func (ep *Endpoint) setHeader(name, value, key string, src Source, override bool) {
	for h := range ep.Headers {
		if strings.EqualFold(h, name) && h != name {
			if !override && rank(src.Layer) <= rank(ep.Src["headers."+h].Layer) {
				return
			}
			delete(ep.Headers, h)
			delete(ep.headerKeys, h)
			delete(ep.Src, "headers."+h)
		}
	}
	ep.Headers[name], ep.headerKeys[name] = value, key
	ep.Src["headers."+name] = src
}

// vaultHeader returns the config key of a header the vault's own file set
// ("" when none did; the first in key order).
func (ep *Endpoint) vaultHeader() string {
	var keys []string
	for h, k := range ep.headerKeys {
		if ep.Src["headers."+h].Layer == LayerVault {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	return keys[0]
}

func envKeyOf(role string) string {
	return "LOCI_" + strings.ToUpper(role) + "_API_KEY"
}

func quote(s string) string { return `"` + s + `"` }

// problem builds a problem at key, located where the key's value comes from.
func (c *Config) problem(key, msg, suggestion string) Problem {
	s := c.SourceOf(key)
	p := Problem{Key: key, Line: s.Line, Message: msg, Suggestion: suggestion, Config: s.Path}
	switch s.Layer {
	case LayerEnv:
		p.Config, p.Key, p.Message = "environment", s.Name, key+": "+msg
	case LayerFlag:
		p.Config, p.Key, p.Message = "flags", "--"+s.Name, key+": "+msg
	}
	return p
}

const remoteRule = "a vault's own config may only name a model server on this machine (base_url http://localhost:..., 127.0.0.1 or [::1]): " +
	"a planted or cloned vault could otherwise send your notes, and the key it names, to any server; " +
	"configure a remote provider in your own config (~/.config/loci/config.yaml or $LOCI_CONFIG) or with LOCI_* variables"

// check applies the rules that need every layer: role providers name a
// known server, a vault's file keeps to this machine and does not turn
// agent writes on.
func (c *Config) check() []Problem {
	var probs []Problem
	c.endpoints = map[string]*Endpoint{}
	for _, role := range []string{RoleEmbed, RoleAI, RoleChat} {
		name, _, _, _, _ := c.roleSection(role)
		name = strings.TrimSpace(name)
		if name != "" && !slices.Contains(roleValues[role], name) && !slices.Contains(ProviderTypes, name) {
			if _, ok := c.Providers[name]; !ok {
				opts := append(append([]string{}, roleValues[role]...), ProviderTypes...)
				var entries []string
				for k := range c.Providers {
					entries = append(entries, k)
				}
				sort.Strings(entries)
				opts = append(opts, entries...)
				probs = append(probs, c.problem(role+".provider", quote(name)+" is not one of "+strings.Join(opts, ", ")+" (name a server under providers:)", suggest(name, opts)))
				continue
			}
		}
		ep, p := c.endpoint(role)
		probs = append(probs, p...)
		c.endpoints[role] = ep
	}
	// A vault's own provider entries keep to this machine too, used or not.
	for name, pr := range c.Providers {
		k := "providers." + name + ".base_url"
		if pr.BaseURL != "" && c.SourceOf(k).Layer == LayerVault && !IsLoopbackURL(pr.BaseURL) {
			if !slices.ContainsFunc(probs, func(p Problem) bool { return p.Key == k }) {
				probs = append(probs, c.problem(k, redactURL(pr.BaseURL)+" is not on this machine; "+remoteRule, ""))
			}
		}
	}
	probs = append(probs, c.checkRoles()...)
	// A vault's own file may not turn agent writes on.
	if w := c.Writes.Enabled; w != nil && *w && c.SourceOf("writes.enabled").Layer == LayerVault {
		s := c.SourceOf("writes.enabled")
		c.Notices = append(c.Notices, Problem{Key: "writes.enabled", Line: s.Line, Config: s.Path,
			Message: "true is not honoured from a vault's own config: agents of loci mcp / loci serve get writes only when you enable them (--enable-writes, LOCI_ENABLE_WRITES=1 or writes.enabled in your own config)"})
		c.Writes.Enabled = nil
		delete(c.Sources, "writes.enabled")
	}
	c.dropVaultPrices()
	sort.SliceStable(probs, func(i, j int) bool {
		if probs[i].Config != probs[j].Config {
			return false
		}
		return probs[i].Line < probs[j].Line
	})
	return probs
}

// dropVaultPrices leaves out the prices a vault's own file set: they are
// the user's (a "*" at $0 would switch off the daily cost ceiling), so
// they are not honoured, with a notice for each entry. A field the user
// set stays.
func (c *Config) dropVaultPrices() {
	for _, m := range slices.Sorted(maps.Keys(c.AI.Prices)) {
		p, k := c.AI.Prices[m], "ai.prices."+m
		noticed, kept := false, false
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input_per_mtok", &p.InputPerMTok}, {"output_per_mtok", &p.OutputPerMTok}} {
			fk := k + "." + f.name
			switch s := c.SourceOf(fk); {
			case s.Layer == LayerVault:
				if !noticed {
					c.Notices = append(c.Notices, Problem{Key: fk, Line: s.Line, Config: s.Path,
						Message: "not honoured from a vault's own config: prices are yours (ai.prices in your own config); a vault's could price your models at $0 and switch off your daily cost ceiling"})
					noticed = true
				}
				*f.v = 0
				delete(c.Sources, fk)
			case s.IsUser():
				kept = true
			}
		}
		if kept {
			c.AI.Prices[m] = p
			continue
		}
		delete(c.AI.Prices, m)
		delete(c.Sources, k)
	}
}

// IsLoopbackURL reports whether u names a server on this machine:
// localhost (or a name under .localhost) or a loopback address.
func IsLoopbackURL(u string) bool {
	h := hostOf(u)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func hostOf(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return ""
	}
	return strings.ToLower(p.Hostname())
}

// redactURL drops a password from a URL for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if _, ok := p.User.Password(); ok {
		p.User = url.UserPassword(p.User.Username(), "REDACTED")
	}
	return p.String()
}

var varRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// expandVars replaces ${NAME} with the environment variable NAME (only that
// form: a bare $ is kept, tokens and URLs may contain one).
func expandVars(s string, getenv func(string) string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRE().ReplaceAllStringFunc(s, func(m string) string { return getenv(m[2 : len(m)-1]) })
}

// ExpandVars is expandVars for other packages.
func ExpandVars(s string, getenv func(string) string) string { return expandVars(s, getenv) }
