package datalog

import (
	"context"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/query"
)

// FuzzEval feeds arbitrary text to the parser and checker and, when it
// reads, evaluates it over the fixture graph (loaded once; intermediate
// results capped low so every exec stays cheap): no panic, and every
// failure is a typed validation or unsupported error.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		`[:find (pull ?b [*]) :where [?b :block/marker "TODO"]]`,
		`{:title "x" :query [:find ?b :in $ ?s ?e :where (between ?b ?s ?e)] :inputs [:-7d :today]}`,
		`[:find ?b :where [?b :block/marker ?m] [(contains? #{"DOING" "LATER"} ?m)] (not [?b :block/priority _])]`,
		`[:find ?n (count ?b) :where (or [?b :block/marker "DONE"] (and [?b :block/priority "A"])) [?b :block/page ?p] [?p :block/name ?n]]`,
		`[:find ?p :where (or-join [?p] [?p :block/tags ?t] (and [?b :block/page ?p])) (not-join [?p] [?x :block/parent ?p])]`,
		`[:find ?b :where [?b :block/properties ?p] [(get ?p :type) ?t] [(str ?t "x") ?s] [(clojure.string/includes? ?s "p")]]`,
		`#+BEGIN_QUERY
{:query [:find (pull ?b [:block/content {:block/page [:block/name]}]) :where (task ?b #{"TODO"}) (page-ref ?b "alice")]}
#+END_QUERY`,
		`[:find ?b . :where [?b :block/uuid #uuid "6500aaaa-0000-4000-8000-000000000001"]]`,
		`[:find [?b ...] :in $ [?m ...] :where [?b :block/marker ?m]]`,
		`[:find ?b :where [?b :block/content ?c] [(re-pattern "a+") ?r] [(re-find ?r ?c)]]`,
		`{:query (and (todo now))}`, `[:find`, `{:a}`, `#{1 2}`, `[:find ?a ?b :where [?a :block/name] [?b :block/name]]`,
	} {
		f.Add(s)
	}
	_, g := loadFixture(f)
	ev := Evaluator{Now: fixedNow, MaxRows: 2000}
	f.Fuzz(func(t *testing.T, q string) {
		r, err := ev.Eval(context.Background(), g, q, nil, query.Options{Limit: 5})
		if err != nil {
			if c := errs.Code(err); c != errs.CodeInvalidInput && c != errs.CodeUnsupportedQuery {
				t.Fatalf("%q: %v (code %s)", q, err, errs.Code(err))
			}
			return
		}
		if len(r.Rows) > 5 {
			t.Fatalf("%q: %d rows", q, len(r.Rows))
		}
	})
}

// FuzzRefNames: any property value reads without a panic into names that
// are non-empty, trimmed and part of the value.
func FuzzRefNames(f *testing.F) {
	f.Add("[[A]], #b, \"[[c]]\", d", true)
	f.Add("#[[x y]] #z. [[unclosed", false)
	f.Fuzz(func(t *testing.T, v string, commas bool) {
		if len(v) > 4096 {
			return
		}
		for _, n := range refNames(v, commas) {
			if n == "" || n != strings.TrimSpace(n) || !strings.Contains(v, n) {
				t.Fatalf("%q: name %q", v, n)
			}
		}
		_ = propValue("tags", v)
	})
}
