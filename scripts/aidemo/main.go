// Command aidemo runs every AI operation on a copy of the demo vault
// against an in-process fake OpenAI-compatible server (internal/ai/aitest),
// through the real `loci` command line, and prints each command with its
// JSON. No network access, no API key: the fake's answers are scripted from
// the prompts loci sends (they cite the notes they were given, so the
// grounding checks pass, except where the demo shows a failure).
//
//	go run ./scripts/aidemo            (or bash scripts/ai-demo.sh)
package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/cli"
)

func main() {
	root, err := findRoot()
	if err != nil {
		fail(err)
	}
	tmp, err := os.MkdirTemp("", "loci-aidemo-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	vault := filepath.Join(tmp, "vault")
	if err := copyTree(filepath.Join(root, "demo", "vault"), vault); err != nil {
		fail(err)
	}
	fake := aitest.New()
	defer fake.Close()
	fake.Handler = reply

	loci := func(args ...string) {
		args = append(args, "--vault", vault)
		fmt.Printf("\n$ loci %s\n", strings.Join(quote(args[:len(args)-2]), " "))
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), args, &out, &errb)
		fmt.Print(out.String())
		if errb.Len() > 0 {
			fmt.Print(errb.String())
		}
		if code != 0 {
			fmt.Printf("(exit %d)\n", code)
		}
	}

	fmt.Println("# AI is off until a provider is configured: nothing is called, ai_unavailable.")
	loci("ai", "status", "--format", "json")
	loci("ai", "ask", "What is Project Atlas?", "--format", "json")

	fmt.Printf("\n# Configure a chat provider (here: a fake OpenAI-compatible server at %s).\n", fake.BaseURL())
	cfg := fmt.Sprintf(`ai:
  provider: openai-compatible
  base_url: %s
  model: fake-model
  daily_cost_usd: 1.00
  deny_globs: ["Inbox/**"]
  prices:
    fake-model: {input_per_mtok: 0.15, output_per_mtok: 0.60}
`, fake.BaseURL())
	if err := os.WriteFile(filepath.Join(vault, ".loci", "config.yaml"), []byte(cfg), 0o644); err != nil {
		fail(err)
	}
	fmt.Print("$ cat .loci/config.yaml\n" + cfg)

	loci("ai", "status", "--format", "json")
	loci("ai", "toc", "Projects/Project Atlas.md", "--format", "json")
	loci("ai", "toc", "--mode", "moc", "--glob", "**", "--group-by", "folder", "--max-notes", "8", "--format", "json")
	loci("ai", "ask", "What are the goals of Project Atlas?", "--format", "json")
	fmt.Println("\n# The same question again: served from .loci/ai-cache.db at no cost (warning ai_cache_hit).")
	loci("ai", "ask", "What are the goals of Project Atlas?", "--format", "json")
	fmt.Println("\n# Streaming: NDJSON events, the last line is the same result.")
	loci("ai", "ask", "Who is Ada Lovelace?", "--stream")
	loci("ai", "ask", "Who won the 1998 world cup?", "--paths", "Welcome.md", "--format", "json")
	loci("ai", "summarize", "--paths", "Projects/Project Atlas.md", "--style", "bullets", "--format", "json")
	loci("ai", "relate", "Projects/Project Atlas.md", "--limit", "3", "--propose-links", "--format", "json")
	loci("ai", "tag", "--paths", "Projects/Project Atlas.md", "--format", "json")
	loci("ai", "metadata", "--paths", "People/Ada Lovelace.md", "--fields", `[{"name": "role", "type": "string"}, {"name": "status", "type": "enum", "enum": ["active", "archived"]}]`, "--format", "json")
	loci("ai", "extract", "--paths", "People/Ada Lovelace.md", "--schema", `{"type": "object", "properties": {"name": {"type": "string"}, "known_for": {"type": "string"}}, "required": ["name"]}`, "--destination", "frontmatter", "--key", "person", "--format", "json")
	fmt.Println("\n# Grounding: a model that cites lines that do not exist gets nothing through (ai_grounding_failed).")
	loci("ai", "ask", "BAD-CITATIONS: what is in the welcome note?", "--paths", "Welcome.md", "--format", "json")
	fmt.Printf("\n# The fake received %d chat completion requests.\n", fake.Calls())
}

