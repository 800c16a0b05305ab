package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// The layers, lowest first. A higher layer's value replaces a lower one's
// (lists marked merge:"union" add up instead).
const (
	LayerDefault = "default"
	LayerVault   = "vault" // <vault>/.loci/config.yaml: untrusted input
	LayerUser    = "user"  // the user's own files
	LayerEnv     = "env"   // LOCI_* variables (and OPENAI_* fallbacks)
	LayerFlag    = "flag"  // command-line flags
)

func rank(layer string) int {
	switch layer {
	case LayerVault:
		return 1
	case LayerUser:
		return 2
	case LayerEnv:
		return 3
	case LayerFlag:
		return 4
	}
	return 0
}

// Source says where an effective value comes from.
type Source struct {
	Layer string `json:"layer"`
	// Name is the variable (env) or flag (flag) that set it.
	Name string `json:"name,omitempty"`
	// Path and Line locate it in a file (vault, user).
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
}

// String renders the source as `loci config show` prints it: "flag
// --read-only", "env LOCI_AI_MODEL", "user /home/me/.config/loci/config.yaml:3",
// "vault /notes/.loci/config.yaml:7" or "default".
func (s Source) String() string {
	switch s.Layer {
	case LayerEnv:
		return "env " + s.Name
	case LayerFlag:
		return "flag --" + s.Name
	case LayerVault, LayerUser:
		if s.Line > 0 {
			return fmt.Sprintf("%s %s:%d", s.Layer, s.Path, s.Line)
		}
		return s.Layer + " " + s.Path
	}
	return LayerDefault
}

// IsUser reports whether the value is the user's choice (a flag, the
// environment or the user's own file), not a vault's or a default.
func (s Source) IsUser() bool { return rank(s.Layer) >= rank(LayerUser) }

// FileRef is one config file loci looked for.
type FileRef struct {
	Layer  string `json:"layer"`
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Note says why a file is special (the older chat.yaml, ignored).
	Note string `json:"note,omitempty"`
}

// Flag is a value given on the command line, for the key it sets.
type Flag struct {
	Key   string // config key path: index_dir, exclude, writes.enabled, chat.model, ...
	Name  string // the flag, without dashes
	Value any    // string, bool or []string
}

