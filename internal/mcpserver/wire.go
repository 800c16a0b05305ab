package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Incoming messages are checked before the SDK sees them.
//
// The SDK (go-sdk v1.8.0) ends a stdio session on the first line it cannot
// decode (its read loop returns the error, which closes the connection), and
// over HTTP it answers such bodies with plain-text 400s. So every incoming
// message, a stdio line or an HTTP POST body, goes through checkMessage
// first: a message that is not well-formed JSON-RPC 2.0 is answered here
// with a JSON-RPC error (-32700 parse error with id null for what is not
// JSON, -32600 invalid request for a wrong structure, -32602 for params
// that cannot be right) and never reaches the SDK; what passes is exactly
// what the SDK decodes without error (checkMessage ends by decoding it with
// the SDK's own decoder), so the SDK still does all of the protocol.

// MaxMessageBytes bounds one incoming message: a line over stdio, a POST body
// over HTTP (the same 4 MiB as loci serve's request bodies and as the
// result governor, ops.DefaultMaxResultBytes). A larger message is answered
// with -32600 (data.code payload_too_large); over stdio the rest of its line
// is read and dropped without being kept.
const MaxMessageBytes = 4 << 20

// maxNesting bounds how deeply arrays and objects nest in one message. MCP
// messages nest a few levels; 100 leaves room for any tool argument while
// keeping every decoder far from its own limits (the SDK's decoder refuses
// more than 1000 levels, which used to end the session).
const maxNesting = 100

// maxQuoted bounds a value of the message quoted back in an error.
const maxQuoted = 64

// maxSafeID is the largest integer id that survives the SDK's decoding
// exactly (it reads ids as float64).
const maxSafeID = 1 << 53

// reply is an error answer built here, for a message the SDK never sees.
type reply struct {
	id   jsonrpc.ID // zero: null
	code int64
	msg  string
	data map[string]any
}

func (r *reply) encode() []byte {
	type wireErr struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data,omitempty"`
	}
	// The id member is required in a response, null when the request's id
	// could not be read; the SDK's encoder would omit it, hence this struct.
	out := struct {
		JSONRPC string  `json:"jsonrpc"`
		ID      any     `json:"id"`
		Error   wireErr `json:"error"`
	}{"2.0", r.id.Raw(), wireErr{r.code, r.msg, r.data}}
	b, err := json.Marshal(out)
	if err != nil { // data holds only strings and numbers; cannot happen
		b, _ = json.Marshal(struct {
			JSONRPC string  `json:"jsonrpc"`
			ID      any     `json:"id"`
			Error   wireErr `json:"error"`
		}{"2.0", r.id.Raw(), wireErr{Code: r.code, Message: r.msg}})
	}
	return b
}

func parseError(format string, args ...any) *reply {
	return &reply{code: jsonrpc.CodeParseError, msg: "parse error: " + fmt.Sprintf(format, args...)}
}

func invalidRequest(id jsonrpc.ID, format string, args ...any) *reply {
	return &reply{id: id, code: jsonrpc.CodeInvalidRequest, msg: "invalid request: " + fmt.Sprintf(format, args...)}
}

// tooLarge answers a message over MaxMessageBytes (size < 0: unknown).
func tooLarge(id jsonrpc.ID, size int64, limit int) *reply {
	what := "over"
	data := map[string]any{"code": "payload_too_large", "limit": limit}
	if size >= 0 {
		what = strconv.FormatInt(size, 10) + " bytes, over"
		data["bytes"] = size
	}
	return &reply{id: id, code: jsonrpc.CodeInvalidRequest, data: data, msg: fmt.Sprintf(
		"payload_too_large: the message is %s the %d-byte limit of one MCP message; send large note text in several edits", what, limit)}
}

