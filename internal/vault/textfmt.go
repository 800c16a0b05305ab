package vault

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
)

// Format is how a note's text is laid out on disk: a UTF-8 byte order mark,
// CRLF line breaks, a final newline. Edits work on plain LF text (Decode) and
// are written back in the note's own format (Encode), so that the bytes of
// every line an edit did not touch stay identical.
type Format struct {
	BOM  bool `json:"bom"`
	CRLF bool `json:"crlf"` // every line break of the file is CRLF
	// FinalNewline is true when the file ends with a line break (and for
	// empty and new files).
	FinalNewline bool `json:"final_newline"`
}

const utf8BOM = "\uFEFF"

// NewFileFormat is the format of a note loci creates: LF, no BOM, a final newline.
var NewFileFormat = Format{FinalNewline: true}

// DetectFormat reads the layout of b. A file mixing CRLF and LF breaks is
// treated as LF: its CRs then stay part of their lines, byte for byte.
func DetectFormat(b []byte) Format {
	f := Format{BOM: bytes.HasPrefix(b, []byte(utf8BOM))}
	body := b
	if f.BOM {
		body = b[len(utf8BOM):]
	}
	if len(body) == 0 {
		f.FinalNewline = true
		return f
	}
	f.FinalNewline = body[len(body)-1] == '\n'
	lf := bytes.Count(body, []byte("\n"))
	f.CRLF = lf > 0 && bytes.Count(body, []byte("\r\n")) == lf
	return f
}

// CheckText refuses bytes that are not UTF-8 text (what the editor would
// corrupt); NUL bytes count as binary.
func CheckText(rel string, b []byte) error {
	if !utf8.Valid(b) {
		return errs.New(errs.CodeInvalidUTF8, "%s is not valid UTF-8 text; loci does not edit it (the file is untouched)", rel).With("path", rel)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return errs.New(errs.CodeInvalidUTF8, "%s holds NUL bytes (binary data); loci does not edit it (the file is untouched)", rel).With("path", rel)
	}
	return nil
}

// Decode returns the text of b without the BOM and, for a CRLF file, with
// LF line breaks.
func (f Format) Decode(b []byte) string {
	s := string(b)
	if f.BOM {
		s = strings.TrimPrefix(s, utf8BOM)
	}
	if f.CRLF {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// Encode lays LF text out in format f: the final newline as the file had
// it, CRLF breaks for a CRLF file, the BOM back in front.
func (f Format) Encode(s string) []byte {
	if f.CRLF {
		// Text from callers may carry CRLF already; normalize before converting.
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	switch {
	case s == "":
	case f.FinalNewline && !strings.HasSuffix(s, "\n"):
		s += "\n"
	case !f.FinalNewline && strings.HasSuffix(s, "\n"):
		s = s[:len(s)-1]
	}
	if f.CRLF {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	if f.BOM {
		s = utf8BOM + s
	}
	return []byte(s)
}
