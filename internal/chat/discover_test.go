package chat_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/errs"
)

// TestParseServersJSON maps each client's servers file onto loci's server
// configuration, and then onto what loci chat connects (ServerSpecs, with
// the environment expanded).
func TestParseServersJSON(t *testing.T) {
	env := map[string]string{"TOK": "s3cret", "KEY": "k1"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name, file string
		want       []chat.ServerSpec
		notes      []string
	}{{
		name: "Claude Desktop / Cursor stdio with env",
		file: `{"mcpServers": {"notes": {"command": "/usr/local/bin/loci", "args": ["mcp", "/Users/me/Notes"], "env": {"A": "1", "B": "${env:KEY}"}}}}`,
		want: []chat.ServerSpec{{Alias: "notes", Command: []string{"/usr/local/bin/loci", "mcp", "/Users/me/Notes"}, Env: []string{"A=1", "B=k1"}}},
	}, {
		name: "Cursor url with headers; Claude Code .mcp.json type http",
		file: `{"mcpServers": {
			"cur": {"url": "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}},
			"cc": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${KEY}"}},
			"old": {"type": "sse", "url": "https://example.com/sse"}}}`,
		want: []chat.ServerSpec{
			{Alias: "cc", URL: "https://example.com/mcp", Transport: "streamable", Headers: map[string]string{"X-Key": "k1"}},
			{Alias: "cur", URL: "http://127.0.0.1:8765/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
			{Alias: "old", URL: "https://example.com/sse", Transport: "sse", Headers: map[string]string{}},
		},
	}, {
		name: "VS Code: servers, type, comments and trailing commas, workspace folder",
		file: `{
  // loci, over stdio
  "servers": {
    "loci": {"type": "stdio", "command": "loci", "args": ["mcp", "${workspaceFolder}/notes",], "cwd": "${workspaceFolder}"},
    /* a remote one */
    "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"},},
  },
  "inputs": [],
}`,
		want: []chat.ServerSpec{
			{Alias: "loci", Command: []string{"loci", "mcp", "/proj/notes"}, Dir: "/proj"},
			{Alias: "remote", URL: "http://127.0.0.1:9/mcp", Transport: "streamable", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		},
	}, {
		name: "Windsurf serverUrl, Gemini httpUrl, a command as a list, a disabled one",
		file: `{"mcpServers": {
			"ws": {"serverUrl": "http://127.0.0.1:1/mcp"},
			"gem": {"httpUrl": "http://127.0.0.1:2/mcp", "timeout": 30000, "trust": true},
			"argv": {"command": ["npx", "-y", "srv"], "args": ["--x"]},
			"off": {"command": "x", "disabled": true}}}`,
		want: []chat.ServerSpec{
			{Alias: "argv", Command: []string{"npx", "-y", "srv", "--x"}},
			{Alias: "gem", URL: "http://127.0.0.1:2/mcp", Transport: "streamable", Headers: map[string]string{}},
			{Alias: "ws", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{}},
		},
	}, {
		name: "entries left out, with a note each; a name made an alias",
		file: `{"mcpServers": {
			"both": {"command": "x", "url": "http://h/mcp"},
			"none": {"args": ["x"]},
			"weird": {"type": "websocket", "url": "ws://h"},
			"input": {"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer ${input:tok}"}},
			"ftp": {"url": "ftp://h/mcp"},
			"bad": {"command": 7},
			"stdiourl": {"type": "stdio", "url": "http://h/mcp"},
			"My Server!": {"command": "ok"},
			"allow": {"command": "y", "alwaysAllow": ["everything"], "autoApprove": ["*"]}}}`,
		want: []chat.ServerSpec{
			{Alias: "My-Server", Command: []string{"ok"}},
			{Alias: "allow", Command: []string{"y"}},
		},
		notes: []string{
			`server "bad" left out: command is neither a string nor a list of strings`,
			`server "both" left out: needs exactly one of command and a URL`,
			`server "ftp" left out: "ftp://h/mcp" is not an http(s) URL`,
			`server "input" left out: it uses ${input:tok}, a value only VS Code asks for; put it in an environment variable and write ${env:NAME}`,
			`server "none" left out: needs exactly one of command and a URL`,
			`server "stdiourl" left out: type stdio needs a command, not a URL`,
			`server "weird" left out: unknown type "websocket"`,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			servers, notes, err := chat.ParseServersJSON([]byte(c.file), "/proj")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(notes, c.notes) {
				t.Errorf("notes:\n%s\nwant\n%s", strings.Join(notes, "\n"), strings.Join(c.notes, "\n"))
			}
			got := (&chat.Config{Servers: servers}).ServerSpecs(getenv)
			for i := range got {
				if len(got[i].Env) == 0 {
					got[i].Env = nil
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("specs:\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

// TestReadServersFile: files loci chat cannot use are config_invalid errors
// naming the file; ServerSources finds Claude Desktop's config and the
// project files, and only the named ones and Claude Desktop's start.
func TestReadServersFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson.json": "mcpServers: {}",
		"array.json":   `[1, 2]`,
		"huge.json":    `{"mcpServers": {}, "pad": "` + strings.Repeat("x", 4<<20) + `"}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		if _, _, err := chat.ReadServersFile(p); errs.Code(err) != errs.CodeConfigInvalid || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want config_invalid naming the file", name, err)
		}
	}
	if _, _, err := chat.ReadServersFile(filepath.Join(dir, "missing.json")); errs.Code(err) != errs.CodeConfigInvalid {
		t.Errorf("missing file: %v", err)
	}

	cfgHome := filepath.Join(dir, "config")
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("HOME", dir)
	desktop := chat.ClaudeDesktopConfig()
	proj := filepath.Join(dir, "proj")
	for _, p := range []string{desktop, filepath.Join(proj, ".mcp.json"), filepath.Join(proj, ".vscode", "mcp.json")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(`{"mcpServers": {}}`), 0o600)
	}
	got := chat.ServerSources([]string{"/x/servers.json"}, proj, true)
	want := []chat.ServerSource{
		{Path: "/x/servers.json", Kind: chat.SourceFlag},
		{Path: desktop, Kind: chat.SourceDesktop},
		{Path: filepath.Join(proj, ".mcp.json"), Kind: chat.SourceProject},
		{Path: filepath.Join(proj, ".vscode", "mcp.json"), Kind: chat.SourceProject},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sources:\n%+v\nwant\n%+v", got, want)
	}
	if !got[0].Start() || !got[1].Start() || got[2].Start() || got[3].Start() {
		t.Errorf("only the named file and Claude Desktop's start: %+v", got)
	}
	if got := chat.ServerSources(nil, proj, false); len(got) != 0 {
		t.Errorf("without discovery: %+v", got)
	}
	if !strings.HasPrefix(desktop, cfgHome) || filepath.Base(desktop) != "claude_desktop_config.json" {
		t.Errorf("Claude Desktop config at %s", desktop)
	}
}

func TestStripJSONC(t *testing.T) {
	sp := func(n int) string { return strings.Repeat(" ", n) }
	for _, c := range []struct{ in, want string }{
		{"{\"a\": 1, // c\n}", "{\"a\": 1" + sp(6) + "\n}"},
		{`{"a": "x//y", "b": "/*z*/"}`, `{"a": "x//y", "b": "/*z*/"}`},
		{`[1, 2, /* c */ ]`, "[1, 2" + sp(10) + "]"},
		{`{"a": "q\"//", "b": [3,]}`, `{"a": "q\"//", "b": [3 ]}`},
		{`{"a": 1 /* unclosed`, `{"a": 1 ` + sp(11)},
		{`{"s": "a,}"}`, `{"s": "a,}"}`},
		{"// only\n{\"a\":1}", sp(7) + "\n{\"a\":1}"},
		{`{"u": "é", /* é */ "v": 2}`, `{"u": "é", ` + sp(8) + ` "v": 2}`},
		{"/* a\nb */[]", sp(4) + "\n" + sp(4) + "[]"},
	} {
		if got := string(chat.StripJSONC([]byte(c.in))); got != c.want {
			t.Errorf("StripJSONC(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzStripJSONC: the output has the input's length and keeps valid JSON
// byte for byte.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{`{"a": 1, // c` + "\n}", `[1, /* x */ 2,]`, `{"a": "x//y\"/*"}`, `/*`, `"\`, `{"mcpServers":{"x":{"command":"y"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := chat.StripJSONC(in)
		if len(out) != len(in) {
			t.Fatalf("length %d -> %d", len(in), len(out))
		}
		if json.Valid(in) && !bytes.Equal(out, in) {
			t.Fatalf("valid JSON changed: %q -> %q", in, out)
		}
	})
}

// FuzzParseServersJSON: any file content gives servers, notes or an error,
// never a panic, and every server has a valid alias and exactly one of a
// command and a URL.
func FuzzParseServersJSON(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["y"], "env": {"K": "${env:V}"}}}}`,
		`{"servers": {"b": {"type": "http", "url": "http://h/mcp", "headers": {"A": "${input:x}"}}}, "inputs": []}`,
		`{"mcpServers": {"c d": {"serverUrl": "https://h"}, "e": {"httpUrl": "http://h"}}}`,
		`{"mcpServers": {"": {"command": ["a", "b"]}}}`,
		`{"mcpServers": null}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		servers, _, err := chat.ParseServersJSON(in, "/proj")
		if err != nil {
			return
		}
		for alias, sc := range servers {
			if chat.ValidAlias(alias) != nil {
				t.Fatalf("invalid alias %q", alias)
			}
			if (len(sc.Command) > 0) == (sc.URL != "") {
				t.Fatalf("%s: command %q and URL %q", alias, sc.Command, sc.URL)
			}
		}
	})
}
