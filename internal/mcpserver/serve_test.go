package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/mcpserver"
)

// endless is a request body that never ends (sent chunked).
type endless struct{ prefix io.Reader }

func (e *endless) Read(p []byte) (int, error) {
	if n, err := e.prefix.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	for i := range p {
		p[i] = 'b'
	}
	return len(p), nil
}

// TestServeBodyLimit: under a real `loci serve`, an oversized POST to /mcp
// gets the MCP handler's answer (413, a JSON-RPC error with the request's
// id and data.limit; data.bytes when the length was announced), a body that
// never ends is cut at the limit, an unauthenticated one is not read, and
// the server goes on serving MCP sessions.
func TestServeBodyLimit(t *testing.T) {
	bin := lociBinary(t)
	v := demoCopy(t, "vault")
	const token = "serve-body-limit-token-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", v, "--addr", "127.0.0.1:0", "--no-sync")
	serve.Env = append(os.Environ(), "LOCI_TOKEN="+token, "LOCI_CONFIG=")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
	}()
	url := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "MCP" {
			url = f[1]
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if url == "" {
		t.Fatalf("loci serve printed no MCP address; stderr:\n%s", stderr.String())
	}

	post := func(body io.Reader, auth bool) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	type answer struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code  string   `json:"code"`
				Limit int      `json:"limit"`
				Bytes *float64 `json:"bytes"`
			} `json:"data"`
		} `json:"error"`
	}
	check := func(what string, status int, body []byte, size int) {
		t.Helper()
		var a answer
		if err := json.Unmarshal(body, &a); err != nil || status != http.StatusRequestEntityTooLarge || a.ID != float64(7) ||
			a.Error.Code != -32600 || a.Error.Data.Code != "payload_too_large" || a.Error.Data.Limit != mcpserver.MaxMessageBytes {
			t.Errorf("%s: HTTP %d %.300s, want 413 with id 7 and data.limit %d", what, status, body, mcpserver.MaxMessageBytes)
			return
		}
		if (size < 0) != (a.Error.Data.Bytes == nil) || (size >= 0 && *a.Error.Data.Bytes != float64(size)) {
			t.Errorf("%s: data.bytes %v, want %d (-1: none)", what, a.Error.Data.Bytes, size)
		}
	}
	prefix := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"capture_note","arguments":{"text":"`
	huge := prefix + strings.Repeat("a", mcpserver.MaxMessageBytes) + `"}}}`
	status, body := post(strings.NewReader(huge), true)
	check("announced", status, body, len(huge))
	status, body = post(&endless{strings.NewReader(prefix)}, true)
	check("never ending", status, body, -1)
	if status, body := post(&endless{strings.NewReader(prefix)}, false); status != http.StatusUnauthorized {
		t.Errorf("without the token: HTTP %d %.300s", status, body)
	}

	// The server still serves sessions.
	cs := connectWith(t, strings.TrimSuffix(url, "/mcp"), token)
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping after the oversized bodies: %v", err)
	}
	if res := call(t, cs, "index_status", map[string]any{}); res.IsError {
		t.Errorf("index_status: %s", text(res))
	}
}
