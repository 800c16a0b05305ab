package web

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 1))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// renderFixture is the demo vault plus notes that use every rendered
// construct, attachments, planted links, and a read fence that hides
// Private/ and one Logseq page.
func renderFixture(t *testing.T) (base string, c *http.Client, pic []byte) {
	t.Helper()
	s, env := fixture(t)
	vh := env.Vaults[0]
	root := vh.Vault.Root
	pic = pngBytes(t)
	const uuid1 = "6a6b6c6d-0000-4000-8000-000000000001"
	const uuid2 = "6a6b6c6d-0000-4000-8000-000000000002"
	testutil.WriteFiles(t, root, map[string]string{
		"R/Host.md": "---\ntags: [alpha, beta/gamma]\nrelated: \"[[Whole]]\"\nsite: https://example.org/x\ncount: 3\n---\n# Host\n\n" +
			"> [!tip] Remember this\n> tip body\n\n" +
			"![[Whole]]\n\n![[Sectioned#Second]]\n\n![[Blocky#^blk]]\n\n![[Private/Secret]]\n\n![[Loop A]]\n\n" +
			"![[pic.png|120]]\n\n![](sub/rel.png)\n\n![[doc.pdf]]\n\n![[sound.mp3]]\n\n![[missing.png]]\n\n![[photo.png]]\n\n![[evil.png]]\n\n![[inner.png]]\n\n" +
			"Jump to [[#Host]] and ==this== #topic.\n",
		"R/Whole.md":            "# Whole\n\nwhole body WHOLE1\n",
		"R/Sectioned.md":        "# S\n\nintro SEC0\n\n## Second\n\nSEC2 body\n\n## Third\n\nSEC3\n",
		"R/Blocky.md":           "para one BLK0\n\nthe BLK1 para ^blk\n\nBLK2 after\n",
		"R/Loop A.md":           "LOOPA\n\n![[Loop B]]\n",
		"R/Loop B.md":           "LOOPB\n\n![[Loop A]]\n",
		"R/Self.md":             "# Self\n\n## Part\n\nPARTBODY\n\n## Other\n\n![[Self#Part]]\n\n![[Self]]\n",
		"R/Deep0.md":            "![[D1]]\n",
		"R/D1.md":               "DEPTH1\n\n![[D2]]\n",
		"R/D2.md":               "DEPTH2\n\n![[D3]]\n",
		"R/D3.md":               "DEPTH3\n\n![[D4]]\n",
		"R/D4.md":               "DEPTH4\n",
		"R/Math.md":             "# Math\n\n$e^{i\\pi}+1=0$\n",
		"R/Diagram.md":          "```mermaid\ngraph TD; A-->B\n```\n",
		"Private/Secret.md":     "SECRET1\n",
		"Private/photo.png":     string(pic),
		"attachments/pic.png":   string(pic),
		"attachments/doc.pdf":   "%PDF-1.4\n%%EOF\n",
		"attachments/sound.mp3": "ID3\x03\x00\x00\x00\x00\x00\x00",
		"R/sub/rel.png":         string(pic),
		".obsidian/hidden.png":  string(pic),
		"outside-of-fence.txt":  "text",
		"graph/pages/Blocks.md": "- source block text\n  id:: " + uuid1 + "\n\t- child CHILD1\n\t\t- grandchild CHILD2\n- other\n",
		"graph/pages/Hidden.md": "- hidden block HIDDEN1\n  id:: " + uuid2 + "\n",
		"graph/pages/Refs.md":   "- see ((" + uuid1 + ")) and ((" + uuid2 + "))\n- parent\n\t- child\n- {{embed ((" + uuid1 + "))}}\n- {{embed ((" + uuid2 + "))}}\n- {{embed [[Blocks]]}}\n",
	})
	outside := filepath.Join(t.TempDir(), "outside.png")
	if err := os.WriteFile(outside, pic, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		"attachments/evil.png":  outside,                                       // leads out of the vault
		"attachments/inner.png": filepath.Join(root, "attachments", "pic.png"), // a link inside the vault
		"linkdir":               filepath.Join(root, "attachments"),            // a linked folder
	} {
		if err := os.Symlink(to, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Skip("symbolic links unavailable:", err)
		}
	}
	if _, err := env.Sync(context.Background(), vh, index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	vh.Read = ops.ReadRules{DenyReadPaths: []string{"Private/**", "graph/pages/Hidden.md"}}
	return s.URL, login(t, s), pic
}

func noteBody(t *testing.T, c *http.Client, base, p string) (http.Header, string) {
	t.Helper()
	resp, err := c.Get(base + "/ui/note?path=" + url.QueryEscape(p))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d\n%s", p, resp.StatusCode, b)
	}
	body := string(b)
	// Only the rendered note, not the links pane.
	if i := strings.Index(body, `<div class="body rendered">`); i >= 0 {
		body = body[i:]
		if j := strings.Index(body, "</article>"); j >= 0 {
			body = body[:j]
		}
	}
	return resp.Header, body
}

