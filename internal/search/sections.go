package search

import (
	"context"
	"database/sql"
	"errors"

	"github.com/loci-dev/loci/internal/errs"
)

// Result grouping (Query.GroupBy).
const (
	GroupNote    = "note"
	GroupSection = "section"
)

// checkGroupBy validates q.GroupBy. Graph expansion adds whole notes, so it
// is not offered by section.
func checkGroupBy(q Query) error {
	switch q.GroupBy {
	case "", GroupNote:
	case GroupSection:
		if q.ExpandLinks {
			return errs.New(errs.CodeInvalidInput, "expand_links works with group_by note only").With("group_by", q.GroupBy)
		}
	default:
		return errs.New(errs.CodeInvalidInput, "unknown group_by %q (note, section)", q.GroupBy).With("group_by", q.GroupBy)
	}
	return nil
}

// blockUUIDs sets, with group_by section, each result's BlockUUID: the id::
// of the Logseq block its section starts with, when it has one.
func (s *Searcher) blockUUIDs(ctx context.Context, q Query, rs []Result) error {
	if q.GroupBy != GroupSection {
		return nil
	}
	for i := range rs {
		var u string
		err := s.queryRow(ctx, `SELECT uuid FROM blocks WHERE note_id = ? AND line = ? AND uuid IS NOT NULL ORDER BY seq LIMIT 1`,
			rs[i].NoteID, rs[i].Line).Scan(&u)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		rs[i].BlockUUID = u
	}
	return nil
}
