package read

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// IndexStatusIn is the input of index_status.
type IndexStatusIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// IndexStatusOut is the output of index_status.
type IndexStatusOut struct {
	index.Status
	Sync ops.SyncState `json:"sync" jsonschema:"background sync of this vault: running, last sync time and last error"`
	// Watcher is the file watcher's state (absent when none runs).
	Watcher *ops.WatchState `json:"watcher,omitempty" jsonschema:"the file watcher (loci serve, loci mcp): state, heartbeat, queue length, batches; absent when no watcher runs"`
	// Vaults lists the served vaults when there are several.
	Vaults []VaultSummary `json:"vaults,omitempty" jsonschema:"the served vaults, when there are several (pass a name as vault to pick one)"`
}

// VaultSummary names one served vault.
type VaultSummary struct {
	Name    string `json:"name" jsonschema:"vault name, for the vault input of every operation"`
	Root    string `json:"root,omitempty" jsonschema:"absolute folder of the vault (shown to the owner only)"`
	Kind    string `json:"kind" jsonschema:"obsidian or logseq"`
	Default bool   `json:"default" jsonschema:"true for the vault used when none is named"`
}

// IndexStatus is the index_status operation.
func IndexStatus() ops.Def[IndexStatusIn, IndexStatusOut] {
	return ops.Def[IndexStatusIn, IndexStatusOut]{
		Name:  "index_status",
		Title: "Index status",
		Description: "The state of the vault's index: counts of notes, chunks, links (and unresolved ones), tags, tasks and blocks; last index times; schema version; " +
			"files that failed to index and notes with invalid frontmatter, with reasons; the background sync state; and, when several vaults are served, their names.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "status", Text: textStatus, Short: "Index state: counts, last index times, failures and why"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{}`,
		Handler: func(ctx context.Context, env *ops.Env, in *IndexStatusIn) (*IndexStatusOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			// With a read fence, the counts are over the notes it shows,
			// the failures listed are those it would show, and the index's
			// size on disk (which would tell how much it hides) is 0.
			fence := env.ReadFence(ctx, vh)
			hidden, err := fence.Hidden(ctx, vh)
			if err != nil {
				return nil, err
			}
			st, err := vh.Index.Status(ctx, hidden...)
			if err != nil {
				return nil, err
			}
			st.Failures = ops.Visible(fence, st.Failures, func(f index.Failure) string { return f.Path })
			if fence.Active() {
				st.IndexBytes = 0
			}
			// A principal other than the owner (an agent over HTTP) is not
			// told where the server keeps its files, nor which vaults it
			// may not use.
			p := ops.CallerFrom(ctx).Principal
			local := p.IsOwner()
			if !local {
				st.Vault, st.IndexPath = vh.Name, ""
			}
			out := &IndexStatusOut{Status: *st, Sync: vh.State(), Watcher: vh.WatchState()}
			if len(env.Vaults) > 1 {
				for i, v := range env.Vaults {
					if !p.MayUse(v.Name) {
						continue
					}
					vs := VaultSummary{Name: v.Name, Root: v.Vault.Root, Kind: string(v.Vault.Kind), Default: i == 0}
					if !local {
						vs.Root = ""
					}
					out.Vaults = append(out.Vaults, vs)
				}
			}
			return out, nil
		},
	}
}

func orNever(s string) string {
	if s == "" {
		return "never"
	}
	return s
}

// vectorsLine renders the embedding part of index_status.
func vectorsLine(v index.VectorStatus) string {
	var b strings.Builder
	switch {
	case v.Model == "":
		fmt.Fprintf(&b, "vectors:      none (embedder: %s)\n", v.Configured)
	default:
		fmt.Fprintf(&b, "vectors:      %d sections, %s/%s (%d dims), %.1f MB in memory\n", v.Chunks, v.Provider, v.Model, v.Dims, float64(v.MemoryBytes)/1e6)
	}
	if v.Mismatch {
		fmt.Fprintf(&b, "              the configured embedder is %s: run `loci index --reset`\n", v.Configured)
	}
	if v.ConfigError != "" {
		fmt.Fprintf(&b, "              embedding settings: %s\n", v.ConfigError)
	}
	if v.Configured != "none" && !v.Complete && v.Total > 0 {
		fmt.Fprintf(&b, "embedding:    %d of %d sections and titles (%d pending)", v.Embedded, v.Total, v.Pending)
		if j := v.Job; j != nil && j.Running {
			fmt.Fprintf(&b, ", running, %d/%d this run", j.Done, j.Todo)
			if j.Rate > 0 {
				fmt.Fprintf(&b, " at %.1f/s", j.Rate)
			}
		}
		b.WriteString("\n")
	}
	if j := v.Job; j != nil && j.LastError != "" {
		fmt.Fprintf(&b, "embedder:     failed: %s", j.LastError)
		if !j.NextRetryAt.IsZero() {
			fmt.Fprintf(&b, " (retry after %s)", j.NextRetryAt.Format(time.RFC3339))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "search mode:  %s by default\n", v.DefaultMode)
	return b.String()
}

func textStatus(o any) string {
	out := o.(*IndexStatusOut)
	s := &out.Status
	var b strings.Builder
	fmt.Fprintf(&b, "vault:        %s (%s)\n", s.Vault, s.VaultKind)
	fmt.Fprintf(&b, "index:        %s (schema v%d, %.1f MB)\n", s.IndexPath, s.SchemaVersion, float64(s.IndexBytes)/1e6)
	fmt.Fprintf(&b, "notes:        %d\nchunks:       %d\nlinks:        %d (%d unresolved)\ntags:         %d\ntasks:        %d\nblocks:       %d\n",
		s.Notes, s.Chunks, s.Links, s.UnresolvedLinks, s.Tags, s.Tasks, s.Blocks)
	fmt.Fprintf(&b, "last index:   %s\nlast full:    %s\n", orNever(s.LastIndexAt), orNever(s.LastFullIndexAt))
	b.WriteString(vectorsLine(s.Vectors))
	switch {
	case out.Sync.Running:
		b.WriteString("sync:         running\n")
	case out.Sync.LastError != "":
		fmt.Fprintf(&b, "sync:         last run failed: %s\n", out.Sync.LastError)
	}
	if w := out.Watcher; w != nil {
		fmt.Fprintf(&b, "watcher:      %s, %d folders, queue %d, %d batches, heartbeat %s\n", w.State, w.Dirs, w.Queue, w.Batches, w.Heartbeat.Format(time.RFC3339))
		if w.LastError != "" {
			fmt.Fprintf(&b, "watcher err:  %s\n", w.LastError)
		}
	}
	if len(out.Vaults) > 1 {
		b.WriteString("vaults:\n")
		for _, v := range out.Vaults {
			def := ""
			if v.Default {
				def = "  (default)"
			}
			fmt.Fprintf(&b, "  %s  %s  %s%s\n", v.Name, v.Kind, v.Root, def)
		}
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "failed files (%d):\n", len(s.Failures))
		for _, f := range s.Failures {
			fmt.Fprintf(&b, "  %s: %s\n", f.Path, f.Error)
		}
	}
	if len(s.FrontmatterIssue) > 0 {
		fmt.Fprintf(&b, "invalid frontmatter (%d, indexed anyway):\n", len(s.FrontmatterIssue))
		for _, f := range s.FrontmatterIssue {
			fmt.Fprintf(&b, "  %s: %s\n", f.Path, f.Error)
		}
	}
	return b.String()
}