// Options are the inputs of Resolve besides the files.
type Options struct {
	// Flags the user gave (only those given: an unchanged flag is no value).
	Flags []Flag
	// ChatFile is a chat config named for this run (loci chat --config).
	ChatFile string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// Environment variables naming the user's config files.
const (
	// EnvConfig names the user's config file (default
	// <LOCI_CONFIG_DIR>/config.yaml); it must exist.
	EnvConfig = "LOCI_CONFIG"
	// EnvConfigDir is the folder of the user's config files (default
	// <user config dir>/loci, i.e. ~/.config/loci on Linux).
	EnvConfigDir = "LOCI_CONFIG_DIR"
	// EnvChatConfig names the older chat.yaml file; it must exist.
	EnvChatConfig = "LOCI_CHAT_CONFIG"
)

// Where a config file came from (File.Source): its trust differs.
const (
	SourceNone  = ""
	SourceVault = LayerVault
	SourceUser  = LayerUser
)

// UserConfigDir is where the user's config files live: $LOCI_CONFIG_DIR,
// else <user config dir>/loci ("" when there is no home).
func UserConfigDir(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(EnvConfigDir); d != "" {
		return d
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "loci")
}

// Config is the effective configuration of a vault (or of the user alone,
// for loci chat without a vault): every layer merged, with the source of
// every value that is not a default.
type Config struct {
	File
	// Sources maps key paths (ai.model, exclude[1], providers.x.base_url) to
	// where their values come from; a key that is absent has its default.
	Sources map[string]Source
	// Files are the config files looked for, lowest layer first.
	Files []FileRef
	// Notices are settings that were not honoured, and why (a vault's
	// writes.enabled: true, a key not sent to a server a vault named).
	Notices []Problem
	// VaultRoot is the vault resolved for ("" for none).
	VaultRoot string

	getenv    func(string) string
	endpoints map[string]*Endpoint
}

// SourceOf returns where key's value comes from (LayerDefault when unset).
func (c *Config) SourceOf(key string) Source {
	if s, ok := c.Sources[key]; ok {
		return s
	}
	return Source{Layer: LayerDefault}
}

// Getenv reads the environment the configuration was resolved with.
func (c *Config) Getenv(name string) string { return c.getenv(name) }

// layer is one decoded source of settings.
type layer struct {
	kind  string
	path  string
	f     *File
	names map[string]string // env and flag layers: key path → variable or flag
}

func (l *layer) set(key string) bool {
	_, ok := l.f.lines[key]
	return ok
}

func (l *layer) source(key string) Source {
	switch l.kind {
	case LayerEnv, LayerFlag:
		k := key
		for k != "" {
			if n, ok := l.names[k]; ok {
				return Source{Layer: l.kind, Name: n}
			}
			if i := strings.LastIndexAny(k, ".["); i >= 0 {
				k = k[:i]
			} else {
				k = ""
			}
		}
		return Source{Layer: l.kind}
	}
	return Source{Layer: l.kind, Path: l.path, Line: l.f.lines[key]}
}

// Resolve reads every layer of a vault's configuration — the vault's own
// .loci/config.yaml, the user's files, the environment and the flags — and
// merges them: flags > environment > user file > vault file > defaults.
// vaultRoot "" resolves the user's configuration alone. Every problem in
// any layer is one config_invalid error (details: config, problems).
func Resolve(vaultRoot string, o Options) (*Config, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{VaultRoot: vaultRoot, getenv: getenv, Sources: map[string]Source{}}
	var layers []*layer
	var probs []Problem
	add := func(l *layer, p []Problem, where string) {
		for i := range p {
			if p[i].Config == "" {
				p[i].Config = where
			}
		}
		probs = append(probs, p...)
		if l != nil && len(p) == 0 {
			layers = append(layers, l)
		}
	}

	// The user's files first: one of them may say to skip the vault's.
	var user []*layer
	dir := UserConfigDir(getenv)
	chatPath, chatExplicit := o.ChatFile, o.ChatFile != ""
	if !chatExplicit {
		if chatPath = getenv(EnvChatConfig); chatPath != "" {
			chatExplicit = true
		} else if dir != "" {
			chatPath = filepath.Join(dir, "chat.yaml")
		}
	}
	readChat := func() {
		if chatPath == "" {
			return
		}
		l, p, exists, err := readUserFile(chatPath, chatExplicit, true)
		if err != nil {
			probs = append(probs, *err)
			return
		}
		c.Files = append(c.Files, FileRef{Layer: LayerUser, Path: chatPath, Exists: exists, Note: "chat.yaml: the chat: section on its own (older spelling)"})
		if exists {
			add(l, p, chatPath)
			if len(p) == 0 {
				user = append(user, l)
			}
		}
	}
	// The default chat.yaml ranks below config.yaml; one named for this run
	// (--config, LOCI_CHAT_CONFIG) above it.
	if !chatExplicit {
		readChat()
	}
	userPath, userExplicit := getenv(EnvConfig), true
	if userPath == "" {
		userExplicit = false
		if dir != "" {
			userPath = filepath.Join(dir, "config.yaml")
		}
	}
	if userPath != "" {
		l, p, exists, err := readUserFile(userPath, userExplicit, false)
		if err != nil {
			probs = append(probs, *err)
		} else {
			c.Files = append(c.Files, FileRef{Layer: LayerUser, Path: userPath, Exists: exists})
			if exists {
				add(l, p, userPath)
				if len(p) == 0 {
					user = append(user, l)
				}
			}
		}
	}
	if chatExplicit {
		readChat()
	}
	ignoreVault := false
	for _, l := range user {
		if l.f.IgnoreVaultConfig {
			ignoreVault = true
		}
	}

	if vaultRoot != "" {
		p := filepath.Join(vaultRoot, ".loci", "config.yaml")
		ref := FileRef{Layer: LayerVault, Path: p}
		if ignoreVault {
			ref.Note = "ignored: ignore_vault_config is set in your config"
			c.Files = append([]FileRef{ref}, c.Files...)
		} else {
			f, err := readVaultFile(vaultRoot)
			if err != nil {
				if errs.Code(err) != errs.CodeConfigInvalid || Problems(err) == nil {
					return nil, err
				}
				probs = append(probs, Problems(err)...)
			} else if f != nil {
				ref.Exists = true
				layers = append([]*layer{{kind: LayerVault, path: p, f: f}}, layers...)
			}
			c.Files = append([]FileRef{ref}, c.Files...)
		}
	}

	if l, p := envLayer(getenv); l != nil || p != nil {
		add(l, p, "environment")
	}
	if l, p := flagLayer(o.Flags); l != nil || p != nil {
		add(l, p, "flags")
	}
	if len(probs) > 0 {
		return nil, invalid(probs[0].Config, probs)
	}

	merge(reflect.ValueOf(&c.File).Elem(), layers, "", c.Sources)
	for _, l := range layers {
		if l.kind == LayerVault || l.kind == LayerUser {
			c.Path, c.Source = l.path, l.kind
		}
	}
	if probs := c.check(); len(probs) > 0 {
		return nil, invalid(probs[0].Config, probs)
	}
	return c, nil
}

// readUserFile reads one of the user's files (a missing one is fine unless
// the user named it). chat says it is a chat.yaml: the chat section alone.
func readUserFile(path string, explicit, chat bool) (*layer, []Problem, bool, *Problem) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) && !explicit {
			return nil, nil, false, nil
		}
		msg := "cannot read it: " + err.Error()
		if os.IsNotExist(err) {
			msg = "does not exist (it is named by " + map[bool]string{true: EnvChatConfig + " or --config", false: EnvConfig}[chat] + ")"
		}
		return nil, nil, false, &Problem{Config: path, Message: msg}
	}
	root, probs := parseYAML(b)
	if probs != nil {
		return nil, probs, true, nil
	}
	f := &File{Path: path, Source: SourceUser, lines: map[string]int{}}
	if root != nil {
		if chat {
			var probs []Problem
			if root, probs = chatFileNode(root); len(probs) > 0 {
				return nil, probs, true, nil
			}
		}
		if probs := decodeNode(root, f, SourceUser); len(probs) > 0 {
			return nil, probs, true, nil
		}
	}
	if f.lines == nil {
		f.lines = map[string]int{}
	}
	return &layer{kind: LayerUser, path: path, f: f}, nil, true, nil
}

