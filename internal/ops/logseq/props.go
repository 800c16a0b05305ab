package logseq

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/loci-dev/loci/internal/errs"
)

// Props are the properties of a block or page write: key to value, where a
// value may be a JSON string, number or boolean. Numbers and booleans are
// written as Logseq writes them (rating:: 5, done:: true); a string is
// written as it is.
type Props map[string]string

// UnmarshalJSON accepts strings, numbers and booleans as values.
func (p *Props) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return errs.New(errs.CodeInvalidInput, "properties must be an object of key: value")
	}
	out := make(Props, len(raw))
	for k, v := range raw {
		s, err := propText(v)
		if err != nil {
			return errs.New(errs.CodeInvalidInput, "the value of property %s must be a string, a number or a boolean, not %s", k, preview(string(v), 40)).With("property", k)
		}
		out[k] = s
	}
	*p = out
	return nil
}

// propText is the text of one property value.
func propText(v json.RawMessage) (string, error) {
	t := bytes.TrimSpace(v)
	switch {
	case len(t) == 0:
		return "", errs.New(errs.CodeInvalidInput, "empty value")
	case t[0] == '"':
		var s string
		err := json.Unmarshal(t, &s)
		return s, err
	case string(t) == "true" || string(t) == "false":
		return string(t), nil
	}
	var n json.Number
	if err := json.Unmarshal(t, &n); err != nil {
		return "", err
	}
	// Plain integers and decimals keep their digits; exponents are spelled
	// out (1e3 → 1000), as Logseq would show the number.
	if bytes.ContainsAny(t, "eE") {
		f, err := n.Float64()
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	return n.String(), nil
}
