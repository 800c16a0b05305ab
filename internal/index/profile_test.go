package index

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/testutil"
)

func TestNoteEmbedText(t *testing.T) {
	title, rest := NoteEmbedText(Profile{
		Title: "Ribbon", AliasesJSON: `["Toolbar"]`, Description: "The left toolbar.",
		Headings: []string{"Customize", "Hide it"}, Anchor: "The ribbon holds actions.",
	})
	if title != "Ribbon, Toolbar" || rest != "The left toolbar.\nCustomize; Hide it\nThe ribbon holds actions." {
		t.Errorf("profile = %q / %q", title, rest)
	}
	if _, rest := NoteEmbedText(Profile{Title: "Bare"}); rest != "" {
		t.Errorf("bare note rest = %q", rest)
	}
	// Bounded: a hub's anchor text and a long list of headings are cut.
	long := strings.Repeat("word ", 10000)
	heads := make([]string, 2000)
	for i := range heads {
		heads[i] = "Heading"
	}
	if _, rest := NoteEmbedText(Profile{Title: "Hub", Description: long, Headings: heads, Anchor: long}); len(rest) > maxProfileDescription+maxProfileHeadings+maxProfileAnchor+2 {
		t.Errorf("profile of a hub is %d bytes", len(rest))
	}
	if got := headingsOf(`["[]","[\"Alpha\"]","[\"Alpha\",\"Two\"]","[\"alpha\"]"]`, "Alpha"); !slices.Equal(got, []string{"Two"}) {
		t.Errorf("headings = %q", got)
	}
	if got := truncUTF8("héllo", 2); got != "h" {
		t.Errorf("truncUTF8 = %q", got)
	}
}

// TestProfileFollowsAnchorText: a note's vector embeds its description and
// what other notes say where they link to it, and it is remade when that
// changes, though the note itself did not.
func TestProfileFollowsAnchorText(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"Ribbon.md": "---\ndescription: Quick actions on the left edge\n---\n# Ribbon\n\nThe ribbon.\n",
		"Tour.md":   "# Tour\n\nThe [[Ribbon]] is a vertical toolbar with customizable actions.\n",
	})
	fe := &fakeEmbedder{model: "m1"}
	ix := openWith(t, root, fe, embed.Settings{})
	mustSync(t, ix, SyncOptions{})
	got := fe.reset()
	want := "Quick actions on the left edge\nThe Ribbon is a vertical toolbar with customizable actions."
	if !slices.Contains(got, want) {
		t.Fatalf("Ribbon's profile not embedded; texts: %q", got)
	}
	if meta := ix.Meta(t.Context(), "note_vector_text"); meta != profileVersion {
		t.Errorf("note_vector_text = %q", meta)
	}

	// Only the linking note changes: Ribbon's note vector is remade with
	// the new sentence; its sections are not re-embedded.
	os.WriteFile(filepath.Join(root, "Tour.md"), []byte("# Tour\n\nOpen the [[Ribbon]] to pin your favourite commands.\n"), 0o644)
	bump(t, filepath.Join(root, "Tour.md"), 2e9)
	res := mustSync(t, ix, SyncOptions{})
	got = fe.reset()
	want = "Quick actions on the left edge\nOpen the Ribbon to pin your favourite commands."
	if !slices.Contains(got, want) || slices.Contains(got, "The ribbon.") {
		t.Errorf("after the linking note changed, embedded %q", got)
	}
	if res.Embed.Titles != 2 { // Tour's own (a cache hit) and Ribbon's
		t.Errorf("titles = %d", res.Embed.Titles)
	}

	// The link removed: the profile loses the sentence.
	os.WriteFile(filepath.Join(root, "Tour.md"), []byte("# Tour\n\nNo links here.\n"), 0o644)
	bump(t, filepath.Join(root, "Tour.md"), 4e9)
	mustSync(t, ix, SyncOptions{})
	if got := fe.reset(); !slices.Contains(got, "Quick actions on the left edge") {
		t.Errorf("after the link went, embedded %q", got)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM note_vectors"); n != 2 {
		t.Errorf("note_vectors = %d", n)
	}

	// An index whose note vectors were made from titles alone remakes them.
	if _, err := ix.DB.Exec("UPDATE meta SET value='title' WHERE key='note_vector_text'"); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFiles(t, root, map[string]string{"New.md": "# New\n\ntext\n"})
	mustSync(t, ix, SyncOptions{})
	if n := count(t, ix, "SELECT COUNT(*) FROM note_vectors"); n != 3 || ix.Meta(t.Context(), "note_vector_text") != profileVersion {
		t.Errorf("after the version change: %d note vectors", n)
	}
}

// TestBuiltinUpgradeReembeds: an index made by an older built-in model
// (another data file) is searched lexically until the next sync, which
// re-embeds it instead of failing with embedding_mismatch.
func TestBuiltinUpgradeReembeds(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# Gardening\n\nTomatoes need sun.\n"})
	ix := openWith(t, root, embed.Builtin(), embed.Settings{})
	mustSync(t, ix, SyncOptions{})
	if _, err := ix.DB.Exec("UPDATE meta SET value='sif-glove100d-150k-q4' WHERE key='embed_model'"); err != nil {
		t.Fatal(err)
	}
	if ok, err := ix.HasVectors(t.Context()); ok || err != nil {
		t.Errorf("before the sync: HasVectors = %v, %v (want lexical, no error)", ok, err)
	}
	res := mustSync(t, ix, SyncOptions{})
	if id, _ := ix.StoredIdentity(t.Context()); id.Model != embed.BuiltinModel() || res.Embed == nil || res.Embed.Chunks != 1 {
		t.Errorf("after the sync: %+v, %+v", id, res.Embed)
	}
	if ok, err := ix.HasVectors(t.Context()); !ok || err != nil {
		t.Errorf("after the sync: HasVectors = %v, %v", ok, err)
	}
}

// TestQueryTypoUnlessVaultUsesIt: a query's unknown word one edit from a
// dictionary word is read as that word, unless the vault itself uses it ("callout" is no
// misspelt "fallout" in a vault about callouts).
func TestQueryTypoUnlessVaultUsesIt(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"Boxes.md": "# Boxes\n\nA callout stands out from the text.\n"})
	ix := openWith(t, root, embed.Builtin(), embed.Settings{})
	mustSync(t, ix, SyncOptions{})
	ctx := t.Context()
	for _, c := range []struct {
		q, typoOf string
		vaultHas  bool
	}{{"callout", "fallout", true}, {"recipies", "recipes", false}} {
		got, err := ix.EmbedQuery(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		corrected, _ := embed.Query(ctx, embed.Builtin(), c.typoOf)
		if same := embed.Dot(got, corrected) > 0.999; same == c.vaultHas {
			t.Errorf("%q: read as %q = %v, want %v", c.q, c.typoOf, same, !c.vaultHas)
		}
	}
}
