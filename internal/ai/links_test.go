//go:build unix

package ai

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// TestRuntimeNeverWritesThroughALink: the AI cache (SQLite) and the AI
// audit log live in the vault's .loci; a link planted at either (or at
// .loci itself) is refused, and the file it points at is left alone.
func TestRuntimeNeverWritesThroughALink(t *testing.T) {
	for _, name := range []string{"ai-audit.jsonl", "ai-cache.db", "ai-cache.db-wal", ""} {
		t.Run(name, func(t *testing.T) {
			vault := t.TempDir()
			outside := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(outside, []byte("keep\n"), 0o644)
			loci := filepath.Join(vault, ".loci")
			if name == "" {
				os.Symlink(filepath.Dir(outside), loci) // .loci itself
			} else {
				os.MkdirAll(loci, 0o755)
				os.Symlink(outside, filepath.Join(loci, name))
			}
			rt := NewAt(Settings{Provider: "embeddings"}, safefs.At(loci, vault))
			defer rt.Close()
			rt.Record(Invocation{Operation: "ai_ask"})
			rt.CachePut(context.Background(), "k", "ai_ask", map[string]string{"a": "b"})
			_, err := rt.store()
			if name != "ai-audit.jsonl" && errs.Code(err) != errs.CodePathDenied {
				t.Errorf("store: %v, want path_denied", err)
			}
			if b, _ := os.ReadFile(outside); string(b) != "keep\n" {
				t.Fatalf("the outside file changed: %q", b)
			}
			ents, _ := os.ReadDir(filepath.Dir(outside))
			if len(ents) != 1 {
				t.Fatalf("files appeared outside: %v", ents)
			}
		})
	}
}