// chatFileNode turns a chat.yaml document into the chat: section of a
// config file: model: {name, base_url, api_key_env, temperature,
// max_tokens, system_prompt, headers} becomes chat.model, chat.base_url, ...
func chatFileNode(root *yaml.Node) (*yaml.Node, []Problem) {
	if root.Kind != yaml.MappingNode {
		return root, nil
	}
	var probs []Problem
	section := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Column: root.Column}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value == "model" && v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				mk := *v.Content[j]
				if !slices.Contains(chatModelKeys, mk.Value) {
					probs = append(probs, Problem{Key: "model." + mk.Value, Line: mk.Line, Message: "unknown key", Suggestion: suggest(mk.Value, chatModelKeys)})
					continue
				}
				if mk.Value == "name" {
					mk.Value = "model"
				}
				section.Content = append(section.Content, &mk, v.Content[j+1])
			}
			continue
		}
		section.Content = append(section.Content, k, v)
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "chat", Line: root.Line, Column: root.Column}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Content: []*yaml.Node{key, section}}, probs
}

// chatModelKeys are the keys of chat.yaml's model: section.
var chatModelKeys = []string{"name", "base_url", "api_key_env", "temperature", "max_tokens", "system_prompt", "headers"}

// readVaultFile reads <vault>/.loci/config.yaml (nil when absent) without
// following a link at any component (a shared config belongs in the
// user's own file).
func readVaultFile(vaultRoot string) (*File, error) {
	p := filepath.Join(vaultRoot, ".loci", "config.yaml")
	root, rerr := filepath.EvalSymlinks(vaultRoot)
	if rerr != nil {
		root = vaultRoot
	}
	b, err := safefs.Root(root).ReadFile(".loci/config.yaml")
	if safefs.IsDenied(err) && errs.As(err).Details["reason"] == "symlink" {
		return nil, errs.As(err).With("config", p).With("hint", "a config shared between vaults belongs in your own config file (~/.config/loci/config.yaml or "+EnvConfig+")")
	}
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, invalid(p, []Problem{{Config: p, Message: "cannot read it: " + err.Error()}})
	}
	return Parse(b, p, SourceVault)
}

