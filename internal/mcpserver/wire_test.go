package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// repeatReader yields n bytes of c without ever holding them.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := int64(len(p))
	if k > r.n {
		k = r.n
	}
	for i := range p[:k] {
		p[i] = r.c
	}
	r.n -= k
	return int(k), nil
}

// TestReadLineKeepsABoundedPrefix: a 64 MiB line is read through and
// counted, but at most max+2 bytes of it are kept.
func TestReadLineKeepsABoundedPrefix(t *testing.T) {
	const max = 1024
	const size = 64 << 20
	in := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"`), &repeatReader{c: 'a', n: size}, strings.NewReader("\"}}\n"+`{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n"))
	c := &lineConn{in: bufio.NewReaderSize(in, 64<<10), max: max}
	line, n, err := c.readLine()
	if err != nil || len(line) > max+2 || n != int64(size+len(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":""}}`)) {
		t.Fatalf("oversized line: kept %d bytes, counted %d, err %v", len(line), n, err)
	}
	if id := sniffID(line); id.Raw() != int64(7) {
		t.Errorf("id found in the kept prefix: %v", id.Raw())
	}
	line, _, err = c.readLine()
	if err != nil || string(line) != `{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n" {
		t.Errorf("next line: %q %v", line, err)
	}
	if _, _, err := c.readLine(); err != io.EOF {
		t.Errorf("at the end: %v", err)
	}
}

// TestLineConnAnswersAndGoesOn: over one connection, malformed and
// oversized lines are answered on the output, whole lines, and only the
// good messages reach Read.
func TestLineConnAnswersAndGoesOn(t *testing.T) {
	in := strings.Join([]string{
		`hello`,
		``,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`[]`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	conn, err := (&lineTransport{r: strings.NewReader(in), w: &out, max: 1024, log: slog.New(slog.DiscardHandler)}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got []any
	for {
		msg, err := conn.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.(*jsonrpc.Request).ID.Raw())
	}
	if fmt.Sprint(got) != "[2 3]" {
		t.Errorf("messages read: %v", got)
	}
	var codes []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int64          `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		codes = append(codes, fmt.Sprintf("%s:%d", m.ID, m.Error.Code))
	}
	if got := strings.Join(codes, " "); got != "null:-32700 1:-32600 null:-32600" {
		t.Errorf("answers: %s\n%s", got, out.String())
	}
}

// TestEncodeOutgoing: an error answer with code 0 gets a JSON-RPC code, and
// an answer that cannot be encoded becomes an internal error for the same
// id instead of a failed write (which would end the session).
func TestEncodeOutgoing(t *testing.T) {
	for _, c := range []struct {
		name string
		resp *jsonrpc.Response
		want string
	}{
		{"code 0", &jsonrpc.Response{ID: mustID(1), Error: errors.New(`method "tools/list" is invalid during session initialization`)},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"method \"tools/list\" is invalid during session initialization"}}`},
		{"data not JSON", &jsonrpc.Response{ID: mustID("r"), Error: &jsonrpc.Error{Code: -32602, Message: "x", Data: json.RawMessage("{\"uri\":\"a\\x00\"}")}},
			`{"jsonrpc":"2.0","id":"r","error":{"code":-32603,"message":"internal error: the answer could not be encoded: `},
		{"fine", &jsonrpc.Response{ID: mustID(2), Result: json.RawMessage(`{}`)}, `{"jsonrpc":"2.0","id":2,"result":{}}`},
	} {
		b, err := encodeOutgoing(c.resp)
		if err != nil || !strings.HasPrefix(string(b), c.want) || !json.Valid(b) {
			t.Errorf("%s: %s %v", c.name, b, err)
		}
	}
}

func mustID(v any) jsonrpc.ID {
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

func TestParseID(t *testing.T) {
	for raw, want := range map[string]string{
		`7`: "7", `-7`: "-7", `0`: "0", `9007199254740992`: "9007199254740992", `-9007199254740992`: "-9007199254740992",
		`"a"`: "a", `""`: "", `null`: "<nil>",
		`9007199254740993`: "error", `1.5`: "error", `1e3`: "error", `1e400`: "error", `true`: "error", `{}`: "error", `[]`: "error",
	} {
		id, err := parseID(json.RawMessage(raw))
		got := fmt.Sprint(id.Raw())
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("parseID(%s) = %s (%v), want %s", raw, got, err, want)
		}
	}
}

// TestClip: the one clip (error messages and error data) cuts on a rune
// boundary and marks the cut.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 64, "short"},
		{"abcdef", 3, "abc..."},
		{"aé", 2, "a..."}, // é is two bytes: never cut inside it
		{"日本語", 4, "日..."},
		{"", 0, ""},
	} {
		if got := clip(c.in, c.n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if got := clip(c.in, c.n); !utf8.ValidString(got) {
			t.Errorf("clip(%q, %d) is not UTF-8", c.in, c.n)
		}
	}
}
