package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/errs"
)

// maxURIBytes bounds a resource URI in resources/read, subscribe and
// unsubscribe (subscriptions are kept in memory per URI).
const maxURIBytes = 16 << 10

// guard is the outermost receiving middleware: it refuses what the SDK would
// mishandle and makes sure every error it lets out is a JSON-RPC error the
// transport can encode.
//
//   - A second initialize in a session: the SDK answers it with error code 0
//     (a plain Go error); here it is -32600.
//   - A resource URI (resources/read, subscribe, unsubscribe) with a control
//     character, invalid UTF-8 or over maxURIBytes: -32602 with the URI
//     escaped in data. This is the workaround for an SDK v1.8.0 bug:
//     mcp.ResourceNotFoundError builds its data as
//     json.RawMessage(fmt.Sprintf(`{"uri":%q}`, uri)), and Go's %q is not
//     JSON (it writes \x00, \a, \U000f0000, \xff); the response then cannot
//     be encoded, and the SDK treats the failed write as a broken connection
//     and ends the session (stdio exits; an HTTP session answers empty 200s
//     from then on). loci builds its own resource errors (resourceError);
//     a URI that reaches the SDK's own not-found path has neither control
//     characters nor invalid UTF-8, and the data of any error that still is
//     not JSON is rebuilt below.
//   - Any other error without a JSON-RPC code becomes -32603 internal
//     error, not code 0.
func (s *Server) guard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		uri, hasURI := "", false
		switch r := req.(type) {
		case *mcp.ServerRequest[*mcp.InitializeParams]:
			if r.Session != nil && r.Session.InitializeParams() != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: "invalid request: this session is already initialized; initialize is sent once, at the start of a session"}
			}
		case *mcp.ReadResourceRequest:
			if r.Params != nil {
				uri, hasURI = r.Params.URI, true
			}
		case *mcp.SubscribeRequest:
			if r.Params != nil {
				uri, hasURI = r.Params.URI, true
			}
		case *mcp.UnsubscribeRequest:
			if r.Params != nil {
				uri, hasURI = r.Params.URI, true
			}
		}
		if hasURI {
			if err := checkURI(uri); err != nil {
				return nil, err
			}
			if method == "resources/read" {
				// A URI that is not a served note is answered here, so the
				// SDK's not-found path (the %q above) does not run at all.
				if _, _, err := s.res.parseURI(uri); err != nil {
					return nil, resourceError(uri, err)
				}
			}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			err = wireSafe(err, uri, hasURI)
		}
		return res, err
	}
}

// checkURI refuses a resource URI the SDK or a log line could choke on.
func checkURI(uri string) error {
	var problem string
	switch {
	case len(uri) > maxURIBytes:
		problem = fmt.Sprintf("the uri is %d bytes, over the %d-byte limit", len(uri), maxURIBytes)
	case !utf8.ValidString(uri):
		problem = fmt.Sprintf("the uri is not valid UTF-8 (first bad byte at offset %d)", badUTF8([]byte(uri)))
	default:
		for i, r := range uri {
			if unicode.IsControl(r) {
				problem = fmt.Sprintf("the uri has a control character (U+%04X at byte %d); percent-encode it (a note path never holds one)", r, i)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"uri": clip(uri, 256), "code": errs.CodeInvalidInput})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errs.CodeInvalidInput + ": " + problem, Data: data}
}

// wireSafe makes sure an error leaving a handler has a JSON-RPC code and
// data that is JSON.
func wireSafe(err error, uri string, hasURI bool) error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code == 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if len(we.Data) == 0 || json.Valid(we.Data) {
		return err
	}
	fixed := &jsonrpc.Error{Code: we.Code, Message: err.Error()}
	if hasURI {
		fixed.Data, _ = json.Marshal(map[string]any{"uri": clip(uri, 256)})
	}
	return fixed
}

// badUTF8 is the offset of the first byte of b that is not valid UTF-8.
func badUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
