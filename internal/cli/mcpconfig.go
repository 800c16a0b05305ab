package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/server"
)

func init() { commandFactories = append(commandFactories, newMCPConfigCmd) }

// mcpClient is a client mcp-config knows: where its configuration goes and
// how it reaches an HTTP server.
type mcpClient struct {
	name, where, http string
	hint              string // printed on stderr after the snippet
}

// mcpClients are the clients mcp-config knows, in the order it lists them.
var mcpClients = []mcpClient{
	{"claude-desktop", "claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\)", "via npx mcp-remote",
		"paste into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\), then restart Claude Desktop"},
	{"claude-code", "a `claude mcp add` command", "native",
		"run this command (add --scope user or --scope project to choose where Claude Code stores it)"},
	{"codex", "~/.codex/config.toml (or .codex/config.toml in a trusted project)", "native (token from $LOCI_TOKEN)",
		"add to ~/.codex/config.toml (or .codex/config.toml in a trusted project)"},
	{"cursor", ".cursor/mcp.json (or ~/.cursor/mcp.json)", "native",
		"paste into .cursor/mcp.json in your project (or ~/.cursor/mcp.json for every project)"},
	{"vscode", ".vscode/mcp.json (or the user mcp.json: MCP: Open User Configuration)", "native (asks for the token)",
		"paste into .vscode/mcp.json in your workspace (or the user mcp.json, command MCP: Open User Configuration)"},
	{"windsurf", "~/.codeium/windsurf/mcp_config.json", "native",
		"paste into ~/.codeium/windsurf/mcp_config.json (Windows: %USERPROFILE%\\.codeium\\windsurf\\), then refresh the MCP servers in Cascade"},
	{"zed", "Zed settings.json (~/.config/zed/settings.json, or .zed/settings.json in a project)", "native",
		"merge into Zed's settings.json (~/.config/zed/settings.json; .zed/settings.json for one project)"},
	{"gemini", "~/.gemini/settings.json (or .gemini/settings.json in a project)", "native",
		"merge into ~/.gemini/settings.json (or .gemini/settings.json in a project), then check with /mcp"},
}

func findMCPClient(name string) (mcpClient, bool) {
	for _, c := range mcpClients {
		if c.name == name {
			return c, true
		}
	}
	return mcpClient{}, false
}

func mcpClientNames() string {
	names := make([]string, len(mcpClients))
	for i, c := range mcpClients {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// listMCPClients writes the clients mcp-config knows, one a line.
func listMCPClients(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tCONFIGURATION\tSTDIO\tHTTP (--http)")
	for _, c := range mcpClients {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.name, c.where, "yes", c.http)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nloci mcp-config <client> [vault] [--http] prints the configuration for one of them.")
}

func newMCPConfigCmd(g *globals) *cobra.Command {
	var useHTTP bool
	var addr, name string
	cmd := &cobra.Command{
		Use:   "mcp-config [client] [vault]",
		Short: "Print a ready-to-paste MCP client configuration for loci",
		Long: "Print the configuration that connects an MCP client to loci; with no client, list the clients it knows " +
			"(" + mcpClientNames() + "). By default the client starts loci itself over stdio " +
			"(`<this executable> mcp <absolute vault path>`; after `go run`, the installed loci from PATH, since the build cache's copy goes away). " +
			"With --http it connects to a running `loci serve` at --addr, sending the bearer token (see `loci token`).\n\n" +
			"Claude Desktop's own remote connectors are reached from Anthropic's servers, not from your computer, so they cannot reach a loci serve on 127.0.0.1; " +
			"its --http form bridges through `npx mcp-remote`. " +
			"Codex reads the token from the LOCI_TOKEN environment variable (bearer_token_env_var) and VS Code asks for it once (an input), rather than keeping it in the file.",
		Example: "  loci mcp-config\n  loci mcp-config claude-code ~/Notes\n  loci mcp-config vscode --http --vault ~/Notes",
		Args:    cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				listMCPClients(g.stdout)
				return nil
			}
			client, ok := findMCPClient(args[0])
			if !ok {
				return errs.New(errs.CodeInvalidInput, "unknown client %q: choose %s (loci mcp-config lists them)", args[0], mcpClientNames())
			}
			hint := client.hint
			if len(args) == 2 {
				if err := g.vaultArg(args[1]); err != nil {
					return err
				}
			}
			vaultDir, err := g.vaultDir()
			if err != nil {
				return err
			}
			vaultAbs, err := filepath.Abs(vaultDir)
			if err != nil {
				return errs.Wrap(err, errs.CodeVaultNotFound, "cannot resolve the vault path")
			}
			if st, err := os.Stat(vaultAbs); err != nil || !st.IsDir() {
				return errs.New(errs.CodeVaultNotFound, "vault folder not found: %s", vaultDir).With("vault", vaultDir)
			}
			c := mcpClientConfig{name: name}
			if useHTTP {
				if c.url, err = mcpURL(addr); err != nil {
					return err
				}
				dir, err := g.tokenDir(vaultAbs)
				if err != nil {
					return err
				}
				if c.token, _, _, err = server.ResolveToken(dir); err != nil {
					return err
				}
				if client.name == "vscode" {
					hint += "; VS Code asks for the token once: paste the output of `loci token " + shellQuote(vaultAbs) + "`"
				}
				hint += "; start the server with `loci serve " + shellQuote(vaultAbs) + addrFlag(addr) + "`"
			} else {
				if c.exe, err = stdioExecutable(); err != nil {
					return err
				}
				c.args = []string{"mcp", vaultAbs}
				if g.indexDir != "" {
					idx, _ := filepath.Abs(g.indexDir)
					c.args = append(c.args, "--index-dir", idx)
				}
				if g.enableWrites {
					c.args = append(c.args, "--enable-writes") // the client's agent may then write (docs/writes.md)
				}
			}
			out, err := c.render(client.name)
			if err != nil {
				return err
			}
			fmt.Fprint(g.stdout, out)
			fmt.Fprintf(g.stderr, "loci: %s: %s\n", client.name, hint)
			return nil
		},
	}
	cmd.Flags().BoolVar(&useHTTP, "http", false, "connect to a running loci serve over HTTP instead of starting loci over stdio")
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "`address` of the running loci serve (with --http)")
	cmd.Flags().StringVar(&name, "name", "loci", "server name in the client's configuration")
	return cmd
}

