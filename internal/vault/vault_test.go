package vault

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

func TestCleanRel(t *testing.T) {
	cases := []struct {
		in, want, code string
	}{
		{"Note.md", "Note.md", ""},
		{"folder/Note.md", "folder/Note.md", ""},
		{"./folder//Note.md", "folder/Note.md", ""},
		{`folder\Note.md`, "folder/Note.md", ""},
		{"folder/./x/../Note.md", "", errs.CodePathDenied},
		{"../outside.md", "", errs.CodePathDenied},
		{"a/../../outside.md", "", errs.CodePathDenied},
		{"/etc/passwd", "", errs.CodePathDenied},
		{"C:/Windows/x.md", "", errs.CodePathDenied},
		{"%2e%2e/secret.md", "", errs.CodePathDenied},
		{"..%2Fsecret.md", "", errs.CodePathDenied},
		{"a%00.md", "", errs.CodePathDenied},
		{"a\x00.md", "", errs.CodePathDenied},
		{".obsidian/app.json", "", errs.CodePathDenied},
		{".git/config", "", errs.CodePathDenied},
		{".loci/index.db", "", errs.CodePathDenied},
		{".trash/old.md", "", errs.CodePathDenied},
		{".OBSIDIAN/x.md", "", errs.CodePathDenied},
		{"", "", errs.CodeInvalidInput},
		{".", "", errs.CodePathDenied},
		{"Cafe\u0301.md", "Café.md", ""}, // NFD → NFC
		{"100% done.md", "100% done.md", ""},
	}
	for _, c := range cases {
		got, err := CleanRel(c.in)
		if errs.Code(err) != c.code {
			t.Errorf("CleanRel(%q) error code = %q, want %q (err %v)", c.in, errs.Code(err), c.code, err)
			continue
		}
		if got != c.want {
			t.Errorf("CleanRel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func writeFile(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAbsSymlinkEscape(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, outside, "secret.md", "secret")
	writeFile(t, root, "inside.md", "ok")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "link.md")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "inside.md"), filepath.Join(root, "alias.md")); err != nil {
		t.Fatal(err)
	}
	v, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link.md", "outdir/secret.md", "outdir/new.md"} {
		if _, _, err := v.Abs(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("Abs(%q) = %v, want path_denied", p, err)
		}
		if _, _, err := v.ReadNote(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("ReadNote(%q) = %v, want path_denied", p, err)
		}
	}
	if b, _, err := v.ReadNote("alias.md"); err != nil || string(b) != "ok" {
		t.Errorf("symlink inside the vault: %q, %v", b, err)
	}
	if _, _, err := v.ReadNote("missing.md"); errs.Code(err) != errs.CodeNotFound {
		t.Errorf("missing note: %v", err)
	}
}

func TestWalkSkipsIgnoredAndExcluded(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"a.md", "sub/b.md", "sub/c.MD", "sub/image.png", ".obsidian/x.md", ".git/y.md", ".trash/z.md",
		".loci/w.md", "node_modules/pkg/readme.md", ".hidden/h.md", "Archive/old.md", "Archive/deep/older.md", "draft.excalidraw.md"} {
		writeFile(t, root, rel, "x")
	}
	v, err := Open(root, []string{"Archive/**", "*.excalidraw.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := v.Walk(context.Background(), func(f File) error { got = append(got, f.Rel); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{"a.md", "sub/b.md", "sub/c.MD"}
	if len(got) != len(want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("walk = %v, want %v", got, want)
		}
	}
	if _, err := Open(root, []string{"[unclosed"}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("bad glob: %v", err)
	}
}

func TestOpenDetectsLogseqGraphs(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "logseq/config.edn", "{}")
	v, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != KindLogseq {
		t.Fatalf("kind = %s", v.Kind)
	}
	if o, j := v.LogseqFile("journals/2024_01_01.md"); !o || !j {
		t.Errorf("journal not detected")
	}
	if o, _ := v.LogseqFile("notes/x.md"); o {
		t.Errorf("non-graph file detected as outline")
	}

	nested := t.TempDir()
	writeFile(t, nested, "graph/logseq/config.edn", "{}")
	v, err = Open(nested, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != KindObsidian {
		t.Fatalf("nested graph made the vault %s", v.Kind)
	}
	if o, j := v.LogseqFile("graph/pages/A.md"); !o || j {
		t.Errorf("nested graph page not detected")
	}
	if o, _ := v.LogseqFile("pages/A.md"); o {
		t.Errorf("pages/ outside the graph detected as outline")
	}
	if _, err := Open(filepath.Join(root, "nope"), nil); errs.Code(err) != errs.CodeVaultNotFound {
		t.Errorf("missing vault: %v", err)
	}
}