// reply scripts the fake model from the prompt loci sent.
func reply(req aitest.Request) aitest.Reply {
	notes := req.Notes()
	cite := func(n aitest.PromptNote) map[string]any {
		l := n.First
		if l == 0 {
			l = 1
		}
		return map[string]any{"path": n.Path, "etag": n.Etag, "line": l, "end_line": l}
	}
	text := func(n aitest.PromptNote) string {
		return strings.TrimLeft(n.Lines[n.First], "-* ")
	}
	all := ""
	for _, m := range req.Messages {
		all += m.Content
	}
	switch req.Schema() {
	case "answer":
		if len(notes) == 0 || strings.Contains(all, "world cup") {
			return aitest.Reply{Content: `{"supported": false, "answer": "", "confidence": 0, "citations": []}`}
		}
		n := notes[0]
		c := cite(n)
		if strings.Contains(all, "BAD-CITATIONS") {
			c["line"], c["end_line"] = 999, 1000
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"supported": true, "confidence": 0.8,
			"answer": fmt.Sprintf("According to %s: %s", n.Title, text(n)), "citations": []any{c},
			"follow_ups": []string{"What links to " + n.Title + "?"}}), ChunkDelay: 0}
	case "summary":
		var kps []any
		for _, n := range notes {
			kps = append(kps, map[string]any{"text": text(n), "citations": []any{cite(n)}})
		}
		kps = append(kps, map[string]any{"text": "A claim the notes do not support.", "citations": []any{}})
		return aitest.Reply{Content: aitest.JSON(map[string]any{"tldr": "A summary of " + notes[0].Title + ".", "key_points": kps,
			"open_questions": []string{"What is the next milestone?"}, "outline": []string{notes[0].Title}})}
	case "summary_reduce":
		return aitest.Reply{Content: `{"tldr": "Merged summary.", "open_questions": [], "outline": []}`}
	case "relations":
		var rs []any
		labels := []string{"same_topic", "extends", "depends_on"}
		for i, n := range notes[1:] {
			rs = append(rs, map[string]any{"path": n.Path, "label": labels[i%len(labels)], "confidence": 0.7,
				"rationale": "Both notes discuss " + n.Title + ".", "citations": []any{cite(n)}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"relations": rs})}
	case "tags":
		var ns []any
		for _, n := range notes {
			ns = append(ns, map[string]any{"path": n.Path, "tags": []any{
				map[string]any{"tag": "project", "confidence": 0.9, "rationale": "it describes a project", "citations": []any{cite(n)}},
				map[string]any{"tag": "knowledge management", "confidence": 0.7, "rationale": "topic", "citations": []any{cite(n)}},
				map[string]any{"tag": "maybe", "confidence": 0.2, "citations": []any{cite(n)}},
			}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": ns})}
	case "metadata":
		var ns []any
		for _, n := range notes {
			ns = append(ns, map[string]any{"path": n.Path, "fields": []any{
				map[string]any{"name": "role", "value": "mathematician", "citations": []any{cite(n)}},
				map[string]any{"name": "status", "value": "legendary", "citations": []any{cite(n)}},
			}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": ns})}
	case "extract":
		var rs []any
		for _, n := range notes {
			rs = append(rs, map[string]any{"path": n.Path, "data": map[string]any{"name": n.Title, "known_for": text(n)}, "citations": []any{cite(n)}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"records": rs})}
	case "moc_groups":
		var ps []string
		for _, n := range notes {
			ps = append(ps, n.Path)
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"groups": []any{map[string]any{"name": "Everything", "paths": ps}}})}
	}
	return aitest.Reply{Status: 400, Content: "unknown request"}
}

func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"{}[]*?") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func findRoot() (string, error) {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run from inside the loci repository")
		}
		dir = parent
	}
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".loci" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "aidemo:", err)
	os.Exit(1)
}
