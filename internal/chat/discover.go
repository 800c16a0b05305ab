package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
)

// Other MCP clients keep their servers in JSON files: Claude Desktop,
// Cursor, Claude Code (.mcp.json), Windsurf and Gemini CLI under
// "mcpServers", VS Code under "servers". loci chat reads those files so that
// servers are not typed twice: a file named with --servers-file, and the
// files it finds by itself (ServerSources).

// Where a servers file comes from decides whether its servers start.
const (
	SourceFlag          = "--servers-file" // named for this run: started
	SourceDesktop       = "claude-desktop" // the user's Claude Desktop config: started
	SourceProject       = "project"        // found in the working directory: listed, not started
	maxServersFileBytes = 4 << 20          // a servers file larger than this is refused
)

// ServerSource is one servers file loci chat reads.
type ServerSource struct {
	Path string
	Kind string // SourceFlag, SourceDesktop or SourceProject
}

// Start reports whether the file's servers are connected at startup. A
// file in the working directory may come from someone else (a cloned
// repository) and its commands would run programs, so its servers are only
// listed: `:mcp connect <alias>` starts one, --servers-file starts them all.
func (s ServerSource) Start() bool { return s.Kind != SourceProject }

// ProjectServerFiles are the files looked for in the working directory,
// in this order.
var ProjectServerFiles = []string{".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json"}

// ClaudeDesktopConfig is the Claude Desktop configuration file under the
// user's config dir (macOS: ~/Library/Application Support/Claude/, Windows:
// %APPDATA%\Claude\, elsewhere $XDG_CONFIG_HOME/Claude/).
func ClaudeDesktopConfig() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "Claude", "claude_desktop_config.json")
}

// ServerSources lists the servers files to read, in precedence order (an
// alias taken by an earlier one is skipped in later ones): the files named
// with --servers-file, then, when discover is set, the user's Claude
// Desktop config and the project files of cwd that exist.
func ServerSources(named []string, cwd string, discover bool) []ServerSource {
	var out []ServerSource
	for _, p := range named {
		out = append(out, ServerSource{Path: ExpandHome(p), Kind: SourceFlag})
	}
	if !discover {
		return out
	}
	exists := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular()
	}
	if p := ClaudeDesktopConfig(); p != "" && exists(p) {
		out = append(out, ServerSource{Path: p, Kind: SourceDesktop})
	}
	if cwd != "" {
		for _, f := range ProjectServerFiles {
			if p := filepath.Join(cwd, filepath.FromSlash(f)); exists(p) {
				out = append(out, ServerSource{Path: p, Kind: SourceProject})
			}
		}
	}
	return out
}

// ReadServersFile reads one servers file. It returns the servers by alias
// and a note for each entry it had to leave out; a file it cannot use at
// all is an error (config_invalid).
func ReadServersFile(path string) (map[string]ServerConfig, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, errs.Wrap(err, errs.CodeConfigInvalid, "cannot read the MCP servers file "+path).With("path", path)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxServersFileBytes+1))
	if err != nil {
		return nil, nil, errs.Wrap(err, errs.CodeConfigInvalid, "cannot read the MCP servers file "+path).With("path", path)
	}
	if len(data) > maxServersFileBytes {
		return nil, nil, errs.New(errs.CodeConfigInvalid, "the MCP servers file %s is larger than %d bytes", path, maxServersFileBytes).With("path", path)
	}
	root := filepath.Dir(path)
	if b := filepath.Base(root); b == ".vscode" || b == ".cursor" {
		root = filepath.Dir(root) // the workspace
	}
	servers, notes, err := ParseServersJSON(data, root)
	if err != nil {
		return nil, nil, errs.New(errs.CodeConfigInvalid, "%s: %v", path, err).With("path", path)
	}
	return servers, notes, nil
}

