package textseg

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

func TestForIndex(t *testing.T) {
	cases := map[string]string{
		"plain english text": "plain english text",
		"知识管理":               " 知识 识管 管理 ",
		"知":                  " 知 ",
		"Obsidianのノート":       "Obsidian のノ ノー ート ",
		"노트를 검색":             " 노트 트를   검색 ",
		"café 東京 ok":         "café  東京  ok",
		"":                   "",
		"ខ្ញុំ":              " ខ្ ្ញ ញុ ុំ ",
	}
	for in, want := range cases {
		if got := ForIndex(in); got != want {
			t.Errorf("ForIndex(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	got := Words("obsidian-hub 知识管理abc \"x\" e.g. 2024-01-15")
	want := []Word{{"obsidian", false}, {"hub", false}, {"知识管理", true}, {"abc", false}, {"x", false}, {"e", false}, {"g", false}, {"2024", false}, {"01", false}, {"15", false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %v\nwant %v", got, want)
	}
	if w := Words(`"*:-()`); len(w) != 0 {
		t.Errorf("syntax-only input gave words %v", w)
	}
}

func TestBigrams(t *testing.T) {
	if got := Bigrams("知识管理"); !reflect.DeepEqual(got, []string{"知识", "识管", "管理"}) {
		t.Errorf("Bigrams = %v", got)
	}
	if got := Bigrams("知"); !reflect.DeepEqual(got, []string{"知"}) {
		t.Errorf("Bigrams single = %v", got)
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{"Café": "cafe", "ZÜRICH": "zurich", "naïve": "naive", "ASCII": "ascii", "東京": "東京"} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzForIndex(f *testing.F) {
	for _, s := range []string{"知识管理", "abc 東京", "\xff\xfe", "노트"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := ForIndex(s)
		if !HasSegmented(s) && out != s {
			t.Fatalf("changed text without segmented runs: %q → %q", s, out)
		}
		_ = Words(s)
		_ = Fold(s)
	})
}

// TestFoldConcurrent: Fold is called by concurrent searches (loci serve's
// MCP sessions); it once shared one transform.Chain, whose buffers the
// goroutines overwrote (wrong words, or a "slice bounds out of range"
// panic that took the server down). Every goroutine must get the answer a
// lone call gives.
func TestFoldConcurrent(t *testing.T) {
	inputs := []string{"Café", "Crème Brûlée", "Ünïcödé façade naïve", "Ελληνικά ά έ ή", "Tiếng Việt có dấu", "ÀÉÎÕÜ àéîõü", "plain ascii", "日本語のテキスト"}
	want := make([]string, len(inputs))
	for i, s := range inputs {
		want[i] = Fold(s)
	}
	if want[0] != "cafe" || want[1] != "creme brulee" {
		t.Fatalf("Fold: got %q, %q", want[0], want[1])
	}
	const workers, rounds = 8, 2000
	errc := make(chan string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				i := (w + r) % len(inputs)
				if got := Fold(inputs[i]); got != want[i] {
					errc <- fmt.Sprintf("Fold(%q) = %q under concurrency, want %q", inputs[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for e := range errc {
		t.Error(e)
	}
}
