// Package write holds the operations that write notes: capture_note,
// edit_note, write_note, delete_note, relocate_note and improve_frontmatter
// plan a change and commit it through the write pipeline (ops.RunWrite:
// locks, etag guards, preview, undo journal, audit, re-index); undo
// reverts journaled changes and write_history lists them.
package write

import (
	"github.com/loci-dev/loci/internal/ops"
)

// Ops returns the note write operations, in registration order.
func Ops() []ops.Tool {
	return []ops.Tool{
		CaptureNote(),
		EditNote(),
		WriteNote(),
		DeleteNote(),
		ImproveFrontmatter(),
		RelocateNote(),
		SetTaskStatus(),
		Undo(),
		WriteHistory(),
	}
}