// stdioExecutable is the loci a client should start; tests replace it.
var stdioExecutable = func() (string, error) {
	exe, err := executable()
	if err != nil {
		return "", err
	}
	return pickExecutable(exe, os.Getenv, exec.LookPath)
}

// pickExecutable returns exe unless it is a throwaway build (`go run`
// builds into a go-build folder under the temp dir, `go test` too, and
// the build cache is trimmed): then the loci found on PATH, if that one is
// a real install, else an error saying to install loci first.
func pickExecutable(exe string, getenv func(string) string, lookPath func(string) (string, error)) (string, error) {
	if !throwawayBuild(exe, getenv) {
		return exe, nil
	}
	if p, err := lookPath("loci"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			if !throwawayBuild(abs, getenv) {
				return abs, nil
			}
		}
	}
	return "", errs.New(errs.CodeInvalidInput,
		"this loci runs from a temporary Go build (%s), which go run or the build cache's trimming deletes; a client configured with it would fail to start. "+
			"Install loci first (`go install ./cmd/loci` in the source tree, or a release binary on your PATH), then run `loci mcp-config` again", exe).
		With("executable", exe)
}

// throwawayBuild reports whether exe lies in the Go build cache or in a
// go-build folder (go run, go test) or the temp dir.
func throwawayBuild(exe string, getenv func(string) string) bool {
	var roots []string
	if c := getenv("GOCACHE"); c != "" && c != "off" {
		roots = append(roots, c)
	} else if dir, err := os.UserCacheDir(); err == nil {
		roots = append(roots, filepath.Join(dir, "go-build"))
	}
	if tmp := getenv("GOTMPDIR"); tmp != "" {
		roots = append(roots, tmp)
	}
	roots = append(roots, os.TempDir())
	for _, r := range roots {
		if rel, err := filepath.Rel(r, exe); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return true
		}
	}
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}

// mcpClientConfig is what a client needs: a command line (stdio) or a URL
// and token (HTTP).
type mcpClientConfig struct {
	name       string
	exe        string
	args       []string
	url, token string
}

