package aiops

import (
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

func groundingFailed(w []AIWarning) error {
	dropped := []string{}
	for _, x := range w {
		if x.Code == "citation_invalid" || x.Code == "citation_drift" {
			dropped = append(dropped, x.Code+": "+x.Message)
		}
	}
	return errs.New(errs.CodeAIGrounding, "no citation of the model survived verification against the vault, so nothing is returned (cite=true)").With("dropped", dropped)
}

// Citation points at the vault content a claim rests on.
type Citation struct {
	Path    string `json:"path" jsonschema:"vault-relative path"`
	Etag    string `json:"etag" jsonschema:"the version of the note the claim rests on"`
	Anchor  string `json:"anchor,omitempty" jsonschema:"heading the claim rests on"`
	Line    int    `json:"line,omitempty" jsonschema:"first line (1-based)"`
	EndLine int    `json:"end_line,omitempty" jsonschema:"last line"`
	Snippet string `json:"snippet" jsonschema:"the cited text, read back from the note"`
}

// rawCitation is a citation as the model writes it.
type rawCitation struct {
	Path    string `json:"path"`
	Etag    string `json:"etag,omitempty"`
	Anchor  string `json:"anchor,omitempty"`
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"end_line,omitempty"`
}

var citationSchema = map[string]any{
	"type": "object", "required": []string{"path"},
	"properties": map[string]any{
		"path": map[string]any{"type": "string"}, "etag": map[string]any{"type": "string"},
		"anchor": map[string]any{"type": "string"}, "line": map[string]any{"type": "integer"}, "end_line": map[string]any{"type": "integer"},
	},
}

func citationsSchema() map[string]any {
	return map[string]any{"type": "array", "items": citationSchema}
}

const groundingRules = `Use ONLY the notes given between "=== NOTE" and "=== END NOTE"; never outside knowledge. ` +
	`Cite sources as {"path", "etag", "line", "end_line", "anchor"}: path and etag exactly as in the NOTE header, line numbers as printed before "|", anchor the heading text if any. ` +
	`Reply with one JSON object only.`

// verify checks citations against the vault; survivors are returned with
// their snippet read back from the note, failures become warnings.
func (c *aiCall) verify(raw []rawCitation) []Citation {
	var out []Citation
	for _, r := range raw {
		if cit, ok := c.verifyOne(r); ok {
			out = append(out, cit)
			c.addCitation(cit)
		}
	}
	return out
}

func (c *aiCall) addCitation(cit Citation) {
	for _, x := range c.meta.Citations {
		if x == cit {
			return
		}
	}
	c.meta.Citations = append(c.meta.Citations, cit)
	if c.stream != nil {
		c.stream("ai.citation", cit)
	}
}

func (c *aiCall) verifyOne(r rawCitation) (Citation, bool) {
	invalid := func(format string, args ...any) (Citation, bool) {
		c.meta.warn("citation_invalid", r.Path, format, args...)
		return Citation{}, false
	}
	n := c.byPath[r.Path]
	if n == nil {
		return invalid("cited %q, which is not among the notes read", r.Path)
	}
	if r.Etag != "" && r.Etag != n.Etag {
		return invalid("cited a version of %s that was not read (etag %s)", r.Path, r.Etag)
	}
	b, _, err := ops.ReadFencedNote(c.fence, c.vh, n.Path)
	if err != nil {
		return invalid("%s no longer exists", r.Path)
	}
	if vault.Etag(b) != n.Etag {
		c.meta.warn("citation_drift", r.Path, "%s changed while the answer was generated", r.Path)
		return Citation{}, false
	}
	cit := Citation{Path: n.Path, Etag: n.Etag, Line: r.Line, EndLine: r.EndLine}
	if r.Anchor != "" {
		want := strings.ToLower(strings.TrimSpace(strings.TrimLeft(r.Anchor, "# ")))
		found := false
		for i, h := range n.Headings {
			if strings.ToLower(strings.TrimSpace(h.Text)) == want {
				cit.Anchor, found = h.Text, true
				if cit.Line == 0 {
					cit.Line, cit.EndLine = h.Line, len(n.Lines)
					for _, h2 := range n.Headings[i+1:] {
						if h2.Level <= h.Level {
							cit.EndLine = h2.Line - 1
							break
						}
					}
				}
				break
			}
		}
		if !found {
			return invalid("heading %q is not in %s", r.Anchor, r.Path)
		}
	}
	if cit.Line != 0 || cit.EndLine != 0 {
		if cit.EndLine == 0 {
			cit.EndLine = cit.Line
		}
		if cit.Line < 1 || cit.EndLine < cit.Line || cit.EndLine > len(n.Lines) {
			return invalid("lines %d-%d are not in %s (%d lines)", r.Line, r.EndLine, r.Path, len(n.Lines))
		}
	}
	from, to := 1, len(n.Lines)
	if cit.Line > 0 {
		from, to = cit.Line, cit.EndLine
	}
	var parts []string
	for i := from; i <= to && len(parts) < 3; i++ {
		if t := strings.TrimSpace(n.Lines[i-1]); t != "" && t != "---" {
			parts = append(parts, t)
		}
	}
	cit.Snippet = truncRunes(strings.Join(parts, " "), 240)
	return cit, true
}
