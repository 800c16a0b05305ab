//go:build unix

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

// The hostile-vault test: a real loci binary run against a vault with a
// symbolic link (or a FIFO) planted at every place loci reads or writes.
// After every scenario nothing outside the vault has changed, no secret
// from outside (or the bearer token) appears in any output, and loci has
// answered (no hang). LOCI_TEST_BIN runs the scenarios against another
// build (e.g. an older one, to count what it let through).

const outsideSecret = "OUTSIDE-SECRET-7f3a9c"

// hostile is one scenario's world: a vault, a folder outside it holding a
// secret, and the binary.
type hostile struct {
	t     *testing.T
	bin   string
	vault string
	out   string
	// seen collects every byte loci printed or served, to search for
	// secrets at the end.
	seen strings.Builder
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	top := t.TempDir()
	h := &hostile{t: t, bin: testutil.LociBinary(t), vault: filepath.Join(top, "vault"), out: filepath.Join(top, "outside")}
	testutil.WriteFiles(t, h.vault, map[string]string{
		"Home.md":                 "# Home\nSee [[Plan]] and [[Zotero]].\n",
		"Projects/Plan.md":        "# Plan\nship it\n",
		"Notes/a.md":              "# A\nalpha note\n",
		"graph/logseq/config.edn": "{}",
		"graph/pages/Zotero.md":   "- the real Zotero page\n",
	})
	testutil.WriteFiles(t, h.out, map[string]string{
		"secret":              outsideSecret + "\n",
		"secret.md":           "# Secret\n" + outsideSecret + "\n",
		"Projects/keep.md":    outsideSecret + "\n",
		"config.yaml":         "writes: {enabled: true}\n",
		"journal/keep.entry":  outsideSecret,
		"Home.md":             "# Home\nSee [[Plan]] and [[Zotero]].\n",
		"idempotency/keep.js": outsideSecret,
	})
	return h
}

