package llm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxEventLine bounds one line of a stream (a server could send an
// endless one).
const maxEventLine = 16 << 20

// sseEvent is one server-sent event: its name ("" for a plain data
// event) and data.
type sseEvent struct{ name, data string }

// readSSE parses a server-sent event stream and hands each event to fn.
// Lines starting with ':' are comments; an event ends at a blank line.
// Beyond the standard:
//   - servers that omit the blank line between "data:" lines are handled
//     (a data line whose predecessor is already complete JSON, or [DONE],
//     starts a new event);
//   - llama.cpp's "error: {...}" line (a field the standard would ignore)
//     is an event named "error".
func readSSE(br *bufio.Reader, fn func(sseEvent) error) error {
	var data []string
	name := ""
	flush := func() error {
		ev := sseEvent{name, strings.Join(data, "\n")}
		data, name = data[:0], ""
		if strings.TrimSpace(ev.data) == "" {
			return nil
		}
		return fn(ev)
	}
	for {
		line, err := readLine(br)
		if line != "" || err == nil {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			var ferr error
			switch {
			case line == "":
				ferr = flush()
			case field == "":
				// a comment (keep-alive)
			case field == "data":
				if len(data) > 0 && (data[0] == "[DONE]" || json.Valid([]byte(strings.Join(data, "\n")))) {
					ferr = flush()
				}
				data = append(data, value)
			case field == "event":
				if len(data) > 0 {
					ferr = flush()
				}
				name = value
			case field == "error":
				if ferr = flush(); ferr == nil {
					ferr = fn(sseEvent{"error", value})
				}
			default:
				// id:, retry: and unknown fields carry nothing we use.
			}
			if ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads one line without its line ending, at most maxEventLine
// bytes.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > maxEventLine {
			return "", fmt.Errorf("%w: a stream line over %d bytes", ErrBadAnswer, maxEventLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return strings.TrimRight(string(buf), "\r\n"), err
	}
}
