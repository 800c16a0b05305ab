// Package logseq holds the operations on the Logseq graphs of a vault:
// reading pages and blocks as outlines (list_pages, get_page, get_block)
// and writing them (pages and blocks created, updated, deleted and moved)
// through the write pipeline, with the outline editor that keeps every
// line it does not change.
package logseq

import (
	"github.com/loci-dev/loci/internal/ops"
)

// Ops returns the Logseq operations, in registration order.
func Ops() []ops.Tool {
	return []ops.Tool{
		ListPages(),
		GetPage(),
		GetBlock(),
		CreatePage(),
		UpdatePage(),
		DeletePage(),
		CreateBlock(),
		UpdateBlock(),
		DeleteBlock(),
		MoveBlock(),
	}
}