// checkMessage validates one incoming message (without its line ending).
// It returns either the decoded message, ready for the SDK, or the error
// answer to send instead.
func checkMessage(data []byte) (jsonrpc.Message, *reply) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, parseError("empty message; send one JSON-RPC 2.0 object")
	}
	if !utf8.Valid(data) {
		return nil, parseError("the message is not valid UTF-8 (first bad byte at offset %d)", badUTF8(data))
	}
	if depth := nesting(data, maxNesting); depth > maxNesting {
		return nil, invalidRequest(jsonrpc.ID{}, "arrays and objects nest more than %d levels deep", maxNesting)
	}
	const sendOne = "; send one JSON-RPC 2.0 object per message (per line over stdio)"
	if first := data[firstNonSpace(data)]; first != '{' {
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			return nil, parseError("%v"+sendOne, err)
		}
		if first == '[' {
			return nil, invalidRequest(jsonrpc.ID{}, "JSON-RPC batches are not supported (MCP removed batching in 2025-06-18); send each message on its own")
		}
		return nil, invalidRequest(jsonrpc.ID{}, "a JSON-RPC message is an object, not %s", kindOf(bytes.TrimSpace(data)))
	}
	var top map[string]json.RawMessage // decoding checks the whole message is valid JSON
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, parseError("%v"+sendOne, err)
	}
	idRaw, hasID := top["id"]
	id, err := parseID(idRaw)
	if hasID && err != nil {
		return nil, invalidRequest(jsonrpc.ID{}, "%v", err)
	}
	if v := top["jsonrpc"]; string(v) != `"2.0"` {
		if v == nil {
			return nil, invalidRequest(id, `"jsonrpc": "2.0" is missing`)
		}
		return nil, invalidRequest(id, `"jsonrpc" must be "2.0", not %s`, clip(string(v), maxQuoted))
	}
	if methodRaw, isRequest := top["method"]; isRequest {
		var method string
		if methodRaw[0] != '"' || json.Unmarshal(methodRaw, &method) != nil {
			return nil, invalidRequest(id, `"method" must be a string, not %s`, kindOf(methodRaw))
		}
		if hasID && !id.IsValid() {
			return nil, invalidRequest(id, `a request's "id" must not be null (MCP); leave "id" out to send a notification`)
		}
		params, hasParams := top["params"]
		hasParams = hasParams && string(params) != "null"
		if hasParams && params[0] != '{' {
			if !hasID {
				// A notification is answered only when it is not valid
				// JSON-RPC (params an object or an array); one the SDK
				// cannot use is dropped there, unanswered.
				if params[0] == '[' {
					return jsonrpcDecode(data, id)
				}
				return nil, invalidRequest(id, `"params" must be an object, not %s`, kindOf(params))
			}
			return nil, &reply{id: id, code: jsonrpc.CodeInvalidParams, msg: fmt.Sprintf(`invalid params: "params" of %s must be an object, not %s`, clip(method, maxQuoted), kindOf(params))}
		}
		if method == "initialize" && hasID {
			// The SDK answers a malformed initialize with error code 0.
			if !hasParams {
				return nil, &reply{id: id, code: jsonrpc.CodeInvalidParams, msg: `invalid params: initialize needs "params": {"protocolVersion", "capabilities", "clientInfo"}`}
			}
			if err := json.Unmarshal(params, new(mcp.InitializeParams)); err != nil {
				return nil, &reply{id: id, code: jsonrpc.CodeInvalidParams, msg: "invalid params: initialize: " + err.Error()}
			}
		}
	} else { // a response to one of the server's requests
		if !id.IsValid() {
			return nil, invalidRequest(jsonrpc.ID{}, `a message without "method" is a response and needs the "id" of the request it answers`)
		}
		_, hasResult := top["result"]
		errRaw, hasError := top["error"]
		if hasResult == hasError {
			return nil, invalidRequest(jsonrpc.ID{}, `a response carries exactly one of "result" and "error"`)
		}
		if hasError {
			var e struct {
				Code    *int64  `json:"code"`
				Message *string `json:"message"`
			}
			if errRaw[0] != '{' || json.Unmarshal(errRaw, &e) != nil || e.Code == nil || e.Message == nil {
				return nil, invalidRequest(jsonrpc.ID{}, `a response's "error" is an object with an integer "code" and a string "message"`)
			}
		}
		id = jsonrpc.ID{} // never echo a response's id: it names one of the server's requests
	}
	return jsonrpcDecode(data, id)
}

// jsonrpcDecode decodes a checked message with the SDK's own decoder:
// whatever it refuses would end a stdio session, so it is answered here.
func jsonrpcDecode(data []byte, id jsonrpc.ID) (jsonrpc.Message, *reply) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, invalidRequest(id, "%v", err)
	}
	return msg, nil
}

// parseID reads a request id: a string, an integer of at most 2^53 in
// magnitude written as a plain integer, or null (zero ID).
func parseID(raw json.RawMessage) (jsonrpc.ID, error) {
	if raw == nil || string(raw) == "null" {
		return jsonrpc.ID{}, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf(`"id" is not a valid string: %v`, err)
		}
		return jsonrpc.MakeID(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if bytes.ContainsAny(raw, ".eE") {
			return jsonrpc.ID{}, fmt.Errorf(`a numeric "id" must be a plain integer, not %s`, clip(string(raw), maxQuoted))
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return jsonrpc.ID{}, fmt.Errorf(`a numeric "id" must be within ±2^53, not %s`, clip(string(raw), maxQuoted))
		}
		return jsonrpc.MakeID(float64(n))
	}
	return jsonrpc.ID{}, fmt.Errorf(`"id" must be a string or an integer, not %s`, kindOf(raw))
}

// nesting returns how deeply arrays and objects nest in data (strings
// skipped), stopping once it exceeds limit.
func nesting(data []byte, limit int) int {
	depth, max := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				max = depth
				if max > limit {
					return max
				}
			}
		case '}', ']':
			depth--
		}
	}
	return max
}

// sniffID looks for a top-level "id" in the start of a message too large to
// parse whole, so that its error can name the request it answers.
func sniffID(prefix []byte) jsonrpc.ID {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonrpc.ID{}
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return jsonrpc.ID{}
		}
		if key == "id" {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return jsonrpc.ID{}
			}
			id, _ := parseID(raw)
			return id
		}
		if skipValue(dec) != nil {
			return jsonrpc.ID{}
		}
	}
	return jsonrpc.ID{}
}

// skipValue reads past one JSON value token by token (a large value is
// never held whole, except for a single string).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func firstNonSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}

// kindOf names the JSON type of a value, for error messages.
func kindOf(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut with
// "...": a value quoted in an error message or its data.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