// Load reads and merges a vault's configuration without flags (Resolve
// with no options): the effective File, and the path of the highest file
// read ("" for none).
func Load(vaultRoot string) (*File, string, error) {
	c, err := Resolve(vaultRoot, Options{})
	if err != nil {
		p, _ := errs.As(err).Details["config"].(string)
		return nil, p, err
	}
	f := c.File
	return &f, c.Path, nil
}

// Parse decodes and validates the config text of one file read from path;
// source says whose file it is (a SourceVault file may not move the index
// out of the vault nor set the user's own keys).
func Parse(data []byte, path, source string) (*File, error) {
	f := &File{Path: path, Source: source}
	if probs := decodeStrict(data, f, source); len(probs) > 0 {
		return nil, invalid(path, probs)
	}
	if f.lines == nil {
		f.lines = map[string]int{}
	}
	return f, nil
}

// envKind is how an environment variable's text becomes a value.
type envKind int

const (
	envString envKind = iota
	envNumber
	envBool
	envList
	envSeconds // a Go duration, stored as seconds
	envText    // a string kept as it is, spaces included (a prefix)
)

// EnvVar maps an environment variable onto a config key.
type EnvVar struct {
	Name string
	Key  string
	kind envKind
}

// EnvVars are the LOCI_* variables and the keys they set.
var EnvVars = []EnvVar{
	{"LOCI_INDEX_DIR", "index_dir", envString},
	{"LOCI_EXCLUDE", "exclude", envList},
	{"LOCI_ENABLE_WRITES", "writes.enabled", envBool},
	{"LOCI_READ_ONLY", "writes.read_only", envBool},
	{"LOCI_WRITE_PATHS", "writes.write_paths", envList},
	{"LOCI_DENY_PATHS", "writes.deny_paths", envList},
	{"LOCI_EMBED_PROVIDER", "embed.provider", envString},
	{"LOCI_EMBED_MODEL", "embed.model", envString},
	{"LOCI_EMBED_MODEL_PATH", "embed.model_path", envString},
	{"LOCI_EMBED_BASE_URL", "embed.base_url", envString},
	{"LOCI_EMBED_API_KEY", "embed.api_key", envString},
	{"LOCI_EMBED_DIMS", "embed.dims", envNumber},
	{"LOCI_EMBED_BATCH_SIZE", "embed.batch_size", envNumber},
	{"LOCI_EMBED_CONCURRENCY", "embed.concurrency", envNumber},
	{"LOCI_EMBED_MAX_RETRIES", "embed.max_retries", envNumber},
	{"LOCI_EMBED_PRICE_PER_MTOK", "embed.price_per_mtok", envNumber},
	{"LOCI_EMBED_ON_MISMATCH", "embed.on_mismatch", envString},
	{"LOCI_EMBED_INT8", "embed.int8", envBool},
	{"LOCI_EMBED_QUERY_PREFIX", "embed.query_prefix", envText},
	{"LOCI_EMBED_DOCUMENT_PREFIX", "embed.document_prefix", envText},
	{"LOCI_AI_PROVIDER", "ai.provider", envString},
	{"LOCI_AI_MODEL", "ai.model", envString},
	{"LOCI_AI_BASE_URL", "ai.base_url", envString},
	{"LOCI_AI_API_KEY", "ai.api_key", envString},
	{"LOCI_AI_DAILY_COST_USD", "ai.daily_cost_usd", envNumber},
	{"LOCI_AI_MAX_INPUT_TOKENS", "ai.max_input_tokens", envNumber},
	{"LOCI_AI_MAX_OUTPUT_TOKENS", "ai.max_output_tokens", envNumber},
	{"LOCI_AI_TEMPERATURE", "ai.temperature", envNumber},
	{"LOCI_AI_SEED", "ai.seed", envNumber},
	{"LOCI_AI_TIMEOUT", "ai.timeout_seconds", envSeconds},
	{"LOCI_CHAT_PROVIDER", "chat.provider", envString},
	{"LOCI_CHAT_MODEL", "chat.model", envString},
	{"LOCI_CHAT_BASE_URL", "chat.base_url", envString},
	{"LOCI_CHAT_API_KEY", "chat.api_key", envString},
	{"LOCI_CHAT_HISTORY_DIR", "chat.history.dir", envString},
}