func wantIn(t *testing.T, body string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("lacks %q", w)
		}
	}
	for _, w := range not {
		if strings.Contains(body, w) {
			t.Errorf("has %q", w)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestNoteRendering(t *testing.T) {
	base, c, _ := renderFixture(t)
	hd, body := noteBody(t, c, base, "R/Host.md")
	wantIn(t, body, []string{
		// Callout.
		`<div class="callout" data-callout="tip"><div class="callout-title">Remember this</div>`,
		// A whole note, a heading's section and a block, each embedded.
		`<div class="embed" data-path="R/Whole.md"><div class="embed-title"><a href="/ui/note?path=R%2FWhole.md">Whole</a></div>`,
		"WHOLE1", "SEC2 body", "the BLK1 para",
		// The cycle is cut where it closes: each note once.
		"LOOPA", "LOOPB", "(not embedded: it embeds itself)",
		// The fenced note is not embedded and not named as existing.
		`<div class="embed embed-missing">Private/Secret <span class="embed-error">(not found)</span></div>`,
		// Attachments: by file name, relative to the note, PDF, audio.
		`<img class="embed-image" src="/ui/media?path=attachments%2Fpic.png" alt="pic.png" width="120" loading="lazy">`,
		`<img src="/ui/media?path=R%2Fsub%2Frel.png" alt="">`,
		`<iframe src="/ui/media?path=attachments%2Fdoc.pdf" title="doc.pdf">`,
		`<audio class="embed-audio" controls preload="metadata" src="/ui/media?path=attachments%2Fsound.mp3"`,
		// Missing, fenced and linked attachments are not shown.
		`<span class="wikilink unresolved">missing.png</span>`,
		`<span class="wikilink unresolved">photo.png</span>`,
		`<span class="wikilink unresolved">evil.png</span>`,
		`<span class="wikilink unresolved">inner.png</span>`,
		// Same-note heading link, highlight, tag.
		`<a class="wikilink" href="#host">Host</a>`, "<mark>this</mark>", `<a class="tag" href="/ui/tags?tag=topic">#topic</a>`,
	}, []string{"SEC0", "SEC3", "BLK0", "BLK2", "para ^blk", "SECRET1", "[!tip]", "Private%2Fphoto.png", "evil.png\"", "<script"})
	if n := strings.Count(body, "LOOPA"); n != 1 {
		t.Errorf("LOOPA %d times", n)
	}
	if n := strings.Count(body, "LOOPB"); n != 1 {
		t.Errorf("LOOPB %d times", n)
	}
	csp := hd.Get("Content-Security-Policy")
	for _, w := range []string{"script-src 'self';", "style-src 'self';", "font-src 'self'", "media-src 'self'", "frame-src 'self'"} {
		if !strings.Contains(csp, w) {
			t.Errorf("CSP %q lacks %q", csp, w)
		}
	}

	// Frontmatter values as chips: tags link to the tag page, a wikilink
	// to the note view, an address to itself; no Go "[a b]".
	_, page := get(t, c, base+"/ui/note?path=R%2FHost.md")
	wantIn(t, page, []string{
		`<a class="chip" href="/ui/tags?tag=alpha">#alpha</a>`, `<a class="chip" href="/ui/tags?tag=beta%2Fgamma">#beta/gamma</a>`,
		`<a class="chip" href="/ui/note?note=Whole">Whole</a>`, `<a class="chip" href="https://example.org/x">https://example.org/x</a>`,
		`<span class="chip">3</span>`, `<link rel="stylesheet" href="/ui/static/render.css">`,
	}, []string{"[alpha", "katex", "mermaid.min.js"})

	// A note may embed a section of itself, never itself.
	_, body = noteBody(t, c, base, "R/Self.md")
	wantIn(t, body, []string{`<div class="embed" data-path="R/Self.md"><div class="embed-title"><a href="/ui/note?path=R%2FSelf.md#part">Self &gt; Part</a>`,
		`<a href="/ui/note?path=R%2FSelf.md">Self</a> <span class="embed-error">(not embedded: it embeds itself)</span>`}, nil)
	if n := strings.Count(body, "PARTBODY"); n != 2 {
		t.Errorf("PARTBODY %d times, want 2 (the note's and its embedded section's)", n)
	}

	// The depth cap: three levels, then a note saying so.
	_, body = noteBody(t, c, base, "R/Deep0.md")
	wantIn(t, body, []string{"DEPTH1", "DEPTH2", "DEPTH3", "(not embedded: more than 3 embeds deep)"}, []string{"DEPTH4"})
}

func TestNoteMathAndMermaid(t *testing.T) {
	base, c, _ := renderFixture(t)
	hd, body := noteBody(t, c, base, "R/Math.md")
	wantIn(t, body, []string{`<span class="math math-inline">e^{i\pi}+1=0</span>`}, nil)
	_, page := get(t, c, base+"/ui/note?path=R%2FMath.md")
	wantIn(t, page, []string{`<script src="/ui/static/vendor/katex/katex.min.js" defer></script>`, `<script src="/ui/static/render.js" defer></script>`, `href="/ui/static/vendor/katex/katex.min.css"`}, []string{"mermaid.min.js"})
	if csp := hd.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") {
		t.Errorf("math page allows inline styles: %s", csp)
	}
	hd, body = noteBody(t, c, base, "R/Diagram.md")
	wantIn(t, body, []string{"<pre class=\"mermaid\">graph TD; A--&gt;B\n</pre>"}, nil)
	if csp := hd.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self' 'unsafe-inline';") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("mermaid page CSP: %s", csp)
	}
	// The bundled scripts are served from the binary.
	for _, a := range []struct{ path, ctype, start string }{
		{"/ui/static/vendor/katex/katex.min.js", "text/javascript", ""},
		{"/ui/static/vendor/katex/katex.min.css", "text/css", ""},
		{"/ui/static/vendor/katex/fonts/KaTeX_Main-Regular.woff2", "font/woff2", "wOF2"},
		{"/ui/static/render.js", "text/javascript", "// render.js"},
	} {
		resp, err := c.Get(base + a.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), a.ctype) || len(b) < 100 || !strings.HasPrefix(string(b), a.start) {
			t.Errorf("%s: %d %q %d bytes", a.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
	}
	// mermaid is stored compressed: gzip to a browser that takes it, plain
	// text to one that does not.
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/static/vendor/mermaid/mermaid.min.js", nil)
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || len(gz) < 1<<20 || gz[0] != 0x1f || gz[1] != 0x8b ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("gzip mermaid: %d %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(gz))
	}
	plain := &http.Client{Jar: c.Jar, Transport: &http.Transport{DisableCompression: true}}
	resp, err = plain.Get(base + "/ui/static/vendor/mermaid/mermaid.min.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || len(js) <= len(gz) || !bytes.Contains(js, []byte("mermaid")) {
		t.Fatalf("plain mermaid: %d %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(js))
	}
}

// TestMediaRoute: attachments are served with their type and nosniff;
// every path outside the rule is a 404 (no .., no absolute path, no note,
// no hidden folder, nothing behind the read fence, no symbolic link at
// any component).
func TestMediaRoute(t *testing.T) {
	base, c, pic := renderFixture(t)
	resp, err := c.Get(base + "/ui/media?path=attachments/pic.png")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || resp.Header.Get("X-Content-Type-Options") != "nosniff" || !bytes.Equal(b, pic) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("pic: %d %v %d bytes", resp.StatusCode, resp.Header, len(b))
	}
	resp, err = c.Get(base + "/ui/media?path=attachments/doc.pdf")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/pdf" || resp.Header.Get("X-Frame-Options") != "SAMEORIGIN" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'self'") {
		t.Fatalf("pdf: %d %v", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{
		"../outside.png", "attachments/../../outside.png", "/etc/passwd", "R/Host.md", "outside-of-fence.txt",
		".obsidian/hidden.png", "Private/photo.png", "attachments/evil.png", "attachments/inner.png", "linkdir/pic.png",
		"attachments/nope.png", "", "attachments%2Fpic.png",
	} {
		code, _ := get(t, c, base+"/ui/media?path="+url.QueryEscape(p))
		if code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", p, code)
		}
	}
	// Not logged in: the login page.
	if code, _ := get(t, client(t), base+"/ui/media?path=attachments/pic.png"); code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", code)
	}
}