// link plants a symbolic link at the vault-relative path rel.
func (h *hostile) link(rel, target string) {
	h.t.Helper()
	p := filepath.Join(h.vault, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.RemoveAll(p)
	if err := os.Symlink(target, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hostile) fifo(rel string) {
	h.t.Helper()
	p := filepath.Join(h.vault, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.RemoveAll(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		h.t.Skip("mkfifo:", err)
	}
}

// loci runs the binary; it returns its output and exit code. A run that
// does not end within a minute is a hang (a FIFO opened, a lock never
// released): the test fails rather than waits forever.
func (h *hostile) loci(args ...string) (string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(), "LOCI_TOKEN=", "LOCI_CONFIG=", "LOCI_ENABLE_WRITES=", "LOCI_READ_ONLY=")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	h.seen.Write(out)
	if ctx.Err() != nil {
		h.t.Fatalf("loci %s did not finish (hang)", strings.Join(args, " "))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return string(out), code
}

// refused asserts a non-zero exit naming path_denied and the link.
func (h *hostile) refused(what string, out string, code int, names ...string) {
	h.t.Helper()
	if code == 0 || !strings.Contains(out, "path_denied") {
		h.t.Errorf("%s: exit %d, want a path_denied refusal:\n%s", what, code, out)
		return
	}
	for _, n := range names {
		if !strings.Contains(out, n) {
			h.t.Errorf("%s: the refusal does not name %s:\n%s", what, n, out)
		}
	}
}

// check runs a scenario and applies the invariants.
func (h *hostile) check(f func(), secrets ...string) {
	h.t.Helper()
	before := testutil.Tree(h.t, h.out)
	f()
	if d := testutil.TreeDiff(before, testutil.Tree(h.t, h.out)); d != "" {
		h.t.Errorf("outside the vault changed: %s", d)
	}
	for _, s := range append(secrets, outsideSecret) {
		if s != "" && strings.Contains(h.seen.String(), s) {
			h.t.Errorf("a secret (%.12s…) appeared in loci's output", s)
		}
	}
}

func (h *hostile) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(h.vault, filepath.FromSlash(rel)))
	return err == nil
}

func TestHostileVault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	write := func(h *hostile, extra ...string) (string, int) {
		return h.loci(append([]string{"write", "New.md", "--content", "# New\n", "--vault", h.vault, "--apply"}, extra...)...)
	}
	cases := []struct {
		name string
		run  func(h *hostile)
	}{
		{"trash is a link out (issue: rm moved the note out)", func(h *hostile) {
			h.link(".trash", h.out)
			out, code := h.loci("rm", "Home.md", "--vault", h.vault, "--apply")
			h.refused("rm", out, code, ".trash")
			if !h.exists("Home.md") {
				t.Error("Home.md left the vault")
			}
		}},
		{"trash subfolder is a link out", func(h *hostile) {
			os.MkdirAll(filepath.Join(h.vault, ".trash"), 0o755)
			h.link(".trash/Projects", filepath.Join(h.out, "Projects"))
			out, code := h.loci("rm", "Projects/Plan.md", "--vault", h.vault, "--apply")
			h.refused("rm", out, code, ".trash/Projects")
		}},
		{"audit log is a link to an outside file", func(h *hostile) {
			h.link(".loci/audit.log", filepath.Join(h.out, "secret"))
			out, code := write(h)
			h.refused("write", out, code, ".loci/audit.log")
			if h.exists("New.md") {
				t.Error("the write happened")
			}
		}},
		{"journal is a link out (it holds note bytes)", func(h *hostile) {
			h.link(".loci/journal", filepath.Join(h.out, "journal"))
			out, code := h.loci("write", "Home.md", "--content", "# changed\n", "--overwrite", "--vault", h.vault, "--apply")
			h.refused("write", out, code, ".loci/journal")
		}},
		{"idempotency store is a link out", func(h *hostile) {
			h.link(".loci/idempotency", filepath.Join(h.out, "idempotency"))
			out, code := write(h, "--idempotency-key", "k-1")
			h.refused("write", out, code, ".loci/idempotency")
		}},
		{"write lock is a link to an outside file", func(h *hostile) {
			h.link(".loci/write.lock", filepath.Join(h.out, "secret"))
			out, code := write(h)
			h.refused("write", out, code, ".loci/write.lock")
		}},
		{"the whole state folder is a link out", func(h *hostile) {
			h.link(".loci", h.out)
			out, code := h.loci("index", h.vault, "-q")
			h.refused("index", out, code, ".loci")
			out, code = h.loci("search", "alpha", "--vault", h.vault)
			h.refused("search", out, code, ".loci")
			out, code = write(h)
			h.refused("write", out, code, ".loci")
			out, code = h.loci("token", h.vault)
			if code == 0 {
				t.Errorf("token through a linked .loci: %s", out)
			}
		}},
		{"index files are links to an outside file", func(h *hostile) {
			for _, f := range []string{"index.db", "index.db-wal", "index.db-shm", "index.lock", "vectors.cache"} {
				os.RemoveAll(filepath.Join(h.vault, ".loci"))
				h.link(".loci/"+f, filepath.Join(h.out, "secret"))
				out, code := h.loci("index", h.vault, "-q")
				h.refused("index with "+f+" linked", out, code, ".loci/"+f)
			}
		}},
		{"config is a link to an outside file", func(h *hostile) {
			h.link(".loci/config.yaml", filepath.Join(h.out, "config.yaml"))
			out, code := h.loci("search", "alpha", "--vault", h.vault)
			h.refused("search", out, code, "config.yaml")
		}},
		{"token is a link to an outside secret", func(h *hostile) {
			h.link(".loci/token", filepath.Join(h.out, "secret"))
			out, code := h.loci("token", h.vault)
			if code == 0 {
				t.Errorf("token printed through a link: %s", out)
			}
			out, code = h.loci("serve", h.vault, "--addr", "127.0.0.1:0", "--no-sync")
			if code == 0 {
				t.Errorf("serve started with a linked token: %s", out)
			}
		}},
		{"events log inside the vault is a link out", func(h *hostile) {
			h.link(".loci/events.ndjson", filepath.Join(h.out, "secret"))
			out, code := h.loci("serve", h.vault, "--addr", "127.0.0.1:0", "--no-sync", "--events-log", filepath.Join(h.vault, ".loci", "events.ndjson"))
			h.refused("serve --events-log", out, code, "events.ndjson")
		}},
		{"a FIFO as the audit log", func(h *hostile) {
			h.fifo(".loci/audit.log")
			out, code := write(h)
			if code == 0 || !strings.Contains(out, "audit.log") {
				t.Errorf("write with a FIFO audit log: %d %s", code, out)
			}
		}},
		{"a FIFO named like a note", func(h *hostile) {
			h.fifo("Notes/pipe.md")
			out, code := h.loci("index", h.vault, "-q")
			if code != 0 {
				t.Errorf("index: %d %s", code, out)
			}
			out, code = h.loci("read", "Notes/pipe.md", "--vault", h.vault)
			h.refused("read", out, code)
		}},
		{"a folder link into .loci (issue: read_note returned the token)", func(h *hostile) {
			out, code := h.loci("token", h.vault)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			tok := strings.TrimSpace(lines[len(lines)-1])
			if code != 0 || len(tok) < 16 {
				t.Fatalf("token: %d %q", code, tok)
			}
			h.seen.Reset()
			h.link("Notes/lci", "../.loci")
			h.link("Notes/obs", "../.obsidian")
			testutil.WriteFiles(t, h.vault, map[string]string{".obsidian/app.json": `{"k":"` + outsideSecret + `"}`})
			h.link("Notes/tok.md", "../.loci/token")
			if out, code := h.loci("index", h.vault, "-q"); code != 0 {
				t.Fatalf("index: %s", out)
			}
			for _, p := range []string{"Notes/lci/token", "Notes/obs/app.json", "Notes/tok.md"} {
				out, code := h.loci("read", p, "--vault", h.vault)
				h.refused("read "+p, out, code)
			}
			// "--": a random token starts with '-' one time in 64, and
			// cobra would take it for a flag and echo it in its error.
			out, _ = h.loci("search", "--vault", h.vault, "--format", "json", "--", tok)
			if strings.Contains(out, "tok.md") {
				t.Errorf("the token is searchable through a link: %s", out)
			}
			h.viaServers(tok, []string{"Notes/lci/token", "Notes/obs/app.json", "Notes/tok.md"})
			h.check(func() {}, tok)
		}},
		{"note and folder links out of the vault", func(h *hostile) {
			h.link("Notes/out.md", filepath.Join(h.out, "secret.md"))
			h.link("Notes/outdir", h.out)
			if out, code := h.loci("index", h.vault, "-q"); code != 0 {
				t.Fatalf("index: %s", out)
			}
			for _, p := range []string{"Notes/out.md", "Notes/outdir/secret.md"} {
				out, code := h.loci("read", p, "--vault", h.vault)
				h.refused("read "+p, out, code)
			}
			out, code := h.loci("write", "Notes/outdir/x.md", "--content", "x", "--vault", h.vault, "--apply")
			h.refused("write through a folder link", out, code, "Notes/outdir")
			out, code = h.loci("write", "Notes/out.md", "--content", "x", "--overwrite", "--vault", h.vault, "--apply")
			h.refused("write through a note link", out, code)
			out, _ = h.loci("search", "Secret", "--vault", h.vault)
			if strings.Contains(out, "out.md") {
				t.Errorf("an outside note is indexed: %s", out)
			}
		}},
		{"Logseq backups do not shadow the page (issue: bak shadowed Zotero)", func(h *hostile) {
			testutil.WriteFiles(t, h.vault, map[string]string{
				"graph/logseq/bak/pages/Zotero/2024-01-01.md":     "- stale backup " + outsideSecret + "\n",
				"graph/logseq/version-files/base/pages/Zotero.md": "- old version " + outsideSecret + "\n",
			})
			out, code := h.loci("read", "--note", "Zotero", "--vault", h.vault)
			if code != 0 || !strings.Contains(out, "the real Zotero page") {
				t.Errorf("read --note Zotero: %d %s", code, out)
			}
			out, code = h.loci("read", "graph/logseq/bak/pages/Zotero/2024-01-01.md", "--vault", h.vault)
			h.refused("read a backup", out, code)
		}},
		{"undo after the trash became a link out", func(h *hostile) {
			if out, code := h.loci("rm", "Home.md", "--vault", h.vault, "--apply"); code != 0 {
				t.Fatalf("rm: %s", out)
			}
			os.RemoveAll(filepath.Join(h.vault, ".trash"))
			h.link(".trash", h.out) // h.out/Home.md has the deleted note's bytes
			out, code := h.loci("undo", "--vault", h.vault, "--apply")
			if code != 0 {
				t.Errorf("undo: %d %s", code, out)
			}
			if !h.exists("Home.md") {
				t.Error("undo did not restore Home.md from the journal")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t)
			h.t = t
			h.check(func() { c.run(h) })
		})
	}
}