// serverEntry is one server as the clients write it. Fields other clients
// use for their own approval lists (Cline's alwaysAllow, autoApprove) are
// deliberately not read: loci chat's own policy decides.
type serverEntry struct {
	Type      string            `json:"type"`      // VS Code, Claude Code: stdio, http, sse
	Transport string            `json:"transport"` // some clients: stdio, http, streamable-http, sse
	Command   json.RawMessage   `json:"command"`   // a string (a list is accepted too)
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`       // Cursor, Claude Code, VS Code, Zed; SSE for Gemini CLI
	ServerURL string            `json:"serverUrl"` // Windsurf
	HTTPURL   string            `json:"httpUrl"`   // Gemini CLI: Streamable HTTP
	Headers   map[string]string `json:"headers"`
	Disabled  bool              `json:"disabled"`
}

var (
	envRef   = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	inputRef = regexp.MustCompile(`\$\{input:[^}]*\}`)
)

// ParseServersJSON parses the servers of one file's content (JSON, or the
// JSON with comments and trailing commas that VS Code writes). root is the
// project folder ${workspaceFolder} stands for.
func ParseServersJSON(data []byte, root string) (map[string]ServerConfig, []string, error) {
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Servers    map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(StripJSONC(data), &doc); err != nil {
		return nil, nil, fmt.Errorf("not an MCP servers file (JSON with mcpServers or servers): %v", err)
	}
	raw := doc.MCPServers
	if raw == nil {
		raw = doc.Servers
	}
	var notes []string
	out := map[string]ServerConfig{}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		alias := sanitizeAlias(name)
		if alias != name {
			_, inFile := raw[alias]
			if _, done := out[alias]; inFile || done {
				notes = append(notes, fmt.Sprintf("server %q left out: its alias %s is taken", clipNote(name), alias))
				continue
			}
		}
		var e serverEntry
		if err := json.Unmarshal(raw[name], &e); err != nil {
			notes = append(notes, fmt.Sprintf("server %q left out: %v", clipNote(name), err))
			continue
		}
		sc, why := e.toConfig(root)
		if why != "" {
			notes = append(notes, fmt.Sprintf("server %q left out: %s", clipNote(name), why))
			continue
		}
		out[alias] = sc
	}
	return out, notes, nil
}

// toConfig maps a client's entry onto loci's server configuration, or says
// why it cannot.
func (e serverEntry) toConfig(root string) (ServerConfig, string) {
	sc := ServerConfig{Env: map[string]string{}, Headers: map[string]string{}, Disabled: e.Disabled}
	var cmd []string
	if len(e.Command) > 0 && string(e.Command) != "null" {
		var s string
		if err := json.Unmarshal(e.Command, &s); err == nil {
			if s != "" {
				cmd = []string{s}
			}
		} else if err := json.Unmarshal(e.Command, &cmd); err != nil {
			return sc, "command is neither a string nor a list of strings"
		}
	}
	url := e.HTTPURL
	transport := ""
	switch {
	case url != "":
		transport = "streamable"
	case e.ServerURL != "":
		url = e.ServerURL
	case e.URL != "":
		url = e.URL
	}
	kind := strings.ToLower(e.Type)
	if kind == "" {
		kind = strings.ToLower(e.Transport)
	}
	switch kind {
	case "", "stdio":
	case "http", "streamable-http", "streamablehttp", "streamable_http", "streamable":
		transport = "streamable"
	case "sse":
		transport = "sse"
	default:
		return sc, fmt.Sprintf("unknown type %q", clipNote(kind))
	}
	if kind == "stdio" && url != "" && len(cmd) == 0 {
		return sc, "type stdio needs a command, not a URL"
	}
	if (len(cmd) > 0) == (url != "") {
		return sc, "needs exactly one of command and a URL"
	}
	var unresolved []string
	fix := func(s string) string {
		s = envRef.ReplaceAllString(s, "${$1}")
		s = strings.ReplaceAll(s, "${workspaceFolder}", root)
		if h, err := os.UserHomeDir(); err == nil {
			s = strings.ReplaceAll(s, "${userHome}", h)
		}
		if m := inputRef.FindString(s); m != "" {
			unresolved = append(unresolved, m)
		}
		return s
	}
	if url != "" {
		sc.URL, sc.Transport = fix(url), transport
		if err := checkHTTPURL(withoutVars(sc.URL)); err != nil {
			return sc, err.Error()
		}
		for k, v := range e.Headers {
			sc.Headers[k] = fix(v)
		}
	} else {
		if kind != "" && kind != "stdio" {
			return sc, fmt.Sprintf("type %s needs a URL", kind)
		}
		for _, w := range append(cmd, e.Args...) {
			sc.Command = append(sc.Command, fix(w))
		}
		sc.Args = nil
		for k, v := range e.Env {
			sc.Env[k] = fix(v)
		}
		sc.Dir = fix(e.Cwd)
	}
	if len(unresolved) > 0 {
		return sc, fmt.Sprintf("it uses %s, a value only VS Code asks for; put it in an environment variable and write ${env:NAME}", clipNote(unresolved[0]))
	}
	return sc, ""
}

// withoutVars replaces ${NAME} references with a placeholder so that a URL
// can be checked before the environment is read.
func withoutVars(s string) string {
	return varRef.ReplaceAllString(s, "x")
}

var varRef = regexp.MustCompile(`\$\{[^}]*\}`)

func clipNote(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// StripJSONC removes // and /* */ comments and trailing commas (before a
// closing bracket or brace), outside strings. Each removed byte becomes a
// space (newlines stay), so JSON error offsets still point into the file.
func StripJSONC(data []byte) []byte {
	if !bytes.ContainsAny(data, "/,") {
		return data
	}
	out := stripComments(data)
	// Trailing commas, now that comments are blanks.
	var str jsonString
	for i, c := range out {
		if str.inside(c) {
			continue
		}
		switch c {
		case ',':
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// jsonString follows whether a scan of JSON text is inside a string.
type jsonString struct{ in, escaped bool }

// inside reports whether c is part of a string (its quotes included),
// given the bytes before it were passed in order.
func (s *jsonString) inside(c byte) bool {
	switch {
	case !s.in:
		s.in = c == '"'
		return s.in
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
	}
	return true
}

// stripComments blanks // and /* */ comments outside strings (a copy).
func stripComments(data []byte) []byte {
	out := bytes.Clone(data)
	var str jsonString
	for i := 0; i < len(out); i++ {
		c := out[i]
		if str.inside(c) {
			continue
		}
		switch {
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			i += 2
			for ; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
		}
	}
	return out
}
