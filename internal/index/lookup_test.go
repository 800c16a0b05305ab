package index

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
	}{
		{"Note", Ref{Target: "Note"}},
		{"  [[Note]] ", Ref{Target: "Note"}},
		{"![[Note#Part|shown]]", Ref{Target: "Note", Heading: "Part"}},
		{"[[Folder/Note#^abc]]", Ref{Target: "Folder/Note", BlockID: "abc"}},
		{"Note.md", Ref{Target: "Note.md"}},
		{"[[]]", Ref{}},
		{"[[#Only heading]]", Ref{Heading: "Only heading"}},
	}
	for _, c := range cases {
		if got := ParseRef(c.in); got != c.want {
			t.Errorf("ParseRef(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestLookupFollowsSyncs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "---\naliases: [First]\n---\n# A\n"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	lookup := func(target string) []NoteMatch {
		t.Helper()
		ms, err := ix.LookupNote(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	if ms := lookup("First"); len(ms) != 1 || ms[0].Path != "a.md" || ms[0].Match != MatchAlias {
		t.Fatalf("alias = %+v", ms)
	}
	if ms := lookup("b"); len(ms) != 0 {
		t.Fatalf("b before it exists = %+v", ms)
	}
	// A new note, then a changed alias: the cached resolver must notice both.
	testutil.WriteFiles(t, root, map[string]string{"sub/b.md": "# B\n"})
	mustSync(t, ix, SyncOptions{})
	if ms := lookup("b"); len(ms) != 1 || ms[0].Path != "sub/b.md" || ms[0].Match != MatchFilename {
		t.Fatalf("b after sync = %+v", ms)
	}
	testutil.WriteFiles(t, root, map[string]string{"a.md": "---\naliases: [Second]\n---\n# A\n"})
	bump(t, filepath.Join(root, "a.md"), time.Hour)
	mustSync(t, ix, SyncOptions{})
	if ms := lookup("First"); len(ms) != 0 {
		t.Errorf("stale alias = %+v", ms)
	}
	if ms := lookup("second"); len(ms) != 1 || ms[0].Path != "a.md" {
		t.Errorf("new alias = %+v", ms)
	}
	if ms := lookup("A"); len(ms) != 1 || ms[0].Match != MatchPath {
		t.Errorf("A = %+v (the exact path beats the title)", ms)
	}
	if m, ok := Best(lookup("a")); !ok || m.Path != "a.md" {
		t.Errorf("Best = %+v %v", m, ok)
	}
}
