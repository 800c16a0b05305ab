package aiops

import (
	"strings"
	"testing"
)

// TestPartialText: the text of the chosen string fields comes out of the
// model's JSON as it streams, whatever the chunk boundaries: escapes,
// \u sequences and surrogate pairs split across chunks, a fence or prose
// before the object, keys that merely look like the field, nested fields
// of the same name.
func TestPartialText(t *testing.T) {
	raw := "Sure:\n```json\n" + `{"supported": true, "note": {"answer": "nested, not this"}, "answers": "nor this", ` +
		`"answer": "Line 1\nTab\there \"quoted\" \\ caf\u00e9 \ud83d\ude00 — ok", "citations": [{"answer": "no"}]}` + "\n```"
	want := "Line 1\nTab\there \"quoted\" \\ café 😀 — ok"
	for _, size := range []int{1, 2, 3, 5, 7, 64, len(raw)} {
		var got strings.Builder
		events := 0
		p := newPartial(answerText, func(s string) { events++; got.WriteString(s) })
		for i := 0; i < len(raw); i += size {
			p.feed(raw[i:min(i+size, len(raw))])
		}
		if got.String() != want {
			t.Errorf("chunks of %d: %q, want %q", size, got.String(), want)
		}
		if events == 0 {
			t.Errorf("chunks of %d: no events", size)
		}
	}
}
