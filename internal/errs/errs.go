// Package errs defines loci's one error type: a stable snake_case code, a
// human message and a details map. Every surface (CLI, MCP, REST) renders it
// the same way; codes are part of the public contract (docs/errors.md).
package errs

import (
	"errors"
	"fmt"
)

// Stable error codes.
const (
	CodeInvalidInput   = "validation_failed"
	CodeNotFound       = "note_not_found"
	CodePathDenied     = "path_denied"
	CodeVaultNotFound  = "vault_not_found"
	CodeIndexMissing   = "index_missing"
	CodeIndexBusy      = "index_busy"
	CodeIndexSchema    = "index_schema_mismatch"
	CodeAmbiguous      = "ambiguous_note"
	CodeInternal       = "internal"
	CodeUnauthorized   = "unauthorized"
	CodeForbidden      = "forbidden"
	CodeTooLarge       = "payload_too_large"
	CodeRateLimited    = "rate_limited"
	CodeUnknownOp      = "unknown_operation"
	CodeBlockNotFound  = "block_not_found"
	CodeNotLogseqGraph = "not_logseq_graph"

	// Codes of the write pipeline (docs/writes.md).
	CodeEtagMismatch     = "etag_mismatch"          // if_match differs from the note's current etag
	CodeWritesDisabled   = "writes_disabled"        // write operations are off (or read-only mode)
	CodeIdempotencyReuse = "idempotency_key_reused" // the key was used before with a different input
	CodeConflict         = "conflict"               // the change does not fit the note as it is now
	CodeInvalidUTF8      = "invalid_utf8"           // the note is not UTF-8 text, so it is never edited
	CodeNoteLocked       = "note_locked"            // another writer held the note's lock too long
	CodeUndoNotFound     = "undo_not_found"         // no journal entry to undo

	// CodeConfigInvalid: a config file has an unknown key, a value of the
	// wrong type, a bad glob, duration or enum value, or an index_dir
	// that leaves the vault; details.problems lists each with its key and
	// line. Every command that loads the config fails closed with it.
	CodeConfigInvalid = "config_invalid"
)

// Codes of semantic retrieval.
const (
	// CodeEmbedMismatch: the index holds vectors of another embedding model.
	CodeEmbedMismatch = "embedding_mismatch"
	// CodeEmbedUnavailable: no vectors, or the embedding service failed.
	CodeEmbedUnavailable = "embedding_unavailable"
)

// Codes of the HTTP surface for requests that name no operation.
const (
	CodeRouteNotFound    = "route_not_found"
	CodeMethodNotAllowed = "method_not_allowed"
)

// Error is a typed, user-facing error.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	cause   error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// New returns an Error with the given code and formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with code and message that wraps cause.
func Wrap(cause error, code, message string) *Error {
	return &Error{Code: code, Message: message, cause: cause}
}

// With adds a detail and returns e for chaining.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// As converts any error to *Error; untyped errors become CodeInternal.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error(), cause: err}
}

// Code returns the code of err ("" for nil).
func Code(err error) string {
	if err == nil {
		return ""
	}
	return As(err).Code
}

// ExitCode maps an error code to the CLI's documented exit status.
func ExitCode(err error) int {
	switch Code(err) {
	case "":
		return 0
	case CodeInvalidInput:
		return 2
	case CodeNotFound, CodeVaultNotFound, CodeBlockNotFound, CodeAmbiguous:
		return 3
	case CodePathDenied, CodeUnauthorized, CodeForbidden:
		return 4
	case CodeIndexMissing, CodeIndexSchema, CodeEmbedMismatch:
		return 5
	case CodeIndexBusy:
		return 6
	case CodeEtagMismatch, CodeConflict, CodeIdempotencyReuse, CodeNoteLocked:
		return 7
	case CodeWritesDisabled:
		return 4
	case CodeInvalidUTF8, CodeConfigInvalid, CodeUnsupportedQuery:
		return 2
	case CodeUndoNotFound:
		return 3
	default:
		return 1
	}
}

// Codes of the query operation (docs/query.md).
const (
	// CodeUnsupportedQuery: the query uses a construct (or a language)
	// loci does not evaluate; details.construct names it.
	CodeUnsupportedQuery = "unsupported_query"
	// CodeQueryTimeout: the query ran past its timeout_ms.
	CodeQueryTimeout = "query_timeout"
)