// envLayer builds the environment's layer: each variable's text becomes a
// YAML value at its key and goes through the same strict checks as a file
// (LOCI_AI_TEMPERATURE=warm is config_invalid naming the variable).
func envLayer(getenv func(string) string) (*layer, []Problem) {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	names := map[string]string{}
	var probs []Problem
	for _, ev := range EnvVars {
		raw := getenv(ev.Name)
		v := strings.TrimSpace(raw)
		if v == "" {
			continue
		}
		var n *yaml.Node
		switch ev.kind {
		case envText:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: raw}
		case envString:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
		case envNumber:
			n = &yaml.Node{Kind: yaml.ScalarNode, Value: v}
		case envBool:
			b, ok := parseBool(v)
			if !ok {
				probs = append(probs, Problem{Key: ev.Name, Message: fmt.Sprintf("%q: use 1 or 0 (true/false, yes/no, on/off)", v), Config: "environment"})
				continue
			}
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
		case envList:
			n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
				}
			}
		case envSeconds:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				probs = append(probs, Problem{Key: ev.Name, Message: fmt.Sprintf("%q is not a duration (like 30s or 2m)", v), Config: "environment"})
				continue
			}
			n = &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(d.Seconds(), 'f', -1, 64)}
		}
		setNode(root, ev.Key, n)
		names[ev.Key] = ev.Name
	}
	if len(root.Content) == 0 {
		return nil, probs
	}
	return nodeLayer(LayerEnv, root, names, probs)
}

// flagLayer builds the layer of the flags the user gave.
func flagLayer(flags []Flag) (*layer, []Problem) {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	names := map[string]string{}
	for _, fl := range flags {
		var n *yaml.Node
		switch v := fl.Value.(type) {
		case string:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
		case bool:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
		case []string:
			n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, s := range v {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
			}
		default:
			continue
		}
		setNode(root, fl.Key, n)
		names[fl.Key] = fl.Name
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	return nodeLayer(LayerFlag, root, names, nil)
}

func nodeLayer(kind string, root *yaml.Node, names map[string]string, probs []Problem) (*layer, []Problem) {
	f := &File{}
	where := map[string]string{LayerEnv: "environment", LayerFlag: "flags"}[kind]
	for _, p := range decodeNode(root, f, kind) {
		// Name the variable or flag, not a line.
		k := p.Key
		for k != "" && names[k] == "" {
			if i := strings.LastIndexAny(k, ".["); i >= 0 {
				k = k[:i]
			} else {
				k = ""
			}
		}
		if k != "" {
			p.Message = p.Key + " " + p.Message
			p.Key = names[k]
			if kind == LayerFlag {
				p.Key = "--" + p.Key
			}
		}
		p.Line, p.Config = 0, where
		probs = append(probs, p)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	if f.lines == nil {
		f.lines = map[string]int{}
	}
	return &layer{kind: kind, f: f, names: names}, nil
}

// setNode puts n at a dotted key path of a mapping node.
func setNode(root *yaml.Node, key string, n *yaml.Node) {
	parts := strings.Split(key, ".")
	cur := root
	for i, part := range parts {
		var next *yaml.Node
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if cur.Content[j].Value == part {
				next = cur.Content[j+1]
			}
		}
		if i == len(parts)-1 {
			if next != nil {
				*next = *n
				return
			}
			cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: part}, n)
			return
		}
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: part}, next)
		}
		cur = next
	}
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// merge fills dst (a struct, map or value at key path) from the layers,
// lowest first: the highest layer that sets a key wins; a merge:"union"
// list collects every layer's elements. It records each value's source.
func merge(dst reflect.Value, layers []*layer, path string, srcs map[string]Source) {
	t := dst.Type()
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			p := join(path, name)
			fv := dst.Field(i)
			if sf.Tag.Get("merge") == "union" {
				union(fv, layers, p, srcs)
				continue
			}
			var sub []*layer
			for _, l := range layers {
				if l.set(p) {
					sub = append(sub, l)
				}
			}
			if len(sub) == 0 {
				continue
			}
			if fv.Kind() == reflect.Struct || fv.Kind() == reflect.Map {
				mergeField(fv, sub, p, srcs)
				continue
			}
			top := sub[len(sub)-1]
			fv.Set(lookup(reflect.ValueOf(top.f).Elem(), p))
			srcs[p] = top.source(p)
			if fv.Kind() == reflect.Slice {
				for j := 0; j < fv.Len(); j++ {
					srcs[fmt.Sprintf("%s[%d]", p, j)] = top.source(fmt.Sprintf("%s[%d]", p, j))
				}
			}
		}
	}
}

