package mcpserver

import (
	"encoding/json"
	"testing"
)

// FuzzCheckMessage: whatever a client sends, checkMessage answers without
// panicking; a refusal encodes to one valid JSON-RPC error object; an
// acceptance is a message the SDK decoded. sniffID never panics on any
// prefix either.
func FuzzCheckMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{}`, `[]`, `null`, `1e400`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"loci://v/a\u0000.md"}}`,
		"\xff\xfe", `{"a":[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, rep := checkMessage(data)
		switch {
		case rep != nil && msg != nil:
			t.Fatalf("both a message and a refusal for %q", data)
		case rep != nil:
			b := rep.encode()
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == 0 || m.ID == nil {
				t.Fatalf("refusal of %q is not a JSON-RPC error: %s", data, b)
			}
		case msg == nil:
			t.Fatalf("neither a message nor a refusal for %q", data)
		}
		sniffID(data)
	})
}