func FuzzCleanRel(f *testing.F) {
	for _, s := range []string{"a.md", "../x", "a/../../b", "%2e%2e/x", "/abs", `a\..\b`, ".obsidian/x", "Cafe\u0301.md", "a//b/./c.md"} {
		f.Add(s)
	}
	root := f.TempDir()
	v, err := Open(root, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := CleanRel(p)
		if err != nil {
			if errs.Code(err) == "" || errs.Code(err) == errs.CodeInternal {
				t.Fatalf("untyped error for %q: %v", p, err)
			}
			return
		}
		if filepath.IsAbs(rel) || rel == ".." || len(rel) >= 3 && rel[:3] == "../" {
			t.Fatalf("CleanRel(%q) = %q escapes", p, rel)
		}
		abs, _, err := v.Abs(p)
		if err != nil {
			return
		}
		if r, err := filepath.Rel(v.Root, abs); err != nil || r == ".." || len(r) >= 3 && r[:3] == "../" {
			t.Fatalf("Abs(%q) = %q is outside %q", p, abs, v.Root)
		}
	})
}

// TestFencesMatchAnyCase: on a case-insensitive file system (macOS,
// Windows) private/x.md is the file Private/x.md, so exclude and
// deny_paths globs must fence every spelling of a path, for reads (the
// note rule, ReadNote, the walk) and writes (Target). On Linux the other
// spellings are other files, fenced too: the rule fails closed.
// write_paths, an allow-list, matches as written (which fails closed too).
func TestFencesMatchAnyCase(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"Private/a.md", "private/x.md", "PRIVATE/y.md", "Public/ok.md", "Été/e.md"} {
		writeFile(t, root, rel, "secret")
	}
	v, err := Open(root, []string{"Private/**", "été/**"})
	if err != nil {
		t.Fatal(err)
	}
	fenced := []string{"Private/a.md", "private/x.md", "PRIVATE/y.md", "pRiVaTe/new.md", "Été/e.md", "ÉTÉ/e.md"}
	for _, p := range fenced {
		if v.NoteRule(p) == "" {
			t.Errorf("NoteRule(%q) lets it through", p)
		}
		if b, _, err := v.ReadNote(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("ReadNote(%q) = %q, %v; want path_denied", p, b, err)
		}
	}
	var walked []string
	v.Walk(context.Background(), func(f File) error { walked = append(walked, f.Rel); return nil })
	if strings.Join(walked, ",") != "Public/ok.md" {
		t.Errorf("walk = %v, want only Public/ok.md", walked)
	}

	w, err := NewWriter(v, WriterOptions{DenyPaths: []string{"Secret/**"}, WritePaths: []string{"Public/**", "Secret/**", "secret/**", "SECRET/**", "Private/**", "private/**"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(fenced, "Secret/n.md", "secret/n.md", "SECRET/n.md") {
		if _, err := w.Target(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("Target(%q) = %v, want path_denied", p, err)
		}
	}
	if _, err := w.Target("Public/ok.md"); err != nil {
		t.Errorf("Target(Public/ok.md): %v", err)
	}
	// write_paths matches as written: public/ is not Public/.
	if _, err := w.Target("public/new.md"); errs.Code(err) != errs.CodePathDenied {
		t.Errorf("Target(public/new.md) outside write_paths as written: %v", err)
	}
}

// TestNFDNamesOnDisk: a note synced from a Mac can keep its NFD name (e +
// combining acute) on a file system that keeps a name's bytes (Linux).
// The walk lists it by its NFC name, so reading that name must find it.
func TestNFDNamesOnDisk(t *testing.T) {
	root := t.TempDir()
	nfdDir, nfdNote := "Re\u0301sume\u0301", "Cafe\u0301.md"
	writeFile(t, root, nfdDir+"/"+nfdNote, "nfd note")
	writeFile(t, root, "Plain.md", "plain")
	v, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	var walked []string
	v.Walk(context.Background(), func(f File) error { walked = append(walked, f.Rel); return nil })
	sort.Strings(walked)
	if strings.Join(walked, ",") != "Plain.md,Résumé/Café.md" {
		t.Fatalf("walk = %q", walked)
	}
	for _, p := range []string{"Résumé/Café.md", nfdDir + "/" + nfdNote, "Résumé/" + nfdNote} {
		b, clean, err := v.ReadNote(p)
		if err != nil || string(b) != "nfd note" || clean != "Résumé/Café.md" {
			t.Errorf("ReadNote(%q) = %q, %q, %v", p, b, clean, err)
		}
	}
	if _, _, err := v.ReadNote("Résumé/Thé.md"); errs.Code(err) != errs.CodeNotFound {
		t.Errorf("a missing note next to an NFD one: %v", err)
	}
}
