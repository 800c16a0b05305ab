package query

import "testing"

func TestDetect(t *testing.T) {
	for q, want := range map[string]string{
		`{{query (task TODO)}}`: LogseqSimple,
		`(and [[a]] [[b]])`:     LogseqSimple,
		`[[Project Atlas]]`:     LogseqSimple,
		`#project`:              LogseqSimple,
		`"exact phrase"`:        LogseqSimple,
		`[:find ?b :where [?b :block/marker "TODO"]]`:            LogseqAdvanced,
		"[ :find ?b\n :where [?b :block/marker _]]":              LogseqAdvanced,
		`{:title "x" :query [:find ?b :where [?b :block/uuid]]}`: LogseqAdvanced,
		"#+BEGIN_QUERY\n{:query [:find ?b]}\n#+END_QUERY":        LogseqAdvanced,
		`  task from "Projects"`:                                 Dataview,
		"TABLE\nstatus":                                          Dataview,
		`[1, 2]`:                                                 "",
		`tasks please`:                                           "",
		``:                                                       "",
	} {
		if got := Detect(q); got != want {
			t.Errorf("Detect(%q) = %q, want %q", q, got, want)
		}
	}
}
