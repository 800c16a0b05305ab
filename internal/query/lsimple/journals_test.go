package lsimple

import (
	"context"
	"reflect"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// A graph whose journals are named yyyyMMdd and titled "MMM do, yyyy":
// (page "Nov 20th, 2026") and [[Nov 20th, 2026]] find the journal
// journals/20261120.md (its title is no longer its file stem).
func TestJournalFileNameFormat(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn":    "{:journal/file-name-format \"yyyyMMdd\"\n :journal/page-title-format \"MMM do, yyyy\"}\n",
		"journals/20261120.md": "- jA day one\n",
		"journals/20261121.md": "- jB met [[Nov 20th, 2026]]\n",
		"pages/Plan.md":        "- p1 see [[nov 20th, 2026]]\n- p2 other\n",
	})
	ix := indexOf(t, root)
	ev := Evaluator{Now: fixedNow}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`(page "Nov 20th, 2026")`, []string{"jA"}},
		{`(page "20261120")`, []string{}},
		// The journal's own block, and the blocks linking to it.
		{`[[Nov 20th, 2026]]`, []string{"jA", "jB", "p1"}},
		{`(between [[Nov 20th, 2026]] [[Nov 20th, 2026]])`, []string{"jA"}},
	} {
		r, err := ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := firstWords(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
}