func (c mcpClientConfig) render(client string) (string, error) {
	http := c.url != ""
	switch client {
	case "claude-desktop":
		entry := map[string]any{"command": c.exe, "args": c.args}
		if http {
			// mcp-remote bridges stdio to Streamable HTTP; the header value goes
			// through env because some clients mangle spaces in args.
			args := []string{"-y", "mcp-remote", c.url, "--header", "Authorization:${LOCI_AUTH_HEADER}"}
			if !isLoopbackURL(c.url) {
				args = append(args, "--allow-http")
			}
			entry = map[string]any{"command": "npx", "args": args, "env": map[string]string{"LOCI_AUTH_HEADER": "Bearer " + c.token}}
		}
		return jsonConfig(map[string]any{"mcpServers": map[string]any{c.name: entry}})
	case "cursor", "windsurf", "gemini":
		entry := map[string]any{"command": c.exe, "args": c.args}
		if http {
			// The same entry under each client's name for the URL field.
			urlKey := map[string]string{"cursor": "url", "windsurf": "serverUrl", "gemini": "httpUrl"}[client]
			entry = map[string]any{urlKey: c.url, "headers": map[string]string{"Authorization": "Bearer " + c.token}}
		}
		return jsonConfig(map[string]any{"mcpServers": map[string]any{c.name: entry}})
	case "vscode":
		if http {
			// .vscode/mcp.json often sits in a repository: the token is an
			// input VS Code asks for once and keeps in its secret storage.
			return jsonConfig(map[string]any{
				"inputs": []map[string]any{{"type": "promptString", "id": "loci-token", "description": "loci bearer token (loci token <vault>)", "password": true}},
				"servers": map[string]any{c.name: map[string]any{
					"type": "http", "url": c.url, "headers": map[string]string{"Authorization": "Bearer ${input:loci-token}"},
				}},
			})
		}
		return jsonConfig(map[string]any{"servers": map[string]any{c.name: map[string]any{"type": "stdio", "command": c.exe, "args": c.args}}})
	case "zed":
		entry := map[string]any{"source": "custom", "command": c.exe, "args": c.args, "env": map[string]string{}}
		if http {
			entry = map[string]any{"url": c.url, "headers": map[string]string{"Authorization": "Bearer " + c.token}}
		}
		return jsonConfig(map[string]any{"context_servers": map[string]any{c.name: entry}})
	case "claude-code":
		if http {
			return fmt.Sprintf("claude mcp add --transport http %s %s --header %s\n",
				shellQuote(c.name), shellQuote(c.url), shellQuote("Authorization: Bearer "+c.token)), nil
		}
		words := []string{shellQuote(c.exe)}
		for _, a := range c.args {
			words = append(words, shellQuote(a))
		}
		return fmt.Sprintf("claude mcp add %s -- %s\n", shellQuote(c.name), strings.Join(words, " ")), nil
	case "codex":
		var b strings.Builder
		if http {
			fmt.Fprintf(&b, "# Codex sends the token from $%s: export %s=%s\n", server.EnvToken, server.EnvToken, shellQuote(c.token))
			fmt.Fprintf(&b, "[mcp_servers.%s]\n", tomlKey(c.name))
			fmt.Fprintf(&b, "url = %s\n", tomlString(c.url))
			fmt.Fprintf(&b, "bearer_token_env_var = %s\n", tomlString(server.EnvToken))
			return b.String(), nil
		}
		fmt.Fprintf(&b, "[mcp_servers.%s]\n", tomlKey(c.name))
		fmt.Fprintf(&b, "command = %s\n", tomlString(c.exe))
		quoted := make([]string, len(c.args))
		for i, a := range c.args {
			quoted[i] = tomlString(a)
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
		return b.String(), nil
	}
	return "", errs.New(errs.CodeInvalidInput, "unknown client %q", client)
}

func jsonConfig(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// executable is the absolute path of the running loci binary.
func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", errs.Wrap(err, errs.CodeInternal, "cannot find the loci executable")
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Abs(exe)
}

// mcpURL is the MCP endpoint of a server listening on addr; an unspecified
// bind address is reached through 127.0.0.1.
func mcpURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", errs.New(errs.CodeInvalidInput, "invalid --addr %q: %v", addr, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() || host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp", nil
}

func isLoopbackURL(u string) bool {
	hostport := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	hostport, _, _ = strings.Cut(hostport, "/")
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return server.IsLoopbackHost(host)
}

func addrFlag(addr string) string {
	if addr == server.DefaultAddr {
		return ""
	}
	return " --addr " + shellQuote(addr)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tomlString is a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey leaves bare keys bare and quotes the rest.
func tomlKey(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return tomlString(s)
		}
	}
	return s
}