// TestLogseqRendering: a Logseq page is an outline of collapsible blocks,
// a ((uuid)) reference shows the block's text and links to it, and one to
// a block behind the read fence stays unresolved.
func TestLogseqRendering(t *testing.T) {
	base, c, _ := renderFixture(t)
	_, body := noteBody(t, c, base, "graph/pages/Refs.md")
	wantIn(t, body, []string{
		`<a class="block-ref" href="/ui/note?path=graph%2Fpages%2FBlocks.md#block-6a6b6c6d-0000-4000-8000-000000000001">source block text</a>`,
		`<span class="block-ref unresolved">((6a6b6c6d-0000-4000-8000-000000000002))</span>`,
		`<details class="outline" open><summary>parent`,
		// Logseq's embeds: a block, a fenced block (not found), a page.
		`<div class="embed" data-path="graph/pages/Blocks.md"><div class="embed-title"><a href="/ui/note?path=graph%2Fpages%2FBlocks.md#block-6a6b6c6d-0000-4000-8000-000000000001">source block text</a></div><div class="embed-body"><p>source block text</p>`,
		// The embedded block brings its children.
		"<li class=\"block\">\n<details class=\"outline\" open><summary>child CHILD1</summary>\n<ul>\n<li class=\"block\">grandchild CHILD2</li>",
		`<div class="embed embed-missing">((6a6b6c6d-0000-4000-8000-000000000002)) <span class="embed-error">(not found)</span></div>`,
		`<div class="embed" data-path="graph/pages/Blocks.md"><div class="embed-title"><a href="/ui/note?path=graph%2Fpages%2FBlocks.md">Blocks</a></div><div class="embed-body"><ul>`,
	}, []string{"HIDDEN1", "{{embed"})
	_, body = noteBody(t, c, base, "graph/pages/Blocks.md")
	wantIn(t, body, []string{`<li id="block-6a6b6c6d-0000-4000-8000-000000000001" class="block">` + "\n" + `<details class="outline" open><summary>source block text</summary>`}, []string{"id::"})
}