// viaServers asks a real `loci serve` (REST and MCP over HTTP) and a real
// `loci mcp` (stdio) for each path and checks that none answers with the
// file; answers are added to what the test searches for secrets.
func (h *hostile) viaServers(token string, paths []string) {
	t := h.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, h.bin, "serve", h.vault, "--addr", "127.0.0.1:0", "--no-sync")
	serve.Env = append(os.Environ(), "LOCI_TOKEN=", "LOCI_CONFIG=")
	stdout, _ := serve.StdoutPipe()
	serve.Stderr = io.Discard
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Signal(os.Interrupt); serve.Wait() }()
	base := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && f[0] == "MCP" {
			base = strings.TrimSuffix(f[1], "/mcp")
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if base == "" {
		t.Fatal("loci serve printed no address")
	}
	for _, p := range paths {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/notes/"+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.seen.Write(body)
		if resp.StatusCode == 200 {
			t.Errorf("GET /v1/notes/%s = 200: %s", p, body)
		}
	}

	// loci mcp over stdio: resources/read of each path.
	mcp := exec.CommandContext(ctx, h.bin, "mcp", h.vault, "--no-sync")
	mcp.Env = append(os.Environ(), "LOCI_CONFIG=")
	in, _ := mcp.StdinPipe()
	outp, _ := mcp.StdoutPipe()
	mcp.Stderr = io.Discard
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); mcp.Wait() }()
	r := bufio.NewReader(outp)
	send := func(v string) { io.WriteString(in, v+"\n") }
	recv := func(id int) map[string]any {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("loci mcp: %v", err)
			}
			h.seen.Write(line)
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	name := filepath.Base(h.vault)
	for i, p := range paths {
		id := 10 + i
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"loci://%s/%s"}}`, id, name, p))
		if m := recv(id); m["error"] == nil {
			t.Errorf("resources/read %s answered: %v", p, m["result"])
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_note","arguments":{"path":%q}}}`, 100+i, p))
		if m := recv(100 + i); m["result"] == nil || m["result"].(map[string]any)["isError"] != true {
			t.Errorf("read_note %s over MCP answered: %v", p, m)
		}
	}
}