// lookup walks a dotted key path of struct fields and map keys. merge only
// looks up paths of struct fields (map entries are walked by mergeField),
// so a map key holding a dot (a model name like qwen2.5) is never split.
func lookup(v reflect.Value, p string) reflect.Value {
	for _, part := range splitPath(p) {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			found := false
			for i := 0; i < v.NumField(); i++ {
				if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == part {
					v, found = v.Field(i), true
					break
				}
			}
			if !found {
				return reflect.Value{}
			}
		case reflect.Map:
			e := v.MapIndex(reflect.ValueOf(part))
			if !e.IsValid() {
				return reflect.Value{}
			}
			v = e
		default:
			return reflect.Value{}
		}
	}
	return v
}

func splitPath(p string) []string { return strings.Split(p, ".") }

// mergeField merges a struct or map field present in the sub layers.
func mergeField(fv reflect.Value, sub []*layer, p string, srcs map[string]Source) {
	if fv.Kind() == reflect.Struct {
		merge(fv, sub, p, srcs)
		return
	}
	// A map: every key of every layer, each merged on its own.
	keys := []string{}
	for _, l := range sub {
		m := lookup(reflect.ValueOf(l.f).Elem(), p)
		if !m.IsValid() {
			continue
		}
		for _, k := range m.MapKeys() {
			if !slices.Contains(keys, k.String()) {
				keys = append(keys, k.String())
			}
		}
	}
	slices.Sort(keys)
	if fv.IsNil() {
		fv.Set(reflect.MakeMap(fv.Type()))
	}
	et := fv.Type().Elem()
	for _, k := range keys {
		kp := join(p, k)
		var top *layer
		var vals []reflect.Value
		var ls []*layer
		for _, l := range sub {
			m := lookup(reflect.ValueOf(l.f).Elem(), p)
			if !m.IsValid() {
				continue
			}
			if e := m.MapIndex(reflect.ValueOf(k)); e.IsValid() {
				top = l
				vals = append(vals, e)
				ls = append(ls, l)
			}
		}
		if top == nil {
			continue
		}
		if et.Kind() == reflect.Struct {
			// Merge the entry field by field across the layers that have it.
			out := reflect.New(et).Elem()
			for i := 0; i < et.NumField(); i++ {
				name := strings.Split(et.Field(i).Tag.Get("yaml"), ",")[0]
				fp := kp + "." + name
				for j, l := range ls {
					if _, ok := l.f.lines[fp]; ok {
						f := vals[j].Field(i)
						if f.Kind() == reflect.Map && out.Field(i).Kind() == reflect.Map {
							if out.Field(i).IsNil() {
								out.Field(i).Set(reflect.MakeMap(f.Type()))
							}
							for _, mk := range f.MapKeys() {
								out.Field(i).SetMapIndex(mk, f.MapIndex(mk))
								srcs[fp+"."+mk.String()] = l.source(fp + "." + mk.String())
							}
						} else {
							out.Field(i).Set(f)
						}
						srcs[fp] = l.source(fp)
					}
				}
			}
			fv.SetMapIndex(reflect.ValueOf(k), out)
			srcs[kp] = top.source(kp) // the entry itself: the highest layer that has it
			continue
		}
		fv.SetMapIndex(reflect.ValueOf(k), vals[len(vals)-1])
		srcs[kp] = top.source(kp)
	}
}

// union collects a list from every layer, lowest first, without repeats.
func union(fv reflect.Value, layers []*layer, p string, srcs map[string]Source) {
	var out []string
	for _, l := range layers {
		if !l.set(p) {
			continue
		}
		v := lookup(reflect.ValueOf(l.f).Elem(), p)
		for j := 0; j < v.Len(); j++ {
			s := v.Index(j).String()
			if slices.Contains(out, s) {
				continue
			}
			srcs[fmt.Sprintf("%s[%d]", p, len(out))] = l.source(fmt.Sprintf("%s[%d]", p, j))
			out = append(out, s)
		}
		srcs[p] = l.source(p)
	}
	if out != nil {
		fv.Set(reflect.ValueOf(out))
	}
}