// TestCorpusNotePages opens every note of a copy of obsidian-help/en
// through the server, with its real index: each page answers 200, keeps
// no raw callout, and the help's own note and block embeds are embedded
// (its images are not in the corpus: they show as unresolved).
func TestCorpusNotePages(t *testing.T) {
	src := filepath.Join(testutil.Corpus(t, "obsidian-help"), "en")
	root := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, src, root)
	srv := serveEnv(t, openEnv(t, root, ops.ReadRules{}))
	c := login(t, srv)
	var notes, embeds, callouts int
	var took []time.Duration
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		start := time.Now()
		_, body := noteBody(t, c, srv.URL, filepath.ToSlash(rel))
		took = append(took, time.Since(start))
		notes++
		embeds += strings.Count(body, `<div class="embed" data-path=`)
		for _, m := range regexp.MustCompile(`embed-missing">(.*?)</div>`).FindAllStringSubmatch(body, -1) {
			t.Logf("%s: %s", rel, m[1])
		}
		callouts += strings.Count(body, `class="callout"`)
		if strings.Contains(body, "<blockquote>\n<p>[!") {
			t.Errorf("%s keeps a raw callout", rel)
		}
		return nil
	})
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%d note pages, %d embeds, %d callouts; page p50 %v p99 %v max %v", notes, embeds, callouts,
		took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
	if embeds == 0 || callouts == 0 {
		t.Errorf("no embed or no callout rendered in the help")
	}
}

// FuzzMediaFile: whatever path a request names, mediaFile accepts only a
// media file inside the vault, reached without a link, outside hidden
// folders and the read fence.
func FuzzMediaFile(f *testing.F) {
	root := filepath.Join(f.TempDir(), "vault")
	pic := string([]byte{0x89, 'P', 'N', 'G'})
	testutil.WriteFiles(f, root, map[string]string{
		"a.md": "# a\n", "img/p.png": pic, "Private/s.png": pic, ".obsidian/h.png": pic, "d.pdf": "%PDF",
	})
	outside := filepath.Join(f.TempDir(), "o.png")
	os.WriteFile(outside, []byte(pic), 0o644)
	if os.Symlink(outside, filepath.Join(root, "img", "evil.png")) != nil || os.Symlink(filepath.Join(root, "img"), filepath.Join(root, "ln")) != nil {
		f.Skip("no symbolic links")
	}
	ctx := context.Background()
	env := openEnv(f, root, ops.ReadRules{DenyReadPaths: []string{"Private/**"}})
	vh := env.Vaults[0]
	h := New(catalog.All(), env, Options{Token: token})
	for _, s := range []string{"img/p.png", "../o.png", "img/evil.png", "ln/p.png", "Private/s.png", ".obsidian/h.png", "a.md", "d.pdf", "/img/p.png", "img//p.png", "img/./p.png", "IMG/P.PNG", "img\\p.png", "img/p.png\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, err := h.mediaFile(ctx, vh, p)
		if err != nil {
			return
		}
		switch clean {
		case "img/p.png", "d.pdf":
		default:
			t.Fatalf("%q accepted as %q", p, clean)
		}
	})
}
