package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/server"
)

func init() { commandFactories = append(commandFactories, newMCPConfigCmd) }

// mcpClients are the clients mcp-config knows, with where their config goes.
var mcpClients = map[string]string{
	"claude-desktop": "paste into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\), then restart Claude Desktop",
	"claude-code":    "run this command (add --scope user or --scope project to choose where Claude Code stores it)",
	"codex":          "add to ~/.codex/config.toml (or .codex/config.toml in a trusted project)",
	"cursor":         "paste into .cursor/mcp.json in your project (or ~/.cursor/mcp.json for every project)",
}

func newMCPConfigCmd(g *globals) *cobra.Command {
	var useHTTP bool
	var addr, name string
	cmd := &cobra.Command{
		Use:   "mcp-config <claude-desktop|claude-code|codex|cursor> [vault]",
		Short: "Print a ready-to-paste MCP client configuration for loci",
		Long: "Print the configuration that connects an MCP client to loci. By default the client starts loci itself over stdio " +
			"(`<this executable> mcp <absolute vault path>`). With --http it connects to a running `loci serve` at --addr, " +
			"sending the bearer token (see `loci token`).\n\n" +
			"Claude Desktop has no setting for local HTTP servers, so its --http form bridges through `npx mcp-remote`. " +
			"Codex reads the token from the LOCI_TOKEN environment variable (bearer_token_env_var) rather than from its config file.",
		Example: "  loci mcp-config claude-code ~/Notes\n  loci mcp-config cursor --http --vault ~/Notes",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			client := args[0]
			hint, ok := mcpClients[client]
			if !ok {
				return errs.New(errs.CodeInvalidInput, "unknown client %q: choose claude-desktop, claude-code, codex or cursor", client)
			}
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
				hint += "; start the server with `loci serve " + shellQuote(vaultAbs) + addrFlag(addr) + "`"
			} else {
				if c.exe, err = executable(); err != nil {
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
			out, err := c.render(client)
			if err != nil {
				return err
			}
			fmt.Fprint(g.stdout, out)
			fmt.Fprintf(g.stderr, "loci: %s: %s\n", client, hint)
			return nil
		},
	}
	cmd.Flags().BoolVar(&useHTTP, "http", false, "connect to a running loci serve over HTTP instead of starting loci over stdio")
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "`address` of the running loci serve (with --http)")
	cmd.Flags().StringVar(&name, "name", "loci", "server name in the client's configuration")
	return cmd
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
	case "cursor":
		entry := map[string]any{"command": c.exe, "args": c.args}
		if http {
			entry = map[string]any{"url": c.url, "headers": map[string]string{"Authorization": "Bearer " + c.token}}
		}
		return jsonConfig(map[string]any{"mcpServers": map[string]any{c.name: entry}})
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
