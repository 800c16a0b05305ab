package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts are ready-made instructions a user can pick in their client; they
// steer the model to loci's tools and to citing what it read.

func (s *Server) addPrompts() {
	_, hasContext := s.reg.Get("get_context")
	find := "search_notes"
	if hasContext {
		find = "get_context (or search_notes for exact words and filters)"
	}

	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "answer_from_notes",
		Title:       "Answer from my notes",
		Description: "Answer a question from the vault's notes only, citing path and line for every claim.",
		Arguments: []*mcp.PromptArgument{
			{Name: "question", Title: "Question", Description: "What you want to know", Required: true},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		q := strings.TrimSpace(req.Params.Arguments["question"])
		if q == "" {
			return nil, missingArg("question")
		}
		text := fmt.Sprintf(`Answer my question using my notes, which you can reach through the loci tools.

1. Look for relevant notes with %s. If the first try finds little, search again with synonyms, related terms or a shorter query.
2. Open the most promising notes with read_note. Read just the part you need (a heading, or start_line/end_line around the line a result points to) rather than whole long notes.
3. Answer briefly and plainly. Back each statement with a citation in the form [path:line] naming the note and the line you relied on.
4. If the notes do not answer the question, or only partly, say so and say what is missing. Do not fill gaps from general knowledge without marking it as such.

Question: %s`, find, q)
		return &mcp.GetPromptResult{
			Description: "Answer from notes, with citations",
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	})

	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "find_related",
		Title:       "Find related notes",
		Description: "Find the notes connected to one note: those it already links with, and those it probably should.",
		Arguments: []*mcp.PromptArgument{
			{Name: "note", Title: "Note", Description: "Vault-relative path (e.g. Projects/Alpha.md) or the note's title", Required: true},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		note := strings.TrimSpace(req.Params.Arguments["note"])
		if note == "" {
			return nil, missingArg("note")
		}
		text := fmt.Sprintf(`Find the notes related to %q in my vault, using the loci tools.

1. If %q is not a path ending in .md, find the note with search_notes first and use the path of the best match.
2. Read it with read_note: note its main subjects, distinctive terms, tags and frontmatter.
3. Call get_links on it for outgoing links, backlinks and typed links.
4. Run search_notes with its distinctive terms and tags to find notes on the same subjects that are not linked yet.
5. Report two short lists, each entry with the note's path and one line on how it relates:
   - Already connected (say how: link, backlink, typed link and its key, embed).
   - Probably related but not linked — suggest where a link would help, citing [path:line].
Do not change any note.`, note, note)
		return &mcp.GetPromptResult{
			Description: "Related notes of " + note,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	})
}

func missingArg(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing required argument " + name}
}

// complete suggests note paths for the find_related prompt's "note" argument
// and for the note template's "path" variable.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	vaultName := ""
	if len(s.env.Vaults) > 0 {
		vaultName = s.env.Vaults[0].Name
	}
	switch {
	case ref.Type == "ref/prompt" && ref.Name == "find_related" && arg.Name == "note":
	case ref.Type == "ref/resource" && ref.URI == uriTemplate && arg.Name == "path":
		if req.Params.Context != nil {
			if h := req.Params.Context.Arguments["vault"]; h != "" {
				if vh := s.res.byHost[h]; vh != nil {
					vaultName = vh.Name
				}
			}
		}
	case ref.Type == "ref/resource" && ref.URI == uriTemplate && arg.Name == "vault":
		var hosts []string
		p := principalOf(req.Extra)
		for _, vh := range s.env.Vaults {
			if !p.MayUse(vh.Name) {
				continue // a principal is not told which other vaults exist
			}
			if h := s.res.host[vh.Name]; strings.HasPrefix(strings.ToLower(h), strings.ToLower(arg.Value)) {
				hosts = append(hosts, h)
			}
		}
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: nonNil(hosts), Total: len(hosts)}}, nil
	default:
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	vh, err := s.env.Vault(vaultName)
	if err != nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	const maxValues = 100 // the spec's cap per response
	paths, more, err := completePaths(ctx, vh, principalOf(req.Extra), arg.Value, maxValues)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot complete: " + err.Error()}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: nonNil(paths), HasMore: more}}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
