package lsimple

import (
	"context"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
)

// FuzzEval feeds arbitrary text to the reader and, when it reads, to the
// evaluator over the fixture graph: no panic, and every failure is a
// typed validation error.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		`{{query (and [[a]] (not #b) "c")}}`, `(or (task TODO) (priority a b))`,
		`(property k "v")`, `(page-property tags [[x]])`, `(between -7d today)`,
		`(between [[Nov 1st, 2026]] [[Nov 25th, 2026]])`, `(page "x/y")`, `(namespace x)`,
		`#[[a [[b]]]]`, `"unterminated`, `((((`, `))`, `{{query`, `words only here`,
		`(between +99999999999y -1d)`, `(page-tags a b c)`, `(sort-by x)`, `[[]]`, `#`,
		`(and [[a]] (sort-by effort asc) (sample 3))`, `((6500aaaa-0000-4000-8000-000000000001))`,
		`(((6500aaaa-0000-4000-8000-000000000001)))`, `(all-page-tags)`, `(page-ref x)`,
	} {
		f.Add(s)
	}
	root := f.TempDir()
	testutil.WriteFiles(f, root, fixture)
	ix := indexOf(f, root)
	ev := Evaluator{Now: func() time.Time { return time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC) }}
	f.Fuzz(func(t *testing.T, q string) {
		r, err := ev.Eval(context.Background(), ix, q, 5)
		if err != nil {
			if c := errs.Code(err); c != errs.CodeInvalidInput && c != errs.CodeUnsupportedQuery {
				t.Fatalf("%q: %v (code %s)", q, err, errs.Code(err))
			}
			return
		}
		if len(r.Rows) > 5 || r.Total < len(r.Rows) {
			t.Fatalf("%q: %d rows, total %d", q, len(r.Rows), r.Total)
		}
	})
}
