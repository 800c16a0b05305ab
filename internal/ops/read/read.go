// Package read holds the operations that read and navigate a vault: search
// and context, reading and resolving notes, links, tags, frontmatter, the
// folder tree, recent changes, similar notes and the index status. None of
// them writes.
package read

import (
	"github.com/loci-dev/loci/internal/ops"
)

// Ops returns the read and navigation operations, in registration
// order.
func Ops() []ops.Tool {
	return []ops.Tool{
		FindSimilar(),
		SearchNotes(),
		ReadNote(),
		GetLinks(),
		GetGraph(),
		ListTags(),
		IndexStatus(),
		GetContext(),
		ResolveNote(),
		RecentNotes(),
		FindBrokenLinks(),
		SuggestTypedLinks(),
		GetVaultTree(),
		ListFrontmatterKeys(),
		ListFrontmatterValues(),
		FrontmatterValidate(),
		InspectACL(),
		ListTasks(),
		GetCapabilities(),
		Query(),
	}
}
